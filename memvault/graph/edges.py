"""E1/E2/E5: table ``edges`` — every co-mentioned entity pair with its five signals.

A pair is a *candidate* when both entities are mentioned in the same active
block (a memory or a turn); sharing a session only feeds ``session_overlap``,
so a long session does not wire everything it touched to everything else.
Mentions in archived blocks and of archived entities do not count; the edges
of a pair that lost all its evidence, or of an archived entity, are archived
(never deleted).

Incremental runs (E5) start from the cursor the last run left on its run
row (``runs.cursor["graph_edges"]``): the audit-log position and the newest
entity vector it saw. What changed since then (mentions, blocks, entities,
vectors) marks *dirty* entities and sessions, and only these pairs are
recomputed, exactly:

* pairs that share a dirty session (their shared blocks/sessions changed),
  new pairs, and pairs of entities whose type, status or vector changed;
* pairs that gained or lost a common neighbour (triangles through an edge
  that appeared or disappeared);
* pairs incident to a dirty entity, because its session count changed
  (Jaccard), and pairs that have a dirty entity as common neighbour, because
  its degree changed (Adamic–Adar's 1/ln degree).

The last two sets are where the maths spreads a change over a whole hub: one
new mention of the owner changes the Jaccard of every pair that includes the
owner and the Adamic–Adar of every pair the owner neighbours, each by a
hair. So a *hub* (≥ ``hub_degree`` partners) whose relative growth since its
edges were last recomputed — sessions, and 1/ln degree — stays within
``drift_tolerance`` keeps its untouched edges as stored and carries the
accumulated growth in the cursor; once past it, all its edges are
recomputed. The error this leaves on an untouched edge is bounded: Jaccard
moves by at most J·(g_u + g_v) and the raw Adamic–Adar by at most
``drift_tolerance``·raw (≤ drift_tolerance/4 after normalization).
``drift_tolerance=0`` makes every incremental run exact; ``full=True``
recomputes everything and clears the carried drift.

Writes go through the audited path: new pairs are inserted, a stored edge is
updated only when its status changes or its signals moved by more than
``write_tolerance``, so a rerun on unchanged data writes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from memvault.graph import signals as sg
from memvault.graph.config import SIGNALS, GraphConfig
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.vectors import load_vectors

CURSOR_KEY = "graph_edges"
PHASE = "dream_signal"
#: Above this share of recomputed pairs (or of changed rows among the mentions, with at least
#: FULL_WHEN_CHANGES changed rows) an incremental run computes everything the full way.
FULL_WHEN_SHARE = 0.5
FULL_WHEN_CHANGES = 10_000

ACTIVE_MENTIONS_SQL = """
-- Mentions that count: of active entities, in an active block or with no block (session-level).
SELECT m.entity_id, m.block_id, COALESCE(m.session_id, b.session_id) AS session_id
FROM mentions m
JOIN entities e ON e.id = m.entity_id AND e.status = 'active'
LEFT JOIN blocks b ON b.id = m.block_id
WHERE m.block_id IS NULL OR b.status = 'active'
"""

STORED_EDGES_SQL = """
SELECT id, source_id, target_id, co_occurrence, session_overlap, adamic_adar, type_affinity,
       semantic_similarity, composite_weight, status
