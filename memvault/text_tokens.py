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

import Stemmer

#: A word for :func:`words`: a run of ASCII letters and digits (after lower-casing).
WORD_PATTERN = r"[a-z0-9]+"
_WORD = re.compile(WORD_PATTERN)
#: A word for :func:`folded_words`, as written: letters and digits of any script, apostrophes.
ANY_SCRIPT_WORD = re.compile(r"[\w']+", re.UNICODE)
#: A word for :func:`stems`: letters of any script, apostrophes inside ("don't", "o'neill");
#: digits, underscores and other marks cut words ("thought_about_most" is three).
LETTER_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)
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
