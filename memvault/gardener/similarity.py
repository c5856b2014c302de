"""Near-duplicate candidates by cosine similarity, without comparing all pairs of a store.

The gardener asks "which items are within ``threshold`` of the items that
changed since the last run" — a few hundred or thousand *queries* against the
whole store. Three ways to answer, chosen by size:

* **exact blocks** — queries × store as numpy matrix products, a block of
  queries at a time. Exact, and the cheapest choice while queries × store
  stays below :data:`EXACT_LIMIT` products (a nightly delta against 100k items).
* **ANN index** — a ``usearch`` HNSW index (int8-quantized, cosine) over the
  store, searched for the queries' nearest neighbours, the hits then re-scored
  exactly. For large windows (a first run of a big backlog).
* **LSH blocking** — when ``usearch`` is not installed: sign random projections
  put vectors into buckets; only pairs sharing a bucket in some table are scored.

Every path returns exact cosine scores of the pairs it reports; the ANN and LSH
paths may miss a pair (their recall is measured in the tests), never invent one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from memvault.embed.base import normalize_rows

#: Query × store products above which the exact path gives way to the index.
EXACT_LIMIT = 1_500_000_000
#: Neighbours fetched per query from the ANN index (duplicates are few per item).
ANN_NEIGHBOURS = 32
_BLOCK_ROWS = 1024


@dataclass(frozen=True)
class SimilarPairs:
    """Pairs ``(i, j)`` of positions into the store matrix, ``i < j``, with their cosine."""

    left: np.ndarray
    right: np.ndarray
    score: np.ndarray
    method: str
    seconds: float

    def __len__(self) -> int:
        return int(self.left.size)


def _finish(
    rows: list[np.ndarray], cols: list[np.ndarray], scores: list[np.ndarray], method: str, t0: float
) -> SimilarPairs:
    if rows:
        i = np.concatenate(rows)
        j = np.concatenate(cols)
        s = np.concatenate(scores)
    else:
        i = j = np.zeros(0, dtype=np.int64)
        s = np.zeros(0, dtype=np.float32)
    keep = i != j
    i, j, s = i[keep], j[keep], s[keep]
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    if lo.size:
        key = lo.astype(np.int64) * (int(hi.max()) + 1) + hi
        _, first = np.unique(key, return_index=True)
        lo, hi, s = lo[first], hi[first], s[first]
        order = np.lexsort((hi, lo, -s))
        lo, hi, s = lo[order], hi[order], s[order]
    return SimilarPairs(lo, hi, s.astype(np.float32), method, time.perf_counter() - t0)


def exact_pairs(
    matrix: np.ndarray, queries: Sequence[int] | np.ndarray, threshold: float
) -> SimilarPairs:
    """Exact: every query row against every row, a block of queries at a time."""
    t0 = time.perf_counter()
    x = normalize_rows(np.ascontiguousarray(matrix))
    q = np.asarray(queries, dtype=np.int64)
    rows, cols, scores = [], [], []
    for start in range(0, q.size, _BLOCK_ROWS):
        block = q[start : start + _BLOCK_ROWS]
        sims = x[block] @ x.T
        r, c = np.nonzero(sims >= threshold)
        rows.append(block[r])
        cols.append(c.astype(np.int64))
        scores.append(sims[r, c])
    return _finish(rows, cols, scores, "exact-blocks", t0)


def ann_pairs(
    matrix: np.ndarray,
    queries: Sequence[int] | np.ndarray,
    threshold: float,
    neighbours: int = ANN_NEIGHBOURS,
) -> SimilarPairs:
    """An HNSW index over all rows (usearch), searched for the queries, hits re-scored exactly."""
    from usearch.index import Index

    t0 = time.perf_counter()
    x = normalize_rows(np.ascontiguousarray(matrix))
    q = np.asarray(queries, dtype=np.int64)
    index = Index(
        ndim=x.shape[1],
        metric="cos",
        dtype="i8",
        connectivity=16,
        expansion_add=64,
        expansion_search=64,
    )
    index.add(np.arange(x.shape[0], dtype=np.uint64), x, log=False)
    found = index.search(x[q], min(neighbours + 1, x.shape[0]), log=False)
    keys = np.asarray(found.keys, dtype=np.int64).reshape(q.size, -1)
    valid = keys >= 0
    valid &= keys < x.shape[0]
    r, c = np.nonzero(valid)
    left, right = q[r], keys[r, c]
    exact = np.einsum("ij,ij->i", x[left], x[right])
    hit = exact >= threshold
    return _finish([left[hit]], [right[hit]], [exact[hit]], "ann-usearch", t0)


def lsh_pairs(
    matrix: np.ndarray,
    queries: Sequence[int] | np.ndarray,
    threshold: float,
    bits: int = 16,
    tables: int = 24,
    max_bucket: int = 2000,
    seed: int = 0,
) -> SimilarPairs:
    """Sign random projections: only pairs sharing a bucket in some table are scored."""
    t0 = time.perf_counter()
    x = normalize_rows(np.ascontiguousarray(matrix))
    q = np.asarray(queries, dtype=np.int64)
    is_query = np.zeros(x.shape[0], dtype=bool)
    is_query[q] = True
    rng = np.random.default_rng(seed)
    weights = (1 << np.arange(bits, dtype=np.int64)).astype(np.int64)
    rows, cols, scores = [], [], []
    for _ in range(tables):
        planes = rng.standard_normal((x.shape[1], bits)).astype(np.float32)
        codes = ((x @ planes) > 0).astype(np.int64) @ weights
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
        for members in np.split(order, bounds):
            if members.size < 2 or not is_query[members].any():
                continue
            members = members[:max_bucket]
            sub = x[members]
            sims = sub @ sub.T
            r, c = np.nonzero(np.triu(sims >= threshold, 1))
            keep = is_query[members[r]] | is_query[members[c]]
            rows.append(members[r[keep]])
            cols.append(members[c[keep]])
            scores.append(sims[r[keep], c[keep]])
    return _finish(rows, cols, scores, "lsh-blocking", t0)


def similar_pairs(
    matrix: np.ndarray,
    queries: Sequence[int] | np.ndarray,
    threshold: float,
    *,
    exact_limit: int = EXACT_LIMIT,
) -> SimilarPairs:
    """Pairs with at least one query row and cosine ≥ ``threshold``, by the cheapest fit path."""
    q = np.asarray(queries, dtype=np.int64)
    if matrix.shape[0] < 2 or q.size == 0:
        return _finish([], [], [], "none", time.perf_counter())
    if q.size * matrix.shape[0] <= exact_limit:
        return exact_pairs(matrix, q, threshold)
    try:
        import usearch.index  # noqa: F401
    except ImportError:
        return lsh_pairs(matrix, q, threshold)
    return ann_pairs(matrix, q, threshold)


def brute_force_all_pairs(matrix: np.ndarray, threshold: float) -> SimilarPairs:
    """Every pair of rows (n²/2 products): the baseline the benchmark compares against."""
    return replace(exact_pairs(matrix, np.arange(matrix.shape[0]), threshold), method="brute-force")
