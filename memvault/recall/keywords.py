"""BM25 keyword scores over a sparse document-term matrix (no database extension needed).

The weights are computed once when the index is built (``k1``, ``b`` as usual);
a query's score per document is the sum of the columns of its terms, one sparse
column slice. Documents added later are scored with the same term statistics
(a term the index never saw gets the rarest term's weight).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import sparse

from memvault.recall.text import term_frame, terms

K1 = 1.2
B = 0.75


@dataclass
class TermStats:
    """What BM25 needs to know about the whole collection."""

    vocab: dict[str, int]
    idf: np.ndarray
    avgdl: float
    docs: int

    def idf_of(self, term: str) -> float:
        col = self.vocab.get(term)
        if col is not None:
            return float(self.idf[col])
        return float(np.log(1 + (self.docs + 0.5) / 0.5))  # never seen: as rare as can be


@dataclass
class KeywordIndex:
    """BM25 weights of ``n`` documents as a CSC matrix (documents x terms)."""

    stats: TermStats
    matrix: sparse.csc_matrix
    extra_terms: dict[str, int]

    @classmethod
    def build(
        cls, ids: pl.Series, texts: pl.Series, stats: TermStats | None = None
    ) -> KeywordIndex:
        """Index ``texts``; with ``stats`` (a main index's), score with those statistics."""
        tf = term_frame(ids, texts)
        n = len(ids)
        lengths = np.zeros(n, dtype=np.float64)
        if tf.height:
            dl = tf.group_by("doc").agg(pl.col("tf").sum())
            lengths[dl["doc"].to_numpy()] = dl["tf"].to_numpy()
        if stats is None:
            df = tf.group_by("term").agg(df=pl.len()).sort("term")
            vocab = {t: i for i, t in enumerate(df["term"].to_list())}
            dfs = df["df"].to_numpy().astype(np.float64)
            idf = np.log(1 + (n - dfs + 0.5) / (dfs + 0.5))
            stats = TermStats(vocab, idf, float(lengths.mean()) if n else 1.0, n)
        vocab_frame = pl.DataFrame(
            {"term": list(stats.vocab), "col": np.arange(len(stats.vocab), dtype=np.int64)}
        )
        tf = tf.join(vocab_frame, on="term", how="left")
        unseen = tf.filter(pl.col("col").is_null())["term"].unique().sort().to_list()
        extra = {t: len(stats.vocab) + i for i, t in enumerate(unseen)}
        if extra:
            tf = tf.with_columns(
                pl.col("col").fill_null(pl.col("term").replace_strict(extra, default=None))
            )
        idf_all = np.concatenate([stats.idf, [stats.idf_of(t) for t in unseen]])
        cols = tf["col"].to_numpy()
        docs = tf["doc"].to_numpy()
        f = tf["tf"].to_numpy().astype(np.float64)
        norm = K1 * (1 - B + B * lengths[docs] / max(stats.avgdl, 1e-9))
        weights = idf_all[cols] * f * (K1 + 1) / (f + norm)
        width = len(stats.vocab) + len(extra)
        matrix = sparse.csc_matrix((weights, (docs, cols)), shape=(n, max(width, 1)))
        return cls(stats, matrix, extra)

    def score(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros when no term matches)."""
        cols = sorted(
            {
                c
                for t in terms(query)
                if (c := self.stats.vocab.get(t, self.extra_terms.get(t))) is not None
            }
        )
        if not cols:
            return np.zeros(self.matrix.shape[0], dtype=np.float64)
        return np.asarray(self.matrix[:, cols].sum(axis=1)).ravel()
