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
  its degree changed (Adamic–Adar's 1/ln degree) — each only while the
  movement this drift can explain stays within ``drift_tolerance``.

The last two spread a change over a whole hub: one new mention of the owner
moves the Jaccard of every pair that includes the owner and the Adamic–Adar of
every pair the owner neighbours, each by a hair. So each entity carries the
change since its pairs were last all recomputed, and a pair whose bounded
movement (``drift``: from its stored signals and its ends' and common
neighbours' carried change) stays within ``drift_tolerance`` keeps its stored
values. The bound: a stored edge's signals are never further than
``write_tolerance`` (weighted sum of absolute differences, the composite's
scale) from a full recompute's, of which ``drift_tolerance`` is the drift
left unapplied and the rest the change below which a recomputed edge is not
rewritten; ``tests/store/test_graph_drift.py`` holds it night after night.
With ``drift_tolerance=0`` and ``write_tolerance=0`` an incremental run leaves
exactly what a full recompute would; ``full=True`` recomputes everything and
clears the carried drift. When the change reaches more than half of the pairs,
the run computes everything the full way (the per-pair path costs more per
pair than the whole-graph one).

Writes go through the audited path: new pairs are inserted, a stored edge is
updated only when its status changes or its signals moved by more than
``write_tolerance − drift_tolerance``, so a rerun on unchanged data writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import polars as pl

from memvault.graph import incremental as inc
from memvault.graph import signals as sg
from memvault.graph.config import SIGNALS, GraphConfig
from memvault.graph.inputs import (
    Graph,
    Inputs,
    attach_vectors,
    build_graph,
    inputs_from_frames,
    load,
    missing_vectors,
    stored_values,
)
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.runs import save_run_cursor
from memvault.store.tracked import RunRow, tracked_run

PHASE = "dream_signal"
CURSOR_KEY = inc.CURSOR_KEY


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
    carried_entities: int = 0  # entities carrying drift left unapplied (graph/drift.py)
    scope: dict[str, int] = field(default_factory=dict)
    semantic_model: str | None = None
    entities_without_vector: int = 0
    baseline_edges: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: Ids of the edges this refresh made connected (new, or pending before); not in as_dict.
    newly_connected: list[str] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "newly_connected"}

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows of this refresh: flat figures, timings as a table."""
        return {
            "edges_connected": self.connected,
            "edges_pending": self.pending,
            "edges_inserted": self.inserted,
            "edges_updated": self.updated,
            "edges_archived": self.archived,
            "incremental": self.incremental,
            "refresh": self.reason or ("incremental" if self.incremental else "full"),
            "pairs_considered": self.considered,
            "entities_touched": self.touched_entities,
            "timings_s": dict(self.seconds),
        }


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


def refresh_edges(
    store: Store,
    config: GraphConfig,
    run_id: str,
    *,
    full: bool = False,
    dry_run: bool = False,
    full_every_days: float | None = None,
) -> EdgeReport:
    """Bring table ``edges`` up to date (incrementally unless ``full``, nothing to start from,
    or no full refresh in ``full_every_days`` days).

    ``run_id`` owns the audit rows and, on its ``runs`` row, the cursor of the next
    incremental run (a run row of kind ``graph`` is created when there is none).
    A dry run computes and reports but writes nothing.
    """
    timer = _Timer()
    cursor = None if full else inc.last_cursor(store)
    reason = inc.full_reason(cursor, config, full, full_every_days, utcnow())
    with timer.step("load"):
        inputs = load(store, config)
    changes = None
    if reason is None and cursor is not None:
        with timer.step("detect"):
            changes = inc.graph_changes(store, cursor, inputs.audit_hw)
        reason = inc.change_too_large(cursor, inputs, changes)
    with timer.step("graph"):
        graph = build_graph(inputs)
    report = EdgeReport(
        run_id=run_id,
        incremental=reason is None,
        dry_run=dry_run,
        reason=reason or "incremental",
        entities=inputs.n,
        pairs=len(graph.keys),
        semantic_model=inputs.model,
        entities_without_vector=missing_vectors(store, inputs.model),
    )
    stored = inputs.stored
    if reason is None:
        assert cursor is not None and changes is not None
        with timer.step("detect"):
            plan = inc.plan_incremental(store, config, inputs, graph, cursor, changes)
        if plan.scope.sum() > inc.FULL_WHEN_SHARE * max(len(graph.keys), 1):
            report.incremental = False
            report.reason = f"{plan.scope.mean():.0%} of pairs changed: computed in full"
            plan = inc.Plan.everything(graph)
    else:
        plan = inc.Plan.everything(graph)
    report.touched_entities = plan.touched
    report.carried_entities = len(plan.deferred)
    report.considered = int(plan.scope.sum())
    report.scope = plan.parts
    with timer.step("vectors"):  # of the recomputed pairs' ends only
        ends = None if plan.scope.all() else np.union1d(graph.u[plan.scope], graph.v[plan.scope])
        attach_vectors(store, inputs, ends)
    with timer.step("signals"):
        fresh = _signals(config, inputs, graph, plan)
    with timer.step("compare"):
        inserts, updates, archives = _changes(store, config, graph, fresh, stored, plan.values)
    report.inserted, report.updated, report.archived = inserts.height, updates.height, len(archives)
    report.baseline_edges = stored.filter(pl.col("status") != "archived").height
    report.newly_connected = _newly_connected(inserts, updates, stored)
    next_cursor = {
        "audit_id": inputs.audit_hw,
        "vectors_at": inputs.vectors_at.isoformat() if inputs.vectors_at else None,
        "model": inputs.model,
        "config": config.edge_fingerprint(),
        "carried": plan.deferred,
        "at": utcnow().isoformat(),
        # the last refresh that computed every pair (the weekly pass counts from it)
        "full_at": utcnow().isoformat()
        if not report.incremental or cursor is None
        else cursor.get("full_at") or cursor.get("at"),
    }
    if not dry_run:
        with timer.step("write"):
            _write(store, run_id, config, inserts, updates, archives, next_cursor)
    report.connected, report.pending = _status_counts(fresh, stored, inserts, updates, archives)
    report.seconds = timer.seconds
    return report


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
    inputs = inputs_from_frames(config, entities, mentions, vectors)
    graph = build_graph(inputs)
    return (
        _signals(config, inputs, graph, inc.Plan.everything(graph))
        .drop("key")
        .select("id", "source_id", "target_id", *SIGNALS, "composite_weight", "status")
        .sort("id")
    )


# -- the signals -----------------------------------------------------------------------------


def _signals(config: GraphConfig, inputs: Inputs, graph: Graph, plan: inc.Plan) -> pl.DataFrame:
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
        "semantic_similarity": _semantic(inputs, u, v),
    }
    f = sg.inverse_log_degree(graph.degree)
    raw = sg.adamic_adar_scope(graph.adj, f, graph.u, graph.v, scope)
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


def _semantic(inputs: Inputs, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cosine of the pairs' vectors, 0 where an end has none (or its vector was not read)."""
    ru, rv = inputs.vector_row[u], inputs.vector_row[v]
    both = (ru >= 0) & (rv >= 0)
    out = np.zeros(len(u), dtype=np.float64)
    every = np.ones(len(inputs.vectors), dtype=bool)
    out[both] = sg.cosine_pairs(inputs.vectors, every, ru[both], rv[both])
    return out


# -- comparing with what is stored -----------------------------------------------------------

_VALUE_COLUMNS = (*SIGNALS, "composite_weight")


def _changes(
    store: Store,
    config: GraphConfig,
    graph: Graph,
    fresh: pl.DataFrame,
    stored: pl.DataFrame,
    values: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """(rows to insert, rows to update, ids to archive); the stored values are read for the
    recomputed pairs' edges only (all of them when every pair was recomputed), unless the
    plan read them already (``values``)."""
    now = utcnow()
    by_key = stored.filter(pl.col("key").is_in(fresh["key"].implode())).select(
        "key", pl.col("id").alias("stored_id"), pl.col("status").alias("old_status")
    )
    every = fresh.height == len(graph.keys)
    ids = None if every else by_key["stored_id"].to_list()
    if values is None:
        values = stored_values(store, ids, stored.height)
    values = values.select(
        pl.col("id").alias("stored_id"), *[pl.col(c).alias(f"old_{c}") for c in _VALUE_COLUMNS]
    )
    by_key = by_key.join(values, on="stored_id", how="left")
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
            | (moved > config.rewrite_above())
            | pl.any_horizontal([pl.col(f"old_{c}").is_null() for c in _VALUE_COLUMNS])
        )
        .select(pl.col("stored_id").alias("id"), *_VALUE_COLUMNS, "status")
        .with_columns(updated_at=pl.lit(now))
    )
    live = stored.filter(pl.col("status") != "archived")
    gone = live.filter(pl.col("key").is_null() | ~pl.col("key").is_in(graph.keys))
    return inserts, updates, sorted(gone["id"].to_list())