FROM edges
"""


@dataclass
class EdgeReport:
    """What one refresh did (``as_dict`` is the Dagster metadata / run-report form)."""

    run_id: str
    incremental: bool
    dry_run: bool
    reason: str
    entities: int = 0
    pairs: int = 0
    considered: int = 0
    inserted: int = 0
    updated: int = 0
    archived: int = 0
    connected: int = 0
    pending: int = 0
    touched_entities: int = 0
    deferred_hubs: int = 0
    scope: dict[str, int] = field(default_factory=dict)
    semantic_model: str | None = None
    entities_without_vector: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Inputs:
    ids: list[str]
    type_code: np.ndarray
    type_matrix: np.ndarray
    entity: np.ndarray  # mention rows: entity code
    block: np.ndarray  # block code, -1 without a block
    session: np.ndarray  # session code, -1 without a session
    session_names: pl.Series  # session id of each code (sorted)
    vectors: np.ndarray
    has_vector: np.ndarray
    model: str | None
    stored: pl.DataFrame  # stored edges with key (null when an end is not active)
    audit_hw: int
    vectors_at: dt.datetime | None

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def n_sessions(self) -> int:
        return self.session_names.len()

    def entity_codes(self, values: pl.Series) -> np.ndarray:
        return _code(values, pl.Series(self.ids, dtype=pl.Utf8))


@dataclass
class _Graph:
    u: np.ndarray
    v: np.ndarray
    count: np.ndarray
    keys: np.ndarray
    adj: sg.Incidence
    sessions: sg.Incidence

    @property
    def degree(self) -> np.ndarray:
        return self.adj.sizes


class _Timer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - start, 4)


# -- public entry ----------------------------------------------------------------------------


def refresh_edges(
    store: Store,
    config: GraphConfig,
    run_id: str,
    *,
    full: bool = False,
    dry_run: bool = False,
) -> EdgeReport:
    """Bring table ``edges`` up to date (incrementally unless ``full`` or nothing to start from).

    ``run_id`` owns the audit rows and, on its ``runs`` row, the cursor of the next
    incremental run (a run row of kind ``graph`` is created when there is none).
    A dry run computes and reports but writes nothing.
    """
    timer = _Timer()
    cursor = None if full else _last_cursor(store)
    reason = _full_reason(cursor, config, full)
    with timer.step("load"):
        inputs = _load(store, config, cursor)
    if reason is None and cursor is not None:
        reason = _change_too_large(store, cursor, inputs)
    with timer.step("graph"):
        graph = _build_graph(inputs)
    report = EdgeReport(
        run_id=run_id,
        incremental=reason is None,
        dry_run=dry_run,
        reason=reason or "incremental",
        entities=inputs.n,
        pairs=len(graph.keys),
        semantic_model=inputs.model,
        entities_without_vector=int(inputs.n - inputs.has_vector.sum()),
    )
    stored = inputs.stored
    if reason is None:
        assert cursor is not None
        with timer.step("detect"):
            plan = _plan_incremental(store, config, inputs, graph, cursor)
        if plan.scope.sum() > FULL_WHEN_SHARE * max(len(graph.keys), 1):
            report.incremental = False
            report.reason = f"{plan.scope.mean():.0%} of pairs changed: computed in full"
            plan = _Plan.everything(graph)
    else:
        plan = _Plan.everything(graph)
    report.touched_entities = plan.touched
    report.deferred_hubs = len(plan.deferred)
    report.considered = int(plan.scope.sum())
    report.scope = plan.parts
    with timer.step("signals"):
        fresh = _signals(config, inputs, graph, plan)
    with timer.step("compare"):
        inserts, updates, archives = _changes(config, inputs, graph, fresh, stored)
    report.inserted, report.updated, report.archived = inserts.height, updates.height, len(archives)
    next_cursor = {
        "audit_id": inputs.audit_hw,
        "vectors_at": inputs.vectors_at.isoformat() if inputs.vectors_at else None,
        "model": inputs.model,
        "config": config.edge_fingerprint(),
        "deferred": plan.deferred,
        "at": utcnow().isoformat(),
    }
    if not dry_run:
        with timer.step("write"):
            _write(store, run_id, config, inserts, updates, archives, next_cursor)
    report.connected, report.pending = _status_counts(fresh, stored, inserts, updates, archives)
    report.seconds = timer.seconds
    return report


# -- cursor ----------------------------------------------------------------------------------


def _last_cursor(store: Store) -> dict[str, Any] | None:
    """The newest edge cursor on a run that was not undone (its edges are still in place)."""
    rows = store.fetch(
        "SELECT cursor FROM runs WHERE status <> 'undone' AND cursor LIKE :pattern "
        "ORDER BY started_at DESC, id DESC LIMIT 1",
        {"pattern": f'%"{CURSOR_KEY}"%'},
    )
    if not rows:
        return None
    value = json.loads(rows[0][0] or "{}").get(CURSOR_KEY)
    return value if isinstance(value, dict) else None


def _full_reason(cursor: dict[str, Any] | None, config: GraphConfig, full: bool) -> str | None:
    if full:
        return "full recompute requested"
    if cursor is None:
        return "no earlier edge run"
    if cursor.get("config") != config.edge_fingerprint():
        return "edge settings changed"
    return None


def _change_too_large(store: Store, cursor: dict[str, Any], inputs: _Inputs) -> str | None:
    """A reason to compute everything when starting from the cursor is no cheaper."""
    if cursor.get("model") != inputs.model:
        return f"embedding model changed ({cursor.get('model')} → {inputs.model})"
    changes = store.fetch(
        "SELECT count(*) FROM audit_log WHERE id > :lo AND id <= :hi "
        "AND target_table IN ('mentions', 'blocks', 'entities')",
        {"lo": int(cursor.get("audit_id", 0)), "hi": inputs.audit_hw},
    )[0][0]
    if changes > max(FULL_WHEN_CHANGES, FULL_WHEN_SHARE * len(inputs.entity)):
        return f"{changes:,} changed mentions, blocks and entities: computed in full"
    return None


# -- loading ---------------------------------------------------------------------------------


def _resolve_model(store: Store, wanted: str | None) -> str | None:
    if wanted:
        return wanted
    rows = store.fetch(
        "SELECT model, count(*) AS n FROM embeddings WHERE target_kind = 'entity' "
        "GROUP BY model ORDER BY n DESC, model LIMIT 1"
    )
    return str(rows[0][0]) if rows else None


def _code(values: pl.Series, categories: pl.Series) -> np.ndarray:
    """Position of each value in ``categories`` (distinct, sorted); -1 for nulls and strangers."""
    enum = pl.Enum(categories)
    codes = values.cast(pl.Utf8).cast(enum, strict=False).to_physical().cast(pl.Int64)
    return codes.fill_null(-1).to_numpy()


def _categories(values: pl.Series) -> pl.Series:
    return values.cast(pl.Utf8).drop_nulls().unique().sort()


def _load(store: Store, config: GraphConfig, cursor: dict[str, Any] | None) -> _Inputs:
    # High-water marks first: whatever lands later is seen again by the next run.
    audit_hw = int(store.fetch("SELECT COALESCE(max(id), 0) FROM audit_log")[0][0])
    model = _resolve_model(store, config.embedding_model)
    vectors_at = None
    vectors: tuple[list[str], np.ndarray] | None = None
    if model:
        vectors_at = store.fetch(
            "SELECT max(created_at) FROM embeddings WHERE target_kind = 'entity' AND model = :m",
            {"m": model},
        )[0][0]
        vectors = load_vectors(store, "entity", model)
    inputs = _inputs(
        config,
        store.fetch_df("SELECT id, entity_type FROM entities WHERE status = 'active'"),
        store.fetch_df(ACTIVE_MENTIONS_SQL),
        vectors,
    )
    inputs.model = model
    inputs.stored = _stored_with_keys(store.fetch_df(STORED_EDGES_SQL), pl.Series(inputs.ids))
    inputs.audit_hw, inputs.vectors_at = audit_hw, vectors_at
    return inputs


def _inputs(
    config: GraphConfig,
    entities: pl.DataFrame,
    mentions: pl.DataFrame,
    vectors: tuple[list[str], np.ndarray] | None,
) -> _Inputs:
    """Integer-coded inputs from plain frames (see :func:`compute_edges`)."""
    if entities.is_empty():
        entities = pl.DataFrame(schema={"id": pl.Utf8, "entity_type": pl.Utf8})
    entities = entities.select("id", "entity_type").cast(pl.Utf8).sort("id")
    id_series = entities["id"]
    ids = id_series.to_list()
    types = _categories(entities["entity_type"])
    type_matrix = np.array(
        [[config.affinity(a, b) for b in types.to_list()] for a in types.to_list()],
        dtype=np.float64,
    ).reshape(types.len(), types.len())
    if mentions.is_empty():
        mentions = pl.DataFrame(schema={"entity_id": pl.Utf8, "block_id": pl.Utf8,
                                        "session_id": pl.Utf8})  # fmt: skip
    entity = _code(mentions["entity_id"], id_series)
    block = _code(mentions["block_id"], _categories(mentions["block_id"]))
    session_names = _categories(mentions["session_id"])
    session = _code(mentions["session_id"], session_names)
    keep = entity >= 0
    matrix = np.zeros((len(ids), 0), dtype=np.float64)
    has_vector = np.zeros(len(ids), dtype=bool)
    if vectors is not None and vectors[0]:
        rows = _code(pl.Series(vectors[0], dtype=pl.Utf8), id_series)
        ok = rows >= 0
        matrix = np.zeros((len(ids), vectors[1].shape[1]), dtype=np.float64)
        matrix[rows[ok]] = sg.unit_rows(vectors[1][ok])
        has_vector[rows[ok]] = np.linalg.norm(matrix[rows[ok]], axis=1) > 0
    return _Inputs(
        ids=ids,
        type_code=_code(entities["entity_type"], types),
        type_matrix=type_matrix,
        entity=entity[keep],
        block=block[keep],
        session=session[keep],
        session_names=session_names,
        vectors=matrix,
        has_vector=has_vector,
        model=None,
        stored=_stored_with_keys(pl.DataFrame(), id_series),
        audit_hw=0,
        vectors_at=None,
    )


def compute_edges(
    entities: pl.DataFrame,
    mentions: pl.DataFrame,
    config: GraphConfig | None = None,
    vectors: tuple[list[str], np.ndarray] | None = None,
) -> pl.DataFrame:
    """Every candidate pair's five signals, composite and status, from plain frames (no store).

    ``entities``: id, entity_type (the active ones); ``mentions``: entity_id, block_id (null for
    a session-level mention), session_id (the ones that count); ``vectors``: ids and a matrix
    as :func:`memvault.vectors.load_vectors` returns them. Rows are sorted by id.
    """
    config = config or GraphConfig()
    inputs = _inputs(config, entities, mentions, vectors)
    graph = _build_graph(inputs)
    return (
        _signals(config, inputs, graph, _Plan.everything(graph))
        .drop("key")
        .select("id", "source_id", "target_id", *SIGNALS, "composite_weight", "status")
        .sort("id")
    )


def _stored_with_keys(stored: pl.DataFrame, ids: pl.Series) -> pl.DataFrame:
    """Stored edges with the pair key of their entity codes (null when an end is not active)."""
    schema = {
        "id": pl.Utf8,
        "source_id": pl.Utf8,
        "target_id": pl.Utf8,
        **{name: pl.Float64 for name in (*SIGNALS, "composite_weight")},
        "status": pl.Utf8,
    }
    if stored.is_empty():
        stored = pl.DataFrame(schema=schema)
    stored = stored.cast(schema)  # type: ignore[arg-type]
    n = ids.len()
    a = pl.Series(_code(stored["source_id"], ids)).replace(-1, None)
    b = pl.Series(_code(stored["target_id"], ids)).replace(-1, None)
    return stored.with_columns(
        key=pl.min_horizontal(a, b) * n + pl.max_horizontal(a, b),
    )


# -- the co-mention graph --------------------------------------------------------------------


def _build_graph(inputs: _Inputs) -> _Graph:
    n = inputs.n
    in_block = inputs.block >= 0
    u, v, count = sg.co_mention_pairs(inputs.entity[in_block], inputs.block[in_block], n)
    in_session = inputs.session >= 0
    sessions = sg.Incidence.from_pairs(
        inputs.entity[in_session], inputs.session[in_session], n, max(inputs.n_sessions, 1)
    )
    return _Graph(
        u=u, v=v, count=count, keys=u * n + v, adj=sg.adjacency(u, v, n), sessions=sessions
    )


# -- what an incremental run recomputes ------------------------------------------------------


@dataclass
class _Plan:
    scope: np.ndarray  # bool per pair of the graph: recompute
    touched: int
    deferred: dict[str, list[float | int | None]]
    parts: dict[str, int] = field(default_factory=dict)  # pairs each rule added
    pairs: sg.KeySet | None = None  # the graph's pair keys

    @classmethod
    def everything(cls, graph: _Graph) -> _Plan:
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


def _dirty(store: Store, inputs: _Inputs, cursor: dict[str, Any]) -> tuple[pl.DataFrame, set[str]]:
    """Mention rows (entity id, session id) whose counting may have changed since the cursor,
    and the ids of entities whose own row or vector changed."""
    audit = store.fetch_df(
        "SELECT target_table, target_id, before_image FROM audit_log "
        "WHERE id > :lo AND id <= :hi AND target_table IN ('mentions', 'blocks', 'entities')",
        {"lo": int(cursor.get("audit_id", 0)), "hi": inputs.audit_hw},
    )
    empty = pl.DataFrame(schema={"entity_id": pl.Utf8, "session_id": pl.Utf8})
    frames = [empty]
    changed: set[str] = set()
    if audit.height:
        audit = audit.cast({"target_table": pl.Utf8, "target_id": pl.Utf8, "before_image": pl.Utf8})
        mention_ids = audit.filter(pl.col("target_table") == "mentions")["target_id"].to_list()
        block_ids = audit.filter(pl.col("target_table") == "blocks")["target_id"].to_list()
        changed = set(audit.filter(pl.col("target_table") == "entities")["target_id"].to_list())
        for column, ids in (("id", mention_ids), ("block_id", block_ids)):
            if ids:
                frames.append(
                    store.fetch_df(
                        "SELECT m.entity_id, COALESCE(m.session_id, b.session_id) AS session_id "
                        f"FROM mentions m LEFT JOIN blocks b ON b.id = m.block_id "
                        f"WHERE m.{column} = ANY(:ids)",
                        {"ids": ids},
                    )
                )
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
            frames.append(
                store.fetch_df(
                    "SELECT NULL AS entity_id, session_id FROM blocks WHERE id = ANY(:ids)",
                    {"ids": block_ids},
                )
            )
    if inputs.model:
        since = cursor.get("vectors_at")
        sql = "SELECT target_id FROM embeddings WHERE target_kind = 'entity' AND model = :m"
        params: dict[str, Any] = {"m": inputs.model}
        if since:
            sql += " AND created_at > :t"
            params["t"] = dt.datetime.fromisoformat(since)
        changed |= {str(r[0]) for r in store.fetch(sql, params)}
    rows = pl.concat([f.cast({"entity_id": pl.Utf8, "session_id": pl.Utf8}) for f in frames])
    return rows, changed


def _plan_incremental(
    store: Store, config: GraphConfig, inputs: _Inputs, graph: _Graph, cursor: dict[str, Any]
) -> _Plan:
    n = inputs.n
    dirty_rows, changed_ids = _dirty(store, inputs, cursor)
    # Members of dirty sessions, as they count now and as they counted before.
    dirty_sessions = _categories(dirty_rows["session_id"])
    in_dirty = _isin(inputs.session, _code(dirty_sessions, inputs.session_names))
    now_names = inputs.session_names.gather(inputs.session[in_dirty])
    member_entity = np.concatenate(
        [inputs.entity[in_dirty], inputs.entity_codes(dirty_rows["entity_id"])]
    )
    member_session = np.concatenate(
        [_code(now_names, dirty_sessions), _code(dirty_rows["session_id"], dirty_sessions)]
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
    plan = _Plan(np.zeros(len(graph.keys), dtype=bool), 0, {}, pairs=pairs)
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

    # Drift: session counts (Jaccard) and degrees (Adamic–Adar) of dirty entities.
    carried = cursor.get("deferred", {}) or {}
    g_acc = np.zeros(n)
    d_ref = old_adj.sizes.astype(np.int64).copy()
    names = sorted(carried)
    for code, name in zip(inputs.entity_codes(pl.Series(names, dtype=pl.Utf8)), names, strict=True):
        if code >= 0:
            g, d = carried[name]
            g_acc[code] = float(g or 0.0)
            if d is not None:
                d_ref[code] = int(d)
    a_now = np.maximum(graph.sessions.sizes, 1)
    growth = g_acc + dirty_count / a_now
    degree = graph.degree
    f_now = sg.inverse_log_degree(degree)
    f_ref = sg.inverse_log_degree(d_ref)
    shift = np.abs(f_now - f_ref)
    rel_shift = np.divide(shift, f_now, out=np.full(n, np.inf), where=f_now > 0)
    rel_shift[shift == 0] = 0.0
    hub = degree >= config.hub_degree
    eps = config.drift_tolerance
    refresh_j = (dirty_count > 0) & ~(hub & (growth <= eps))
    refresh_a = (shift > 0) & ~(hub & (rel_shift <= eps))
    refresh_j |= changed

    plan.add("entity_refreshed", refresh_j[graph.u] | refresh_j[graph.v])
    a, b = _pairs_among_neighbours(graph.adj, np.nonzero(refresh_a)[0], pairs, n)
    plan.add_keys("neighbour_degree_changed", a * n + b)

    deferred: dict[str, list[float | int | None]] = {}
    keep_j = ~refresh_j & (growth > 0)
    keep_a = (shift > 0) & ~refresh_a
    for k in np.nonzero(keep_j | keep_a)[0].tolist():
        deferred[inputs.ids[k]] = [
            float(growth[k]) if keep_j[k] else 0.0,
            int(d_ref[k]) if keep_a[k] else None,
        ]
    plan.touched = int(((dirty_count > 0) | changed | (shift > 0)).sum())
    plan.deferred = deferred
    return plan


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
    """Edges (a, b) with both ends adjacent to one of ``centres`` (triangles through them)."""
    if len(centres) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    edge_keys = edges.keys
    sizes = adj.sizes[centres]
    pair_cost = sizes * (sizes - 1) // 2
    big = pair_cost > len(edge_keys)
    out_a: list[np.ndarray] = []
    out_b: list[np.ndarray] = []
    eu, ev = edge_keys // max(n, 1), edge_keys % max(n, 1)
    for centre in centres[big]:  # a hub: scan the edge list once
        mask = np.zeros(n, dtype=bool)
        mask[adj.indices[adj.indptr[centre] : adj.indptr[centre + 1]]] = True
        both = mask[eu] & mask[ev]
        out_a.append(eu[both])
        out_b.append(ev[both])
    small = centres[~big]
    for part in sg._chunks(pair_cost[~big]):
        group, members = adj.expand(small[part])
        a, b, _ = sg.co_mention_pairs(members, group, n)
        hit = edges.contains(a * n + b)
        out_a.append(a[hit])
        out_b.append(b[hit])
    return np.concatenate(out_a), np.concatenate(out_b)


# -- the signals -----------------------------------------------------------------------------


def _signals(config: GraphConfig, inputs: _Inputs, graph: _Graph, plan: _Plan) -> pl.DataFrame:
    """The five signals, composite and status of every pair in scope."""
    scope = plan.scope
    u, v = graph.u[scope], graph.v[scope]
    values: dict[str, np.ndarray] = {
        "co_occurrence": sg.normalize_co_occurrence(
            graph.count[scope], config.co_occurrence_saturation
        ),
        "session_overlap": sg.jaccard(
            sg.common_sum(graph.sessions, u, v),
            graph.sessions.sizes[u],
            graph.sessions.sizes[v],
        ),
        "type_affinity": sg.type_affinity_pairs(inputs.type_code, inputs.type_matrix, u, v),
        "semantic_similarity": sg.cosine_pairs(inputs.vectors, inputs.has_vector, u, v),
    }
    f = sg.inverse_log_degree(graph.degree)
    raw = (
        sg.adamic_adar_all(graph.adj, f, graph.u, graph.v)
        if scope.all()
        else sg.adamic_adar_pairs(graph.adj, f, u, v)
    )
    values["adamic_adar"] = sg.normalize_adamic_adar(raw, config.adamic_adar_half)
    weight = sg.composite(values, config.weights.as_dict())
    ids = np.asarray(inputs.ids, dtype=object)
    return pl.DataFrame(
        {
            "key": graph.keys[scope],
            "source_id": ids[u].astype(str) if len(u) else np.zeros(0, dtype=str),
            "target_id": ids[v].astype(str) if len(v) else np.zeros(0, dtype=str),
            **{name: values[name] for name in SIGNALS},
            "composite_weight": weight,
        },
        schema_overrides={"source_id": pl.Utf8, "target_id": pl.Utf8},
    ).with_columns(
        id=pl.concat_str("source_id", pl.lit("|"), "target_id"),
        status=pl.when(pl.col("composite_weight") >= config.connect_threshold)
        .then(pl.lit("connected"))
        .otherwise(pl.lit("pending")),
    )


# -- comparing with what is stored -----------------------------------------------------------

_VALUE_COLUMNS = (*SIGNALS, "composite_weight")


def _changes(
    config: GraphConfig,
    inputs: _Inputs,
    graph: _Graph,
    fresh: pl.DataFrame,
    stored: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """(rows to insert, rows to update, ids to archive)."""
    now = utcnow()
    by_key = stored.filter(pl.col("key").is_in(fresh["key"].implode())).select(
        "key", pl.col("id").alias("stored_id"), *[pl.col(c).alias(f"old_{c}") for c in
                                                  (*_VALUE_COLUMNS, "status")]
    )  # fmt: skip
    joined = fresh.join(by_key, on="key", how="left")
    weights = config.weights.as_dict()
    moved = pl.sum_horizontal(
        [(pl.col(name) - pl.col(f"old_{name}")).abs() * weights[name] for name in SIGNALS]
    )
    columns = ["id", "source_id", "target_id", *_VALUE_COLUMNS, "status"]
    inserts = (
        joined.filter(pl.col("stored_id").is_null())
        .select(columns)
        .with_columns(updated_at=pl.lit(now))
    )
    known = joined.filter(pl.col("stored_id").is_not_null())
    updates = (
        known.filter(
            (pl.col("status") != pl.col("old_status"))
            | (moved > config.write_tolerance)
            | pl.any_horizontal([pl.col(f"old_{c}").is_null() for c in _VALUE_COLUMNS])
        )
        .select(pl.col("stored_id").alias("id"), *_VALUE_COLUMNS, "status")
        .with_columns(updated_at=pl.lit(now))
    )
    live = stored.filter(pl.col("status") != "archived")
    gone = live.filter(pl.col("key").is_null() | ~pl.col("key").is_in(graph.keys))
    return inserts, updates, sorted(gone["id"].to_list())


def _write(
    store: Store,
    run_id: str,
    config: GraphConfig,
    inserts: pl.DataFrame,
    updates: pl.DataFrame,
    archives: list[str],
    cursor: dict[str, Any],
) -> None:
    own_run = store.run(run_id) is None
    if own_run:
        store.begin_run("graph", {"stage": "edges"}, run_id=run_id)
    try:
        _write_edges(store, run_id, config, inserts, updates, archives, cursor)
    except Exception as exc:
        if own_run:
            store.finish_run(run_id, "failed", error=str(exc))
        raise
    if own_run:
        store.finish_run(
            run_id,
            "succeeded",
            {"inserted": inserts.height, "updated": updates.height, "archived": len(archives)},
        )


def _write_edges(
    store: Store,
    run_id: str,
    config: GraphConfig,
    inserts: pl.DataFrame,
    updates: pl.DataFrame,
    archives: list[str],
    cursor: dict[str, Any],
) -> None:
    """Inserts, updates, archives and the next cursor: one audited transaction."""
    reason = f"E2 composite, settings {config.edge_fingerprint()}"
    with store.mutation(run_id, PHASE) as m:
        if inserts.height:
            m.insert("edges", inserts, action="edge-insert", reason=reason)
        if updates.height:
            m.update_many("edges", updates, action="edge-update", reason=reason)
        if archives:
            m.update_many(
                "edges",
                pl.DataFrame(
                    {
                        "id": archives,
                        "status": ["archived"] * len(archives),
                        "updated_at": [utcnow()] * len(archives),
                    }
                ),
                action="edge-archive",
                reason="no co-mention left in an active block, or an entity is archived",
            )
        row = store.run(run_id)
        state = row["cursor"] if row else {}
        state[CURSOR_KEY] = cursor
        store.backend.execute(
            "UPDATE runs SET cursor = :c WHERE id = :id",
            {"id": run_id, "c": json.dumps(state, default=str, sort_keys=True)},
        )


def _status_counts(
    fresh: pl.DataFrame,
    stored: pl.DataFrame,
    inserts: pl.DataFrame,
    updates: pl.DataFrame,
    archives: list[str],
) -> tuple[int, int]:
    """Connected and pending edges after this refresh (stored, overlaid with the changes)."""
    status = stored.select("id", "status")
    changed = pl.concat([updates.select("id", "status"), inserts.select("id", "status")])
    if archives:
        changed = pl.concat(
            [changed, pl.DataFrame({"id": archives, "status": ["archived"] * len(archives)})]
        )
    merged = pl.concat([status.join(changed, on="id", how="anti"), changed])
    counts = dict(merged.group_by("status").len().iter_rows())
    return int(counts.get("connected", 0)), int(counts.get("pending", 0))
