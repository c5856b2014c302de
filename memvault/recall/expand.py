"""Expansion from the best hits: the other turns of an answer spread over several sessions.

A question whose answer is gathered from turns said weeks apart ("what does Ada's brother do
in the city he moved to?": "my brother Tom moved to Porto", then, in a later conversation,
"Tom got a job at a bakery there") finds the turn that shares its words and misses the one
that shares only the bridge: an entity the first turn names. So once every block is scored,
the best few (the *seeds*) lend a share of their score to the blocks of *other* sessions that
mention one of their entities. Not through:

* an entity the query names: the entity bonus already counts it;
* a hub: an entity mentioned by many blocks (a speaker, the owner) links everything;
* a block of the seed's own session: the chatter around a match shares its entities too
  (lifting a session's neighbours was measured and lost, docs/recall.md);
* a repeat of the seed (a vector all but equal to the seed's): it tells nothing new.

Each block takes the largest lift any seed gives it; a seed is lifted only by the others.
The dream's entity graph (personalized PageRank from the query's and the seeds' entities,
its communities) and a seed's nearest vectors were measured as bridges too, and lost on the
real conversations (docs/recall.md): only the entity a seed itself names is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: The best blocks expanded from.
SEEDS = 3
#: Share of a seed's score a block of another session mentioning one of its entities gains.
SHARE = 0.3
#: An entity mentioned by more blocks than this share of the store (at least ``HUB_MIN``, at
#: most ``HUB_MAX`` blocks) is a hub: it links everything, so it lifts nothing.
HUB_SHARE = 0.02
HUB_MIN = 5
HUB_MAX = 50
#: A block whose vector is at least this close to the seed's is a repeat of it.
REPEAT_COSINE = 0.98


@dataclass
class Links:
    """What links blocks, over the rows of the index end to end."""

    #: entity id -> the rows that mention it
    mentions: dict[str, np.ndarray]
    #: the entity ids of ``mentions``, and per row the codes (positions in it) of the entities
    #: the row mentions: ``codes[starts[r]:starts[r + 1]]``
    entity_ids: list[str]
    codes: np.ndarray
    starts: np.ndarray
    #: per row, its session (a code; -1 for none)
    sessions: np.ndarray
    #: the vectors of the rows, in parts end to end: (first row, vectors or None, has vector)
    vectors: Sequence[tuple[int, np.ndarray | None, np.ndarray]] = ()

    @classmethod
    def build(
        cls,
        mentions: dict[str, np.ndarray],
        sessions: np.ndarray,
        vectors: Sequence[tuple[int, np.ndarray | None, np.ndarray]] = (),
    ) -> Links:
        """Links of ``len(sessions)`` rows from entity -> rows (the row -> entities side
        is built in one sort, whatever the number of mentions)."""
        ids = sorted(mentions)
        n = len(sessions)
        if ids:
            rows = np.concatenate([mentions[e] for e in ids]).astype(np.int64)
            code = np.repeat(np.arange(len(ids)), [len(mentions[e]) for e in ids])
        else:
            rows = code = np.zeros(0, dtype=np.int64)
        order = np.argsort(rows, kind="stable")
        rows, code = rows[order], code[order]
        starts = np.searchsorted(rows, np.arange(n + 1))
        return cls(mentions, ids, code, starts, sessions, vectors)

    def extended(
        self,
        mentions: dict[str, np.ndarray],
        sessions: np.ndarray,
        vectors: Sequence[tuple[int, np.ndarray | None, np.ndarray]],
    ) -> Links:
        """These links with ``len(sessions)`` rows more after the last: their mentions
        (entity -> rows counted from the first new row) and sessions; ``vectors`` are those
        of every row. Only the new rows are sorted (a search index's second segment, added
        after each refresh to the main one's links, which stay as built)."""
        n = len(self.sessions)
        ids = list(self.entity_ids)
        code_of = {e: k for k, e in enumerate(ids)}
        merged = dict(self.mentions)
        rows_parts, code_parts = [], []
        for eid, rows in mentions.items():
            code = code_of.get(eid)
            if code is None:
                code = code_of[eid] = len(ids)
                ids.append(eid)
            shifted = rows.astype(np.int64) + n
            had = merged.get(eid)
            merged[eid] = shifted if had is None else np.concatenate([had, shifted])
            rows_parts.append(shifted)
            code_parts.append(np.full(len(shifted), code, dtype=np.int64))
        new_rows = np.concatenate(rows_parts) if rows_parts else np.zeros(0, dtype=np.int64)
        new_codes = np.concatenate(code_parts) if code_parts else np.zeros(0, dtype=np.int64)
        order = np.argsort(new_rows, kind="stable")
        starts = np.searchsorted(new_rows[order], np.arange(n, n + len(sessions) + 1))
        return Links(
            merged,
            ids,
            np.concatenate([self.codes, new_codes[order]]),
            np.concatenate([self.starts[:-1], starts + len(self.codes)]),
            np.concatenate([self.sessions, sessions]),
            vectors,
        )

    def entities_of(self, row: int) -> list[str]:
        return [self.entity_ids[c] for c in self.codes[self.starts[row] : self.starts[row + 1]]]

    def vector(self, row: int) -> np.ndarray | None:
        for first, vectors, has in self.vectors:
            if first <= row < first + len(has):
                return vectors[row - first] if vectors is not None and has[row - first] else None
        return None

    def repeats(self, rows: np.ndarray, of: int) -> np.ndarray:
        """Which of ``rows`` have a vector all but equal to row ``of``'s (a repeat of it)."""
        out = np.zeros(len(rows), dtype=bool)
        seed = self.vector(of)
        if seed is None:
            return out
        for first, vectors, has in self.vectors:
            at = (rows >= first) & (rows < first + len(has))
            if vectors is None or not at.any():
                continue
            local = rows[at] - first
            out[at] = has[local] & (vectors[local] @ seed >= REPEAT_COSINE)
        return out


def hub_size(blocks: int) -> float:
    """The most blocks an entity may be mentioned by and still bridge."""
    return max(HUB_MIN, min(HUB_SHARE * blocks, HUB_MAX))


def expand(
    total: np.ndarray, links: Links, named: Sequence[str] = (), live: np.ndarray | None = None
) -> np.ndarray:
    """``total`` (the score of every row; ``-inf`` for no evidence or not ``live``) with each
    live block lifted by the best seed it is linked to (see the module's docstring). A block
    with no evidence of its own counts from 0 (the usual): the bridge is its evidence."""
    finite = np.isfinite(total)
    if SEEDS <= 0 or SHARE <= 0 or not finite.any():
        return total
    live = finite if live is None else live
    k = min(SEEDS, int(finite.sum()))
    best = np.argpartition(-np.where(finite, total, -np.inf), k - 1)[:k]
    seeds = [int(r) for r in best[np.argsort(-total[best], kind="stable")] if total[r] > 0]
    hub = hub_size(int(live.sum()))
    skip = set(named)
    rows_lifted: list[np.ndarray] = []
    gains: list[np.ndarray] = []
    for s in seeds:
        for eid in links.entities_of(s):
            rows = links.mentions.get(eid)
            if eid in skip or rows is None or len(rows) > hub:
                continue
            keep = (rows != s) & live[rows]
            if links.sessions[s] >= 0:
                keep &= links.sessions[rows] != links.sessions[s]
            rows = rows[keep]
            rows = rows[~links.repeats(rows, s)]
            rows_lifted.append(rows)
            gains.append(np.full(len(rows), SHARE * float(total[s])))
    if not rows_lifted:
        return total
    rows = np.concatenate(rows_lifted)
    gain = np.concatenate(gains)
    order = np.lexsort((-gain, rows))  # per row, its largest gain first
    rows, gain = rows[order], gain[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    rows, gain = rows[first], gain[first]
    out = total.copy()
    out[rows] = np.where(finite[rows], total[rows], 0.0) + gain
    return out