def _newly_connected(
    inserts: pl.DataFrame, updates: pl.DataFrame, stored: pl.DataFrame
) -> list[str]:
    """Edges connected after this refresh that were not connected before it."""
    promoted = (
        updates.filter(pl.col("status") == "connected")
        .join(stored.select("id", pl.col("status").alias("old_status")), on="id", how="left")
        .filter(pl.col("old_status").fill_null("") != "connected")
    )
    fresh = inserts.filter(pl.col("status") == "connected")
    return sorted([*fresh["id"].to_list(), *promoted["id"].to_list()])


def _write(
    store: Store,
    run_id: str,
    config: GraphConfig,
    inserts: pl.DataFrame,
    updates: pl.DataFrame,
    archives: list[str],
    cursor: dict[str, Any],
) -> None:
    """Write the changes under ``run_id``: the dream's run when it is one of its stages, else
    a run of its own, finished (or failed) here."""
    run = (
        tracked_run(store, "graph", {"stage": "edges"}, run_id=run_id)
        if store.run(run_id) is None
        else nullcontext(RunRow(run_id))
    )
    with run as row:
        _write_edges(store, run_id, config, inserts, updates, archives, cursor)
        row.stats = {
            "inserted": inserts.height,
            "updated": updates.height,
            "archived": len(archives),
        }


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
    reason = f"composite weight, settings {config.edge_fingerprint()}"
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
        save_run_cursor(store, run_id, state)


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
