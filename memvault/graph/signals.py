"""The five edge signals of E1, vectorized over integer-coded entities (numpy only, no store).

Entities are numbered 0..n-1 in id order, so a pair ``(u, v)`` with ``u < v`` is
also ``source_id < target_id``. Pairs are kept sorted by the key ``u * n + v``.
Set operations (shared sessions, common neighbours) run on CSR incidence arrays:
each pair expands the smaller of its two sets and probes the other with a
binary search over sorted keys, so a pair costs the size of its smaller side,
never a Python loop. The whole graph's Adamic–Adar uses degree-ordered
triangle enumeration instead (each triangle found once), which is cheaper
when every pair is wanted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

#: Rows a set-intersection pass materializes at once (bounds memory: ~40 bytes a row).
CHUNK_ROWS = 4_000_000
#: Key sets over a universe up to this many bits are bitmaps (≤ 256 MiB); larger ones are
#: searched (a bitmap answers ~10× faster than a binary search over scattered keys).
BITMAP_MAX_BITS = 1 << 31
#: What a per-pair probe costs against a wedge of the triangle enumeration: 0.3–0.6 measured
#: (after +1 % sessions at 3,000 and 9,000 sessions: 6.5M probes 0.18–0.40 s against 4.3M
#: wedges 0.40–0.52 s; 21.5M probes 0.82–0.87 s against 13.9M wedges 1.08–2.11 s).
PROBE_PER_WEDGE = 0.5


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """Distinct values, ascending (sort-based: numpy 2's hash-based np.unique is far slower here)."""
    values = np.sort(np.asarray(values, dtype=np.int64))
    if values.size < 2:
        return values
    keep = np.empty(values.size, dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values, ascending, and how often each occurs."""
    values = np.sort(np.asarray(values, dtype=np.int64))
    if values.size == 0:
        return values, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
    counts = np.diff(np.append(starts, values.size))
    return values[starts], counts


def _bitmap(values: np.ndarray, universe: int, *, distinct: bool = False) -> np.ndarray:
    """64-bit words with the bit of every value set (values in ``[0, universe)``;
    ``distinct``: already distinct and ascending, as a KeySet's keys are)."""
    words = np.zeros(universe // 64 + 1, dtype=np.uint64)
    values = np.asarray(values, dtype=np.int64) if distinct else unique_sorted(values)
    if values.size:
        word = values >> 6
        starts = np.flatnonzero(np.concatenate([[True], word[1:] != word[:-1]]))
        flags = np.left_shift(np.uint64(1), (values & 63).astype(np.uint64))
        words[word[starts]] = np.add.reduceat(flags, starts)  # distinct bits: sum = or
    return words


_EMPTY = np.int64(-1)


class _HashSlots:
    """An open-addressing hash table of distinct keys ≥ 0 (linear probing, load ≤ 1/2), built
    and probed a whole array at a time: each key's slot holds the key and its rank.

    Round r of the build offers every key not yet placed the slot r after its home; of the
    keys offered one free slot, one takes it. A key placed in round d therefore finds,
    in the slots before its own, keys that arrived earlier, never an empty slot, so a lookup
    that walks from the home slot until it meets the key or an empty slot is exact. At this
    load a lookup reads 1.5 slots on average when the key is there, 2.5 when it is not,
    against the ~21 scattered reads of a binary search over millions of keys.
    """

    def __init__(self, keys: np.ndarray) -> None:
        self.bits = int(max(10, np.ceil(np.log2(max(keys.size, 1) * 2))))
        self.mask = np.int64((1 << self.bits) - 1)
        self.key = np.full(1 << self.bits, _EMPTY, dtype=np.int64)
        self.rank = np.zeros(1 << self.bits, dtype=np.int64)
        home = self._home(keys)
        pending = np.arange(keys.size, dtype=np.int64)
        step = 0
        while pending.size:
            slot = (home[pending] + step) & self.mask
            free = self.key[slot] == _EMPTY
            offered, at = pending[free], slot[free]
            # one of the keys offered each free slot takes it (whichever write lands; the keys
            # are distinct, so reading the slot back tells who), the others walk on
            self.key[at] = keys[offered]
            won = self.key[at] == keys[offered]
            self.rank[at[won]] = offered[won]
            placed = np.zeros(keys.size, dtype=bool)
            placed[offered[won]] = True
            pending = pending[~placed[pending]]
            step += 1

    def _home(self, keys: np.ndarray) -> np.ndarray:
        """Fibonacci hashing of the keys into the table's bits."""
        mixed = keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # wraps, as meant
        return (mixed >> np.uint64(64 - self.bits)).astype(np.int64)

    def find(self, probe: np.ndarray) -> np.ndarray:
        """The rank of each probe among the keys, -1 for a probe that is no key."""
        out = np.full(probe.size, -1, dtype=np.int64)
        active = np.arange(probe.size, dtype=np.int64)
        slot = self._home(probe)
        while active.size:
            held = self.key[slot]
            hit = held == probe[active]
            out[active[hit]] = self.rank[slot[hit]]
            going = ~hit & (held != _EMPTY)
            active, slot = active[going], (slot[going] + 1) & self.mask
        return out


class KeySet:
    """Membership and rank of int64 keys in ``[0, universe)``.

    Small universes use a bitmap of 64-bit words plus per-word prefix counts, so both
    questions are answered by an array lookup and a popcount; large ones (the pairs of a
    store with more than ~46k entities) a hash table (:class:`_HashSlots`) built on first use.
    """

    def __init__(self, keys: np.ndarray, universe: int) -> None:
        self.keys = unique_sorted(keys)
        self.words: np.ndarray | None = None
        self.before: np.ndarray | None = None
        self.slots: _HashSlots | None = None
        if universe <= BITMAP_MAX_BITS:
            self.words = _bitmap(self.keys, universe, distinct=True)

    def _table(self) -> _HashSlots:
        if self.slots is None:
            self.slots = _HashSlots(self.keys)
        return self.slots

    def contains(self, probe: np.ndarray) -> np.ndarray:
        probe = np.asarray(probe, dtype=np.int64)
        if self.words is not None:
            bit = (probe & 63).astype(np.uint64)
            return ((self.words[probe >> 6] >> bit) & np.uint64(1)).astype(bool)
        if self.keys.size == 0:
            return np.zeros(probe.size, dtype=bool)
        return self._table().find(probe) >= 0

    def rank(self, probe: np.ndarray) -> np.ndarray:
        """How many keys are smaller than each probe (a present key's position in ``keys``)."""
        probe = np.asarray(probe, dtype=np.int64)
        if self.words is None:
            if self.keys.size == 0:
                return np.zeros(probe.size, dtype=np.int64)
            out = self._table().find(probe)
            absent = out < 0
            if absent.any():
                out[absent] = np.searchsorted(self.keys, probe[absent])
            return out
        if self.before is None:  # keys in the words before each word, built on first use
            counts = np.bitwise_count(self.words).astype(np.int64)
            self.before = np.concatenate([[0], np.cumsum(counts[:-1])])
        word = probe >> 6
        below = np.left_shift(np.uint64(1), (probe & 63).astype(np.uint64)) - np.uint64(1)
        return self.before[word] + np.bitwise_count(self.words[word] & below)


@dataclass(frozen=True)
class Incidence:
    """A 0/1 matrix in CSR form: row i's columns are ``indices[indptr[i]:indptr[i+1]]``, sorted."""

    indptr: np.ndarray
    indices: np.ndarray
    n_cols: int
    _cache: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_pairs(cls, rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int) -> Incidence:
        """Distinct (row, col) pairs, in any order and with repeats."""
        n_cols = max(n_cols, 1)
        keys = unique_sorted(np.asarray(rows, dtype=np.int64) * n_cols + np.asarray(cols, np.int64))
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        if keys.size:
            np.cumsum(np.bincount(keys // n_cols, minlength=n_rows), out=indptr[1:])
        incidence = cls(indptr, keys % n_cols, n_cols)
        incidence._cache["keys"] = keys
        return incidence

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.indptr)

    @property
    def keys(self) -> np.ndarray:
        """``row * n_cols + col`` for every entry, ascending (CSR order)."""
        if "keys" not in self._cache:
            rows = np.repeat(np.arange(self.n_rows, dtype=np.int64), self.sizes)
            self._cache["keys"] = rows * self.n_cols + self.indices
        keys = self._cache["keys"]
        assert isinstance(keys, np.ndarray)
        return keys

    def contains(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Whether each (row, col) is an entry."""
        if "set" not in self._cache:
            self._cache["set"] = KeySet(self.keys, self.n_rows * self.n_cols)
        keyset = self._cache["set"]
        assert isinstance(keyset, KeySet)
        return keyset.contains(
            np.asarray(rows, np.int64) * self.n_cols + np.asarray(cols, np.int64)
        )

    def expand(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each given row, its columns: (position of the row in ``rows``, column)."""
        rows = np.asarray(rows, dtype=np.int64)
        counts = self.sizes[rows]
        total = int(counts.sum())
        owner = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        first = np.repeat(self.indptr[rows] - (np.cumsum(counts) - counts), counts)
        return owner, self.indices[first + np.arange(total, dtype=np.int64)]


def _chunks(cost: np.ndarray, limit: int = CHUNK_ROWS) -> Iterator[slice]:
    """Consecutive slices of items whose summed ``cost`` stays near ``limit``."""
    if cost.size == 0:
        return
    ends = np.cumsum(cost)
    start = 0
    while start < cost.size:
        base = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, base + limit, side="right"))
        stop = max(stop, start + 1)
        yield slice(start, stop)
        start = stop


def common_sum(
    inc: Incidence, u: np.ndarray, v: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """Per pair, the summed ``weights`` (default 1) of the columns rows u and v share."""
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    out = np.zeros(len(u), dtype=np.float64)
    if len(u) == 0:
        return out
    sizes = inc.sizes
    small_u = sizes[u] <= sizes[v]
    side = np.where(small_u, u, v)
    other = np.where(small_u, v, u)
    for part in _chunks(sizes[side]):
        owner, cols = inc.expand(side[part])
        hit = inc.contains(other[part][owner], cols)
        w = None if weights is None else weights[cols[hit]]
        out[part] += np.bincount(owner[hit], weights=w, minlength=part.stop - part.start)
    return out


# -- the co-mention graph --------------------------------------------------------------------


def co_mention_pairs(
    entity: np.ndarray, group: np.ndarray, n_entities: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entity pairs u < v that share a group (block), with how many groups they share.

    ``entity``/``group`` are parallel codes (repeats allowed). Returns u, v, count sorted by (u, v).
    """
    if len(entity) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    order = np.lexsort((entity, group))
    g = np.asarray(group, dtype=np.int64)[order]
    e = np.asarray(entity, dtype=np.int64)[order]
    keep = np.ones(len(g), dtype=bool)
    keep[1:] = (g[1:] != g[:-1]) | (e[1:] != e[:-1])
    g, e = g[keep], e[keep]
    # Within a group members are sorted, so position p and p + j (same group) give u < v.
    keys: list[np.ndarray] = []
    alive = np.arange(len(g) - 1, dtype=np.int64)
    j = 1
    while alive.size:
        alive = alive[alive + j < len(g)]
        alive = alive[g[alive + j] == g[alive]]
        keys.append(e[alive] * n_entities + e[alive + j])
        j += 1
    flat = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    uniq, counts = unique_counts(flat)
    return uniq // n_entities, uniq % n_entities, counts


def adjacency(u: np.ndarray, v: np.ndarray, n: int) -> Incidence:
    """The symmetric neighbour lists of an undirected edge list."""
    return Incidence.from_pairs(np.concatenate([u, v]), np.concatenate([v, u]), n, n)


def inverse_log_degree(degree: np.ndarray) -> np.ndarray:
    """Adamic–Adar's weight of a common neighbour, 1/ln(degree) (0 below degree 2)."""
    out = np.zeros(len(degree), dtype=np.float64)
    ok = degree >= 2
    out[ok] = 1.0 / np.log(degree[ok].astype(np.float64))
    return out


def adamic_adar_pairs(adj: Incidence, f: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Σ over common neighbours w of f[w], for the given pairs (cost: the smaller degree each)."""
    return common_sum(adj, u, v, f)


def adamic_adar_scope(
    adj: Incidence, f: np.ndarray, u: np.ndarray, v: np.ndarray, scope: np.ndarray
) -> np.ndarray:
    """Adamic–Adar of the edges in ``scope`` (a mask over the sorted edge list u, v), by the
    cheaper way: per pair (cost: the smaller degrees) or all triangles (cost: the wedges)."""
    if scope.all():
        return adamic_adar_all(adj, f, u, v)
    su, sv = u[scope], v[scope]
    per_pair = int(np.minimum(adj.sizes[su], adj.sizes[sv]).sum())
    if per_pair * PROBE_PER_WEDGE > wedge_count(adj, u, v):
        return adamic_adar_all(adj, f, u, v)[scope]
    return adamic_adar_pairs(adj, f, su, sv)


def _orient(adj: Incidence, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each edge from its lower-ranked end (rank = degree, then id) to the other."""
    n = adj.n_rows
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((np.arange(n), adj.sizes))] = np.arange(n)
    flip = rank[u] > rank[v]
    return np.where(flip, v, u), np.where(flip, u, v)


def wedge_count(adj: Incidence, u: np.ndarray, v: np.ndarray) -> int:
    """Pairs of out-neighbours the triangle enumeration visits."""
    low, _ = _orient(adj, np.asarray(u, np.int64), np.asarray(v, np.int64))
    out = np.bincount(low, minlength=adj.n_rows)
    return int((out * (out - 1) // 2).sum())


def adamic_adar_all(adj: Incidence, f: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Σ over common neighbours w of f[w] for every edge (u, v) of ``adj`` (sorted by u*n+v).

    Degree-ordered triangle enumeration: orient each edge from the lower-ranked end
    (rank = degree, then id) and pair up the out-neighbours of every vertex; each
    triangle is found once, at its lowest-ranked corner, and credits each of its
    three edges with the weight of the opposite corner.
    """
    n = adj.n_rows
    m = len(u)
    out = np.zeros(m, dtype=np.float64)
    if m == 0:
        return out
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    edge_keys = u * n + v
    low, high = _orient(adj, u, v)
    order = np.lexsort((high, low))
    low, high, eid = low[order], high[order], order.astype(np.int64)
    row_end = np.searchsorted(low, low, side="right")
    edge_set = KeySet(edge_keys, n * n)
    idx_parts: list[np.ndarray] = []
    w_parts: list[np.ndarray] = []
    pending = 0
    alive = np.arange(m, dtype=np.int64)
    j = 1
    while alive.size:
        alive = alive[alive + j < row_end[alive]]
        a, b = high[alive], high[alive + j]
        key = np.minimum(a, b) * n + np.maximum(a, b)
        hit = edge_set.contains(key)
        p, key = alive[hit], key[hit]
        idx_parts += [edge_set.rank(key), eid[p], eid[p + j]]
        w_parts += [f[low[p]], f[high[p + j]], f[high[p]]]
        pending += 3 * p.size
        if pending > CHUNK_ROWS or not alive.size:
            out += np.bincount(np.concatenate(idx_parts), np.concatenate(w_parts), minlength=m)
            idx_parts, w_parts, pending = [], [], 0
        j += 1
    return out


# -- normalizations and the composite --------------------------------------------------------


def normalize_co_occurrence(counts: np.ndarray, saturation: int) -> np.ndarray:
    """log1p(n) / log1p(saturation), capped at 1."""
    return np.minimum(1.0, np.log1p(counts.astype(np.float64)) / np.log1p(float(saturation)))


def normalize_adamic_adar(raw: np.ndarray, half: float) -> np.ndarray:
    """raw / (raw + half): 0 without common neighbours, 0.5 at ``half``, towards 1 beyond."""
    raw = np.asarray(raw, dtype=np.float64)
    return raw / (raw + half)


def jaccard(shared: np.ndarray, size_u: np.ndarray, size_v: np.ndarray) -> np.ndarray:
    """|A ∩ B| / |A ∪ B| (0 when both are empty)."""
    union = size_u.astype(np.float64) + size_v - shared
    return np.divide(shared, union, out=np.zeros(len(shared)), where=union > 0)


def cosine_pairs(
    vectors: np.ndarray, has_vector: np.ndarray, u: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """Cosine of unit rows u and v, clipped to 0..1; 0 where either has no vector."""
    out = np.zeros(len(u), dtype=np.float64)
    if vectors.size == 0 or len(u) == 0:
        return out
    both = has_vector[u] & has_vector[v]
    iu, iv = u[both], v[both]
    values = np.empty(len(iu), dtype=np.float64)
    step = max(1, CHUNK_ROWS // max(vectors.shape[1], 1))
    for start in range(0, len(iu), step):
        a = vectors[iu[start : start + step]]
        b = vectors[iv[start : start + step]]
        values[start : start + step] = np.einsum("ij,ij->i", a, b)
    out[both] = np.clip(values, 0.0, 1.0)
    return out


def type_affinity_pairs(
    type_code: np.ndarray, matrix: np.ndarray, u: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """The prior of each pair's entity types, from a symmetric (types × types) matrix."""
    return matrix[type_code[u], type_code[v]]


def composite(signals: dict[str, np.ndarray], weights: dict[str, float]) -> np.ndarray:
    """E2: the weighted sum of the five signals."""
    total: np.ndarray | None = None
    for name, weight in weights.items():
        term = weight * signals[name]
        total = term if total is None else total + term
    assert total is not None
    return total
