"""E5: where an incremental edge refresh starts, and which pairs it recomputes.

See the ``edges`` module docstring for the rules and the error bound they keep.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from memvault.graph import drift
from memvault.graph import signals as sg
from memvault.graph.config import GraphConfig
from memvault.graph.inputs import Graph, Inputs, categories, code, stored_values
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.audit import changes_in
from memvault.store.queries.graph import block_sessions, entity_vectors_since, mention_sessions
from memvault.store.queries.runs import newest_standing_cursor

CURSOR_KEY = "graph_edges"
#: Above this share of recomputed pairs (or of changed rows among the mentions, with at least
#: FULL_WHEN_CHANGES changed rows) an incremental run computes everything the full way.
FULL_WHEN_SHARE = 0.5
FULL_WHEN_CHANGES = 10_000
#: A common neighbour whose weight's move alone could move a pair by more than this share of
#: the drift budget has its pairs found (walked); the others are summed per entity.
WALK_SHARE = 0.5


def last_cursor(store: Store, key: str = CURSOR_KEY) -> dict[str, Any] | None:
    """The newest cursor under ``key`` (default: the edges') on a run that was neither undone
    nor reverted (what it wrote is still in place); it names that run as ``run_id``."""
    found = newest_standing_cursor(store, key)
    if found is None:
        return None
    run_id, text = found
    value = json.loads(text or "{}").get(key)
    return {**value, "run_id": run_id} if isinstance(value, dict) else None


def full_reason(
    cursor: dict[str, Any] | None,
    config: GraphConfig,
    full: bool,
    full_every_days: float | None = None,
    now: dt.datetime | None = None,
) -> str | None:
    """Why this refresh computes every pair (None: it may start from the cursor). Besides a
    request, a first run and changed settings: no full refresh in ``full_every_days`` days
    (the weekly pass that clears the drift hubs carry and anything written behind the audit
    log's back)."""
    if full:
        return "full recompute requested"
    if cursor is None:
        return "no earlier edge run"
    if cursor.get("config") != config.edge_fingerprint():
        return "edge settings changed"
    last_full = cursor.get("full_at") or cursor.get("at")
    if full_every_days is not None and full_every_days > 0 and last_full:
        cut = (now or utcnow()) - dt.timedelta(days=full_every_days)
        if dt.datetime.fromisoformat(str(last_full)) < cut:
            return f"no full refresh in the last {full_every_days:g} days"
    return None


#: What the edges read of each table: an audited update that changed none of these columns
#: (a tier demotion, a repaired text, a renamed entity) changes no edge. Counting those made
#: the +1% night after a first tiering pass (98,897 block demotions at 100k blocks) recompute
#: every pair.
GRAPH_COLUMNS: dict[str, tuple[str, ...]] = {
    "mentions": ("entity_id", "block_id", "session_id"),
    "blocks": ("status", "session_id"),
    "entities": ("status", "entity_type"),
}
_CHANGES_SCHEMA: dict[str, Any] = {
    "target_table": pl.Utf8,
    "target_id": pl.Utf8,
    "before_image": pl.Utf8,
}


def graph_changes(store: Store, cursor: dict[str, Any], audit_hw: int) -> pl.DataFrame:
    """The audit rows since the cursor (up to ``audit_hw``) that changed what the edges read:
    new rows, and updates whose images differ in a column of ``GRAPH_COLUMNS`` (compared in
    the database: a first tiering pass's images, with their texts, stay there). Columns
    target_table, target_id, and before_image for mentions (where a mention counted)."""
    audit = changes_in(
        store, int(cursor.get("audit_id", 0)), audit_hw, GRAPH_COLUMNS, images=("mentions",)
    )
    if audit.is_empty():
        return pl.DataFrame(schema=_CHANGES_SCHEMA)
    return audit.cast(pl.Utf8)  # every column is text


def change_too_large(cursor: dict[str, Any], inputs: Inputs, changes: pl.DataFrame) -> str | None:
    """A reason to compute everything when starting from the cursor is no cheaper
    (``changes``: :func:`graph_changes`)."""
    if cursor.get("model") != inputs.model:
        return f"embedding model changed ({cursor.get('model')} → {inputs.model})"
    if changes.height > max(FULL_WHEN_CHANGES, FULL_WHEN_SHARE * len(inputs.entity)):
        return f"{changes.height:,} changed mentions, blocks and entities: computed in full"
    return None


@dataclass
class Plan:
    scope: np.ndarray  # bool per pair of the graph: recompute
    touched: int
    deferred: dict[str, list[float | int]]  # the drift carried per entity (drift.Carried)
    parts: dict[str, int] = field(default_factory=dict)  # pairs each rule added
    pairs: sg.KeySet | None = None  # the graph's pair keys
    values: pl.DataFrame | None = None  # the stored values the plan read (id, signals)

    @classmethod
    def everything(cls, graph: Graph) -> Plan:
        return cls(np.ones(len(graph.keys), dtype=bool), int(graph.adj.n_rows), {})

    def add(self, name: str, mask: np.ndarray) -> None:
        before = int(self.scope.sum())
        self.scope |= mask
        self.parts[name] = self.parts.get(name, 0) + int(self.scope.sum()) - before

    def add_keys(self, name: str, keys: np.ndarray) -> None:
        """Add the pairs with these keys (keys of pairs not in the graph are ignored)."""
        assert self.pairs is not None
        keys = keys[self.pairs.contains(keys)]
        mask = np.zeros(self.scope.size, dtype=bool)
        mask[self.pairs.rank(keys)] = True
        self.add(name, mask)


def _dirty(
    store: Store, inputs: Inputs, cursor: dict[str, Any], audit: pl.DataFrame
) -> tuple[pl.DataFrame, set[str]]:
    """Mention rows (entity id, session id) whose counting may have changed since the cursor,
    and the ids of entities whose own row or vector changed (``audit``: :func:`graph_changes`)."""
    empty = pl.DataFrame(schema={"entity_id": pl.Utf8, "session_id": pl.Utf8})
    frames = [empty]
    changed: set[str] = set()
    if audit.height:
        audit = audit.cast({"target_table": pl.Utf8, "target_id": pl.Utf8, "before_image": pl.Utf8})
        mention_ids = audit.filter(pl.col("target_table") == "mentions")["target_id"].to_list()
        block_ids = audit.filter(pl.col("target_table") == "blocks")["target_id"].to_list()
        changed = set(audit.filter(pl.col("target_table") == "entities")["target_id"].to_list())
        if mention_ids:
            frames.append(mention_sessions(store, "id", mention_ids))
        if block_ids:
            frames.append(mention_sessions(store, "block_id", block_ids))
        before = audit.filter(
            (pl.col("target_table") == "mentions") & pl.col("before_image").is_not_null()
        )
        if before.height:  # moved or removed mentions: where they counted before
            frames.append(
                before.select(
                    entity_id=pl.col("before_image").str.json_path_match("$.entity_id"),
                    session_id=pl.col("before_image").str.json_path_match("$.session_id"),
                )
            )
        if block_ids:  # a block's own session (it may have no mention left)
            frames.append(block_sessions(store, block_ids))
    if inputs.model:
        since = cursor.get("vectors_at")
        at = dt.datetime.fromisoformat(since) if since else None
        changed |= entity_vectors_since(store, inputs.model, at)
    rows = pl.concat([f.cast({"entity_id": pl.Utf8, "session_id": pl.Utf8}) for f in frames])
    return rows, changed


def plan_incremental(
    store: Store,
    config: GraphConfig,
    inputs: Inputs,
    graph: Graph,
    cursor: dict[str, Any],
    changes: pl.DataFrame,
) -> Plan:
    """Which pairs to recompute, from the changes since the cursor (:func:`graph_changes`)."""
    n = inputs.n
    dirty_rows, changed_ids = _dirty(store, inputs, cursor, changes)
    # Members of dirty sessions, as they count now and as they counted before.
    dirty_sessions = categories(dirty_rows["session_id"])
    in_dirty = _isin(inputs.session, code(dirty_sessions, inputs.session_names))
    now_names = inputs.session_names.gather(inputs.session[in_dirty])
    member_entity = np.concatenate(
        [inputs.entity[in_dirty], inputs.entity_codes(dirty_rows["entity_id"])]
    )
    member_session = np.concatenate(
        [code(now_names, dirty_sessions), code(dirty_rows["session_id"], dirty_sessions)]
    )
    ok = (member_entity >= 0) & (member_session >= 0)
    member_entity, member_session = member_entity[ok], member_session[ok]
    su, sv, _ = sg.co_mention_pairs(member_entity, member_session, n)
    width = max(dirty_sessions.len(), 1)
    dirty_count = np.bincount(
        sg.unique_sorted(member_entity * width + member_session) // width, minlength=n
    )

    stored = inputs.stored
    live = stored.filter(pl.col("key").is_not_null() & (pl.col("status") != "archived"))
    old_keys = np.sort(live["key"].to_numpy().astype(np.int64))
    old_u, old_v = old_keys // max(n, 1), old_keys % max(n, 1)
    old_adj = sg.adjacency(old_u, old_v, n)
    pairs = sg.KeySet(graph.keys, n * n)  # position of a pair = its rank among the keys
    new = ~sg.KeySet(old_keys, n * n).contains(graph.keys)  # new (or revived) pairs
    plan = Plan(np.zeros(len(graph.keys), dtype=bool), 0, {}, pairs=pairs)
    plan.add("new", new)
    plan.add_keys("shared_dirty_session", su * n + sv)

    # Triangles through edges that appeared or disappeared: a common neighbour came or went.
    gone = ~pairs.contains(old_keys)
    for adj, eu, ev in ((graph.adj, graph.u[new], graph.v[new]),
                        (old_adj, old_u[gone], old_v[gone])):  # fmt: skip
        a, b, c = _triangles_through(adj, eu, ev)
        found = np.concatenate([_pair_keys(a, c, n), _pair_keys(b, c, n)])
        plan.add_keys("common_neighbour_changed", found)

    # Entities whose own row or vector changed: every pair they are part of.
    changed = np.zeros(n, dtype=bool)
    found = inputs.entity_codes(pl.Series(sorted(changed_ids), dtype=pl.Utf8))
    changed[found[found >= 0]] = True
    plan.add("entity_refreshed", changed[graph.u] | changed[graph.v])

    # Drift: session counts (Jaccard) and degrees (Adamic–Adar), bounded per pair (drift.py).
    degree = graph.degree
    sessions_now = graph.sessions.sizes
    carried = drift.Carried.from_cursor(
        cursor,
        inputs.entity_codes(pl.Series(drift.names(cursor), dtype=pl.Utf8)),
        old_adj.sizes,
        sessions_now,
    )
    carried.see(dirty_count, degree)
    w_j, w_a = config.weights.session_overlap, config.weights.adamic_adar
    half, tol = config.adamic_adar_half, config.drift_budget()
    shift = drift.degree_shift(carried, degree)
    # Common neighbours whose shift could matter alone are walked (their pairs found); the
    # others are summed per entity, a pair taking the smaller sum of its two ends.
    walk = w_a * shift / half > tol * WALK_SHARE if tol > 0 else shift > 0
    centres = np.nonzero(walk)[0]
    owner, rank = _pairs_among_neighbours(graph.adj, centres, pairs, n)
    moved_raw = np.bincount(rank, shift[centres[owner]], minlength=len(graph.keys)).astype(float)
    around = drift.neighbour_sums(graph.adj, np.where(walk, 0.0, shift))
    moved_raw += np.minimum(around[graph.u], around[graph.v])
    # The bound with the signals at most 1 first; the stored values only where it is not enough.
    growth = drift.session_growth(carried, sessions_now, graph.u, graph.v)
    bound_j = w_j * growth
    bound_a = w_a * moved_raw / half
    over = (bound_j + bound_a > tol) & ~plan.scope
    if tol > 0 and over.any():
        known = drift.StoredPairs.of(stored, pairs)
        plan.values = stored_values(store, known.ids_where(plan.scope | over), stored.height)
        slack = config.rewrite_above()
        j_then, a_then = known.signals(plan.values, "session_overlap", "adamic_adar")
        bound_j = w_j * growth * _largest(w_j, j_then, slack)
        bound_a = w_a * drift.normalized_move(a_then, moved_raw, half, slack / max(w_a, 1e-12))
        over &= ~(bound_j + bound_a <= tol)
    plan.add("entity_refreshed", over & (bound_j >= bound_a))
    plan.add("neighbour_degree_changed", over & (bound_j < bound_a))

    # An entity with twice as many of its pairs recomputed as left has the rest recomputed
    # too, so it starts afresh (else its counter never clears and its busy pairs are
    # recomputed night after night until the weekly full refresh).
    left = ~plan.scope
    open_pairs, done = _per_entity(graph, left, n), _per_entity(graph, ~left, n)
    settle = (carried.sessions > 0) & (open_pairs > 0) & (2 * open_pairs <= done)
    plan.add("entity_refreshed", settle[graph.u] | settle[graph.v])
    # What this run leaves unapplied: an entity whose pairs were all recomputed starts afresh.
    left = ~plan.scope
    carried.sessions[_per_entity(graph, left, n) == 0] = 0.0
    open_c = np.bincount(owner[left[rank]], minlength=len(centres))
    settled = np.concatenate([centres[open_c == 0], np.nonzero(shift == 0)[0]])
    carried.lo[settled] = carried.hi[settled] = degree[settled]
    plan.touched = int(((dirty_count > 0) | changed | (shift > 0)).sum())
    plan.deferred = carried.as_cursor(inputs.ids, degree)
    return plan


def _per_entity(graph: Graph, mask: np.ndarray, n: int) -> np.ndarray:
    """How many of each entity's pairs ``mask`` selects."""
    return np.bincount(graph.u[mask], minlength=n) + np.bincount(graph.v[mask], minlength=n)


def _largest(weight: float, stored: np.ndarray, slack: float) -> np.ndarray:
    """The largest value a signal can have had when last computed: stored, plus what the
    write tolerance lets the two differ by (1 where nothing is stored)."""
    if weight <= 0:
        return np.ones(len(stored))
    return np.nan_to_num(np.minimum(stored + slack / weight, 1.0), nan=1.0)


def _isin(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """np.isin for int64 keys, without numpy 2's slow hash-based unique."""
    keys = np.asarray(keys, dtype=np.int64)
    universe = int(max(values.max(initial=0), keys.max(initial=0))) + 1
    return sg.KeySet(keys, universe).contains(values)


def _pair_keys(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    return np.minimum(a, b) * n + np.maximum(a, b)


def _triangles_through(
    adj: sg.Incidence, u: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every triangle (u, v, w) of ``adj`` that contains one of the edges (u, v)."""
    if len(u) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    sizes = adj.sizes
    small = sizes[u] <= sizes[v]
    side, other = np.where(small, u, v), np.where(small, v, u)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for part in sg._chunks(sizes[side]):
        owner, w = adj.expand(side[part])
        hit = adj.contains(other[part][owner], w)
        parts.append((side[part][owner[hit]], other[part][owner[hit]], w[hit]))
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))  # type: ignore[return-value]


def _pairs_among_neighbours(
    adj: sg.Incidence, centres: np.ndarray, edges: sg.KeySet, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Edges with both ends adjacent to one of ``centres`` (triangles through them): the
    position of that centre in ``centres`` and the edge's rank among ``edges``' keys."""
    empty = np.zeros(0, dtype=np.int64)
    if len(centres) == 0:
        return empty, empty
    edge_keys = edges.keys
    sizes = adj.sizes[centres]
    pair_cost = sizes * (sizes - 1) // 2
    big = pair_cost > len(edge_keys)
    owners: list[np.ndarray] = [empty]
    ranks: list[np.ndarray] = [empty]
    eu, ev = edge_keys // max(n, 1), edge_keys % max(n, 1)
    for at in np.nonzero(big)[0].tolist():  # a hub: scan the edge list once
        centre = centres[at]
        mask = np.zeros(n, dtype=bool)
        mask[adj.indices[adj.indptr[centre] : adj.indptr[centre + 1]]] = True
        both = np.nonzero(mask[eu] & mask[ev])[0]
        owners.append(np.full(len(both), at, dtype=np.int64))
        ranks.append(both)
    small = np.nonzero(~big)[0]
    for part in sg._chunks(pair_cost[small]):
        group, members = adj.expand(centres[small[part]])
        within, a, b = _pairs_within(group, members)
        keys = a * n + b
        hit = edges.contains(keys)
        owners.append(small[part][within[hit]])
        ranks.append(edges.rank(keys[hit]))
    return np.concatenate(owners), np.concatenate(ranks)


def _pairs_within(
    group: np.ndarray, members: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair a < b of members of the same group, with its group (``group`` ascending,
    members ascending within a group, as :meth:`signals.Incidence.expand` gives them)."""
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    alive = np.arange(len(group) - 1, dtype=np.int64)
    j = 1
    while alive.size:
        alive = alive[alive + j < len(group)]
        alive = alive[group[alive + j] == group[alive]]
        out.append((group[alive], members[alive], members[alive + j]))
        j += 1
    if not out:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return tuple(np.concatenate(p) for p in zip(*out, strict=True))  # type: ignore[return-value]
