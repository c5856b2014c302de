"""E5: the drift an incremental edge refresh leaves unapplied, bounded per pair.

Every night the entities the new sessions touch gain sessions and partners, and with them
the session Jaccard of every pair they are part of and the Adamic–Adar of every pair they
are a common neighbour of moves, mostly by a hair: after +1 % sessions at 3,000 sessions,
recomputing all those pairs was a third of the graph, and four in five of them moved by
less than the write tolerance. So each entity carries what changed since its pairs were
last all recomputed: ``D``, the session memberships it gained or lost, and ``lo``/``hi``,
the lowest and highest degree it had at a refresh. A pair whose movement that can explain
stays within ``drift_tolerance`` keeps its stored values:

    |Δ composite| ≤ w_J · J · (D_u / a_u + D_v / a_v)  +  w_AA · N · r / (1 − r)

J and N are the pair's stored session overlap and normalized Adamic–Adar (plus the slack
the write tolerance allows between stored and computed), ``a`` the ends' session counts
now, and ``r`` the largest relative shift of 1/ln degree among the pair's common
neighbours, max(|f(d) − f(lo)|, |f(d) − f(hi)|) / f(d). Why: with the shared sessions
unchanged (else the pair shares a dirty session and is recomputed), J = s/U moves by
J·|ΔU|/U_now and |ΔU| ≤ D_u + D_v, U_now ≥ a_u, a_v; with the common neighbours unchanged
(else it gained or lost one and is recomputed), raw Adamic–Adar moves by at most r·raw,
and raw/(raw + half) moves by at most its value times the relative move of raw.

Pairs move by less than their bound, so an entity's carried change is cleared only when
all of its pairs were recomputed (all pairs among its neighbours, for the degree), and by
the weekly full refresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from memvault.graph import signals as sg


@dataclass
class Carried:
    """Per entity code: session memberships changed (D) and the degree range (lo, hi)
    since its pairs were last all recomputed."""

    sessions: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def from_cursor(
        cls, cursor: dict[str, Any], codes: np.ndarray, degree_then: np.ndarray,
        sessions_now: np.ndarray,
    ) -> Carried:  # fmt: skip
        """The cursor's carried change (``codes``: the entity code of each of its names, in
        the order of :func:`names`); entities it does not name start from ``degree_then``.
        A cursor of the earlier form (``deferred``: relative session growth, degree) counts
        the growth against the session count now."""
        state = cls(
            np.zeros(len(degree_then)), degree_then.astype(np.int64), degree_then.astype(np.int64)
        )
        carried, old = cursor.get("carried") or {}, cursor.get("deferred") or {}
        for at, name in zip(codes, names(cursor), strict=True):
            if at < 0:
                continue
            if name in carried:
                d, lo, hi = carried[name]
            else:
                g, ref = old[name]
                d, lo = float(g or 0.0) * max(int(sessions_now[at]), 1), ref
                hi = ref
            state.sessions[at] = float(d)
            if lo is not None:
                state.lo[at], state.hi[at] = int(lo), int(hi)
        return state

    def see(self, changed_sessions: np.ndarray, degree: np.ndarray) -> None:
        """Add tonight's changed memberships and degree."""
        self.sessions = self.sessions + changed_sessions
        self.lo = np.minimum(self.lo, degree)
        self.hi = np.maximum(self.hi, degree)

    def as_cursor(self, ids: list[str], degree: np.ndarray) -> dict[str, list[float | int]]:
        """What the next run carries: entities with a change left unapplied."""
        keep = (self.sessions > 0) | (self.lo != degree) | (self.hi != degree)
        return {
            ids[k]: [float(self.sessions[k]), int(self.lo[k]), int(self.hi[k])]
            for k in np.nonzero(keep)[0].tolist()
        }


def names(cursor: dict[str, Any]) -> list[str]:
    """The entities a cursor carries change for, sorted."""
    return sorted({*(cursor.get("carried") or {}), *(cursor.get("deferred") or {})})


def session_growth(
    carried: Carried, sessions_now: np.ndarray, u: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """Per pair, (D_u + D_v) / max(a_u, a_v): the relative move of its session union
    (inf where both ends with a change have no session left)."""
    changed = carried.sessions[u] + carried.sessions[v]
    union = np.maximum(sessions_now[u], sessions_now[v]).astype(np.float64)
    out = np.zeros(len(u))
    np.divide(changed, union, out=out, where=union > 0)
    out[(changed > 0) & (union == 0)] = np.inf
    return out


def degree_shift(carried: Carried, degree: np.ndarray) -> np.ndarray:
    """Per entity, the largest move of its weight 1/ln degree since its reference."""
    f = sg.inverse_log_degree(degree)
    return np.maximum(
        np.abs(f - sg.inverse_log_degree(carried.lo)), np.abs(f - sg.inverse_log_degree(carried.hi))
    )


def neighbour_sums(adj: sg.Incidence, values: np.ndarray) -> np.ndarray:
    """Per entity, the sum of ``values`` over its neighbours."""
    rows = np.repeat(np.arange(adj.n_rows), adj.sizes)
    return np.bincount(rows, weights=values[adj.indices], minlength=adj.n_rows)


def normalized_move(
    stored: np.ndarray, moved_raw: np.ndarray, half: float, slack: float
) -> np.ndarray:
    """How far raw/(raw + half) can move when raw moves by ``moved_raw`` from a value whose
    normalized form was within ``slack`` of ``stored`` (nan stored: from 0): the slope
    half/(raw + half)² is steepest at the smaller end."""
    low = np.clip(np.nan_to_num(stored, nan=0.0) - slack, 0.0, 1.0 - 1e-12)
    raw = half * low / (1.0 - low)
    start = np.maximum(raw - moved_raw, 0.0)
    return np.minimum(half * moved_raw / (start + half) ** 2, 1.0)


@dataclass
class StoredPairs:
    """The live stored edges that are pairs of the graph: id and pair position (rank)."""

    frame: pl.DataFrame
    size: int

    @classmethod
    def of(cls, stored: pl.DataFrame, pairs: sg.KeySet) -> StoredPairs:
        live = stored.filter(pl.col("key").is_not_null() & (pl.col("status") != "archived"))
        keys = live["key"].to_numpy().astype(np.int64)
        hit = pairs.contains(keys)
        frame = live.select("id").filter(pl.Series(hit))
        return cls(frame.with_columns(rank=pl.Series(pairs.rank(keys[hit]))), len(pairs.keys))

    def ids_where(self, mask: np.ndarray) -> list[str]:
        """The stored ids of the pairs ``mask`` selects."""
        return self.frame.filter(pl.Series(mask[self.frame["rank"].to_numpy()]))["id"].to_list()

    def signals(self, values: pl.DataFrame, *names: str) -> list[np.ndarray]:
        """Stored signals per pair (nan where ``values`` has none)."""
        got = self.frame.join(values.select("id", *names), on="id")
        rank = got["rank"].to_numpy()
        out = []
        for name in names:
            column = np.full(self.size, np.nan)
            column[rank] = got[name].cast(pl.Float64).fill_null(np.nan).to_numpy()
            out.append(column)
        return out
