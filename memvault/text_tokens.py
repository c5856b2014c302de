"""Words of a text, and the words too common to say anything: one home for both.

Every part of memvault that cuts text into words outside keyword search takes them from
here, so two parts never disagree about what a word is:

* :func:`words` — lower-case runs of ASCII letters and digits. Recall matches entity
  names by them, the gardener's survey matches tool names and descriptions by them, and
  the profile matches stated attitudes against the owner's words by them.
* :func:`folded_words` — case-folded words of any script, apostrophes kept ("don't"):
  what the gardener compares two memory texts by (near-duplicates, what a split kept), so
  a memory written in Greek or with accents is compared on all its words.

* :func:`stems` — case-folded words of any script, Snowball-stemmed (the stemmer keyword
  search uses, :func:`memvault.recall.keywords.tokenize`): what the grounded-text check
  compares a model's text with its sources by ("moved" is "moves", "Globex" is "globex").
* :func:`normalized` (and its polars twin :func:`normalized_expr`) — a value's wording
  reduced to its words of any script, NFKC and lower case, one space between: what makes
  two objects of a fact the same wording (the temporal timeline, conflict resolution, the
  lint, the gardener's stale facts); :func:`normalized_words` are its words.
* :data:`NAME_WORD` and :data:`NUMBER` — words and numbers as written, inner punctuation
  kept ("O'Neill", "Node.js", "2024-03-05"): what the grounded-text check finds names and
  numbers by.
* :data:`ENTITY_TOKEN` — words as entity extraction reads them, technical names whole
  ("C++", "C#", ".NET", "acme-api", "3.12").

:func:`singular` is the one plural rule ("libraries" → "library", "editors" → "editor"):
conflict resolution folds an object's words by it, the gardener's survey a tool's words.

Keyword search (BM25) stems its words with :func:`new_stemmer` in its own tokenizer
(:func:`memvault.recall.keywords.tokenize`), dropping :data:`STOPWORDS` too.

:data:`STOPWORDS` is the one list of English function words: they say nothing about
which memory answers a query (recall) nor which thing a fact's object is (the temporal
timeline). Entity extraction drops more than these (greetings, imperative verbs, days,
months) from what can be a name; it extends this list (:data:`memvault.extract.STOPWORDS`).
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from typing import TYPE_CHECKING

import Stemmer

if TYPE_CHECKING:
    import polars as pl

#: A word for :func:`words`: a run of ASCII letters and digits (after lower-casing).
WORD_PATTERN = r"[a-z0-9]+"
_WORD = re.compile(WORD_PATTERN)
#: A word for :func:`folded_words`, as written: letters and digits of any script, apostrophes.
ANY_SCRIPT_WORD = re.compile(r"[\w']+", re.UNICODE)
#: A word for :func:`stems`: letters of any script, apostrophes inside ("don't", "o'neill");
#: digits, underscores and other marks cut words ("thought_about_most" is three).
LETTER_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)
#: What :func:`normalized` turns into a space: runs of anything but letters and digits.
_NON_WORD = re.compile(r"[^\w]+|_+")
#: A word as written, for names: starts with a letter of any script, may hold apostrophes,
#: dots and hyphens inside ("O'Neill", "Node.js", "Jean-Luc"), ends with a letter or digit.
NAME_WORD = re.compile(r"[^\W\d_][\w'’.-]*[\w]|[^\W\d_]", re.UNICODE)
#: A number as written, dates and times included ("2024-03-05", "1.5", "10:30").
NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
#: A thousands separator inside a number ("1,200"), removed before :data:`NUMBER` reads it.
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
#: A word as entity extraction reads it: letters/digits with inner "." or "-" ("Node.js",
#: "acme-api", "3.12"), trailing "+"/"#" ("C++", "C#") and an optional leading "." (".NET").
ENTITY_TOKEN = re.compile(r"(?:(?<![\w.])\.)?\w[\w+#]*(?:[.\-]\w[\w+#]*)*")
#: What :func:`stems` writes for a negation folded into a word ("didn't" → "did", NOT).
NOT = "not"

#: English function words: too common to say which memory or which thing a text is about.
STOPWORDS: frozenset[str] = frozenset((
    "a", "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "being",
    "by", "can", "could", "did", "do", "does", "every", "for", "from", "had", "has", "have",
    "how", "i", "in", "into", "is", "it", "its", "just", "less", "me", "more", "most", "my",
    "no", "not", "of", "on", "or", "our", "over", "should", "so", "some", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "to", "under", "us",
    "very", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with",
    "you", "your",
))  # fmt: skip


def words(text: str) -> list[str]:
    """Every ASCII word of ``text``, lower-cased, in order (stop words kept: names are
    matched on these)."""
    return _WORD.findall(text.lower())


def folded_words(text: str) -> list[str]:
    """Every word of ``text`` in any script, case-folded, in order, apostrophes kept."""
    return [t.casefold() for t in ANY_SCRIPT_WORD.findall(text)]


def new_stemmer() -> Stemmer.Stemmer:
    """The English Snowball stemmer (PyStemmer) recall and the grounded-text check share; one
    per thread (a stemmer object is not safe to share between threads)."""
    return Stemmer.Stemmer("english")


_LOCAL = threading.local()


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """One case-folded word, stemmed ("Moved" → "move"; cached: a night stems the same words
    thousands of times)."""
    stemmer = getattr(_LOCAL, "stemmer", None)
    if stemmer is None:
        stemmer = _LOCAL.stemmer = new_stemmer()
    return str(stemmer.stemWord(word.casefold()))


def stemmed(text: str) -> list[tuple[str, str]]:
    """The words of ``text`` in order, each as written and case-folded and stemmed, stop words
    kept. A possessive ``'s`` is dropped ("Ada's" is "ada"); a negation written into a word
    stands as two ("didn't" → "did", :data:`NOT`), so a check can see it."""
    out: list[tuple[str, str]] = []
    for word in LETTER_WORD.findall(text):
        folded = word.casefold().replace("’", "'")
        if folded.endswith("'s"):
            folded = folded[:-2]
        if folded.endswith("n't"):
            if len(folded) > 3:
                out.append((word, stem(folded[:-3])))
            out.append((word, NOT))
            continue
        out.append((word, stem(folded)))
    return out


def stems(text: str) -> list[str]:
    """The stems of :func:`stemmed`, in order."""
    return [s for _, s in stemmed(text)]


def normalized(text: str) -> str:
    """``text`` as compared for sameness of wording: NFKC, lower case, every run of
    non-letters/digits (underscores too) one space, trimmed ("Acme, Inc." → "acme inc")."""
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_NON_WORD.sub(" ", text).split())


def normalized_words(text: str) -> list[str]:
    """The words of :func:`normalized` ``text``, in order."""
    return normalized(text).split()


def normalized_expr(column: str) -> pl.Expr:
    """The polars twin of :func:`normalized`, for a whole column at once."""
    import polars as pl  # here: most users of this module never touch a frame

    return (
        pl.col(column)
        .str.normalize("NFKC")
        .str.to_lowercase()
        .str.replace_all(r"[^\p{L}\p{N}]+", " ")
        .str.strip_chars()
    )


def singular(word: str) -> str:
    """A plain English plural folded to its singular ("libraries" → "library", "editors" →
    "editor"); a word ending in "ss", "us" or "is" is left alone ("class", "status",
    "analysis")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
