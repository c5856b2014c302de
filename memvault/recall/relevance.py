"""Whether anything matched: a recall's sign that its best memories do not answer the query.

A search always returns its best blocks, however poor: "zebra quantum paella" got ten
memories scored as confidently as a real question's. The ranking's scores cannot tell (they
are standard scores: the best of nothing still stands out), so the best few hits are asked
two plain questions:

* **words**: how much of the query's evidence a hit holds: the idf of the query's (stemmed,
  stop words dropped) terms found in its text over the idf of all of them (a query about a
  word the store has never seen has that word's evidence missing everywhere);
* **meaning**: the cosine of the hit's vector and the query's (the query without the people
  it names, as the search embeds it).

The match is weak when no hit among the first ``TOP`` reaches ``MIN_WORDS`` of the words nor
the model's cosine floor. The floors were set on the generated recall set
(tests/perf/recall_eval, with MiniLM): see docs/recall.md for the measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memvault.recall.keywords import KeywordIndex, tokenize

#: The hits looked at (the first ones, as ranked).
TOP = 5
#: The share of the query's word evidence one hit must hold for a match.
MIN_WORDS = 0.3
#: The cosine a hit's vector must reach for a match, by embedding model (the prefix of its
#: name); a model not listed is judged by its words alone, unless ``DEFAULT_MIN_COSINE``.
#: MiniLM: 1.3% of the generated set's answerable questions flagged, 90.6% of nonsense
#: queries; hashing vectors (lexical): 3.9% and 45.6% (docs/recall.md).
MIN_COSINE: dict[str, float] = {"all-MiniLM-L6-v2": 0.35, "hashing-": 0.2}
#: The floor for a model without its own (None: its cosines are not read).
DEFAULT_MIN_COSINE: float | None = None


@dataclass(frozen=True)
class Evidence:
    """The most any of the first hits holds: of the query's words, and of its meaning."""

    words: float
    meaning: float | None

    def weak(self, model: str) -> bool:
        """Neither the words nor the meaning of any first hit match the query well."""
        if self.words >= MIN_WORDS:
            return False
        floor = min_cosine(model)
        return floor is None or self.meaning is None or self.meaning < floor


def min_cosine(model: str) -> float | None:
    for prefix, floor in MIN_COSINE.items():
        if model.startswith(prefix):
            return floor
    return DEFAULT_MIN_COSINE


def word_share(keywords: KeywordIndex, query: str, texts: Sequence[str]) -> float:
    """The largest share of the query's idf any of ``texts`` holds (0 for a query of stop
    words only: nothing to match)."""
    terms = sorted(set(tokenize([query])[0]))
    if not terms or not texts:
        return 0.0
    idf = np.asarray([keywords.stats.idf_of(t) for t in terms], dtype=np.float64)
    total = float(idf.sum())
    best = 0.0
    for found in tokenize(list(texts)):
        held = set(found)
        share = float(sum(w for t, w in zip(terms, idf.tolist(), strict=True) if t in held))
        best = max(best, share / total if total else 0.0)
    return best


def evidence(
    keywords: KeywordIndex,
    query: str,
    texts: Sequence[str],
    vectors: np.ndarray | None,
    query_vector: np.ndarray | None,
) -> Evidence:
    """The evidence of the first hits (``texts``, their ``vectors`` row for row, a zero row
    for a hit without one) for ``query``."""
    meaning = None
    if query_vector is not None and vectors is not None and len(vectors):
        meaning = float(np.max(vectors @ query_vector))
    return Evidence(word_share(keywords, query, texts), meaning)
