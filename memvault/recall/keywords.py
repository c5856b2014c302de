"""BM25 keyword scores with bm25s, over Snowball-stemmed words (PyStemmer).

Stemming lets a query find another form of the same word ("adopted" and "adopt",
"children" and "child"); English stop words carry no evidence and are dropped. The main
segment is a ``bm25s.BM25`` index (Lucene's BM25, ``k1``, ``b`` as usual). Documents added
later (the search index's small second segment) are scored with the main segment's term
statistics — its document frequencies and mean length — so a new block scores as it will
after the next rebuild (a word the main segment never saw counts as the rarest).
"""

from __future__ import annotations

from dataclasses import dataclass

import bm25s
import numpy as np
import polars as pl
from bm25s.stopwords import STOPWORDS_EN
from scipy import sparse

from memvault.recall.text import STOPWORDS
from memvault.text_tokens import new_stemmer

K1 = 1.2
B = 0.75
#: Words of two or more letters, and numbers of any length ("5 May 2023").
TOKEN_PATTERN = r"(?u)\b(?:\w\w+|\d)\b"
_STEMMER = new_stemmer()
#: Lucene's English stop words and the question words recall queries are full of.
_STOP = sorted(STOPWORDS | set(STOPWORDS_EN))


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased, stop words dropped, stemmed: the same for blocks and queries."""
    if not texts:
        return []
    out = bm25s.tokenize(
        texts,
        token_pattern=TOKEN_PATTERN,
        stopwords=_STOP,
        stemmer=_STEMMER,
        return_ids=False,
        show_progress=False,
        allow_empty=False,
    )
    return [[t for t in doc if t] for doc in out]


@dataclass
class TermStats:
    """What BM25 needs to know about the main segment: document frequencies and mean length."""

    vocab: dict[str, int]
    df: np.ndarray
    avgdl: float
    docs: int

    def idf(self, df: np.ndarray) -> np.ndarray:
        """Lucene's idf (always positive), the one bm25s uses for ``method="lucene"``."""
        return np.log(1 + (self.docs - df + 0.5) / (df + 0.5))

    def idf_of(self, term: str) -> float:
        """The idf of one (stemmed) term; an unknown term is as rare as can be."""
        df = self.df[self.vocab[term]] if term in self.vocab else 0.0
        return float(self.idf(np.asarray([df], dtype=np.float64))[0])


@dataclass
class KeywordIndex:
    """BM25 over ``n`` documents: a bm25s index, or weights under another index's statistics."""

    stats: TermStats
    model: bm25s.BM25 | None
    matrix: sparse.csc_matrix | None
    columns: dict[str, int]

    @classmethod
    def build(
        cls, ids: pl.Series, texts: pl.Series, stats: TermStats | None = None
    ) -> KeywordIndex:
        """Index ``texts``; with ``stats`` (a main index's), score with those statistics."""
        docs = tokenize([t or "" for t in texts.to_list()])
        if stats is None:
            return cls._main(docs)
        return cls._scored_with(docs, stats)

    @classmethod
    def _main(cls, docs: list[list[str]]) -> KeywordIndex:
        vocab: dict[str, int] = {}
        df: list[int] = []
        for doc in docs:
            for term in set(doc):
                col = vocab.setdefault(term, len(vocab))
                if col == len(df):
                    df.append(0)
                df[col] += 1
        n = len(docs)
        avgdl = float(np.mean([len(d) for d in docs])) if n else 1.0
        stats = TermStats(vocab, np.asarray(df, dtype=np.float64), max(avgdl, 1e-9), n)
        model = None
        if vocab:
            model = bm25s.BM25(k1=K1, b=B, method="lucene")
            model.index(docs, show_progress=False)
        return cls(stats, model, None, {})

    @classmethod
    def _scored_with(cls, docs: list[list[str]], stats: TermStats) -> KeywordIndex:
        columns: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        lengths = np.asarray([len(d) for d in docs], dtype=np.float64)
        for row, doc in enumerate(docs):
            terms, counts = np.unique(np.asarray(doc, dtype=object), return_counts=True)
            for term, count in zip(terms.tolist(), counts.tolist(), strict=True):
                rows.append(row)
                cols.append(columns.setdefault(term, len(columns)))
                tfs.append(float(count))
        df = np.asarray(
            [stats.df[stats.vocab[t]] if t in stats.vocab else 0.0 for t in columns],
            dtype=np.float64,
        )
        r, c, tf = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(tfs)  # fmt: skip
        norm = K1 * (1 - B + B * lengths[r] / stats.avgdl) if len(r) else np.zeros(0)
        weights = stats.idf(df)[c] * tf / (tf + norm) if len(r) else np.zeros(0)
        matrix = sparse.csc_matrix((weights, (r, c)), shape=(len(docs), max(len(columns), 1)))
        return cls(stats, None, matrix, columns)

    def ceiling(self, query: str) -> float:
        """The most a document can score for ``query``: the sum of its words' idf (Lucene's
        term-frequency part stays below 1). A score over this is the share of the query's
        evidence a document holds, comparable across queries, unlike a score over the best."""
        terms = set(tokenize([query])[0])
        df = np.asarray(
            [self.stats.df[self.stats.vocab[t]] if t in self.stats.vocab else 0.0 for t in terms],
            dtype=np.float64,
        )
        return float(self.stats.idf(df).sum()) if terms else 0.0

    def score(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros when no term matches)."""
        terms = sorted(set(tokenize([query])[0]))
        if self.model is not None:
            known = [t for t in terms if t in self.stats.vocab]
            if known:
                return np.asarray(self.model.get_scores(known), dtype=np.float64)
            return np.zeros(self.stats.docs, dtype=np.float64)
        if self.matrix is None:
            return np.zeros(0, dtype=np.float64)
        cols = [self.columns[t] for t in terms if t in self.columns]
        if not cols:
            return np.zeros(self.matrix.shape[0], dtype=np.float64)
        return np.asarray(self.matrix[:, cols].sum(axis=1)).ravel()
