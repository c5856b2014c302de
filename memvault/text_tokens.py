"""Words of a text, and the words too common to say anything: one home for both.

Every part of memvault that cuts text into words outside keyword search takes them from
here, so two parts never disagree about what a word is:

* :func:`words` — lower-case runs of ASCII letters and digits. Recall matches entity
  names by them, the gardener's survey matches tool names and descriptions by them, and
  the profile matches stated attitudes against the owner's words by them.
* :func:`folded_words` — case-folded words of any script, apostrophes kept ("don't"):
  what the gardener compares two memory texts by (near-duplicates, what a split kept), so
  a memory written in Greek or with accents is compared on all its words.

Keyword search (BM25) stems its words with its own tokenizer
(:func:`memvault.recall.keywords.tokenize`), dropping :data:`STOPWORDS` too.

:data:`STOPWORDS` is the one list of English function words: they say nothing about
which memory answers a query (recall) nor which thing a fact's object is (the temporal
timeline). Entity extraction drops more than these (greetings, imperative verbs, days,
months) from what can be a name; it extends this list (:data:`memvault.extract.STOPWORDS`).
"""

from __future__ import annotations

import re

#: A word for :func:`words`: a run of ASCII letters and digits (after lower-casing).
WORD_PATTERN = r"[a-z0-9]+"
_WORD = re.compile(WORD_PATTERN)
#: A word for :func:`folded_words`, as written: letters and digits of any script, apostrophes.
ANY_SCRIPT_WORD = re.compile(r"[\w']+", re.UNICODE)

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
