"""The dream's graph stages, one asset each: edges → communities and centrality → discoveries.

The four are one step (a subsettable multi-asset): they share the store connection and the
graph loaded from it, and a step of its own would cost each a process start. Each asset is
materialized as soon as its stage is done, so the lineage shows every stage and a dream
re-executed from failure runs only the stages that did not finish: a later stage then reads
what the earlier ones wrote (the edges' audit rows, table ``communities``) instead of
computing them again. A dry run writes nothing, so a resumed dry run recomputes them.
"""

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg

from assets.common import (
    OWNERS,
    STORE_POOL,
    as_metadata,
    expectations_result,
    expectations_spec,
    kinds,
)
from assets.dream.stages import DREAM_GROUP, all_or_nothing, carry_on, dream_orient
from memvault.dream.report import record_stage, rows_written, stage_figures
from memvault.dream.stages import LOGGED_ACTIONS
from memvault.graph import GraphConfig, compute_centrality, detect_communities, refresh_edges
from memvault.graph.centrality import CentralityReport
from memvault.graph.communities import CommunityReport, stored_communities
from memvault.graph.discovery import DiscoveryReport, discover
from memvault.graph.edges import EdgeReport
from memvault.store import Store
from resources import DreamResource, StoreResource

#: The audit phase of every graph stage (the edges and the discoveries write under it).
PHASE = "dream_signal"

EDGES, COMMUNITIES, CENTRALITY, DISCOVERIES = (
    "dream_edges",
    "dream_communities",
    "dream_centrality",
    "dream_discoveries",
)

#: Where each stage's figures go in the dream report's graph section.
FIGURES = {EDGES: "edges", COMMUNITIES: "communities", CENTRALITY: "centrality",
           DISCOVERIES: "discovery"}  # fmt: skip

SPECS = [
    dg.AssetSpec(
        EDGES,
        deps=[dream_orient],
        description="Entity-to-entity edges in table edges, scored by five signals "
        "(co-occurrence, shared sessions, common neighbours, type affinity, embedding "
        "similarity); only the pairs the new data touches are rescored, unless a full refresh "
        "is due. An edge is connected once its composite weight clears the threshold.",
        kinds=kinds("polars", "numpy"),
        owners=OWNERS,
    ),
    dg.AssetSpec(
        COMMUNITIES,
        deps=[EDGES],
        description="Communities of the connected entity graph in table communities, found by "
        "weighted Leiden (a fixed seed: the same graph gives the same communities).",
        kinds=kinds("igraph"),
        owners=OWNERS,
    ),
    dg.AssetSpec(
        CENTRALITY,
        deps=[EDGES],
        description="PageRank and personalized PageRank of every connected entity in table "
        "centrality, restarting at the entities of the most recent sessions (what the owner is "
        "into now).",
        kinds=kinds("igraph"),
        owners=OWNERS,
    ),
    dg.AssetSpec(
        DISCOVERIES,
        deps=[EDGES, COMMUNITIES, CENTRALITY],
        description="Surprise discovery on this dream's graph: new links between communities, "
        "strong indirect pairs and facts the structure says are missing, queued in the "
        "discovery inbox (`memvault inbox`), never pushed; one already queued is not queued "
        "again.",
        kinds=kinds("polars", "numpy"),
        owners=OWNERS,
    ),
]


@dataclass
class _Graph:
    """The stages of one dream's graph, each computed once or read back when resumed."""

    store: Store
    config: GraphConfig
    run_id: str
    dry_run: bool
    edges: EdgeReport | None = None
    communities: CommunityReport | None = None
    centrality: CentralityReport | None = None

    def refresh_edges(self) -> EdgeReport:
        self.edges = refresh_edges(self.store, self.config, self.run_id, dry_run=self.dry_run)
        return self.edges

    def detect_communities(self) -> CommunityReport:
        self.communities = detect_communities(
            self.store, self.config, self.run_id, dry_run=self.dry_run
        )
        return self.communities

    def compute_centrality(self) -> CentralityReport:
        self.centrality = compute_centrality(
            self.store, self.config, self.run_id, dry_run=self.dry_run
        )
        return self.centrality

    def discover(self) -> DiscoveryReport:
        if self.edges is None:  # resumed: the audit log names the edges this dream connected
            self.edges = (
                self.refresh_edges()
                if self.dry_run
                else EdgeReport(run_id=self.run_id, incremental=True, dry_run=False, reason="")
            )
        if self.communities is None:
            self.communities = (
                self.detect_communities()
                if self.dry_run
                else stored_communities(self.store, self.run_id)
            )
        centrality = self.centrality or CentralityReport(run_id=self.run_id, dry_run=self.dry_run)
        return discover(
            self.store,
            self.config,
            self.run_id,
            self.edges,
            self.communities,
            centrality,
            dry_run=self.dry_run,
        )


def _record(store: Store, run_id: str, figures: dict[str, Any], actions: dict[str, int]) -> None:
    """Add this stage's figures to the dream report's graph section (kept across a resume)."""
    signal = stage_figures(store, run_id).get("signal", {})
    signal.update(figures)
    signal["actions"] = signal.get("actions", {}) | actions
    record_stage(store, run_id, "signal", signal)


@dg.multi_asset(
    name="dream_graph",
    specs=SPECS,
    check_specs=[expectations_spec("edges", EDGES)],
    group_name=DREAM_GROUP,
    can_subset=True,
    pool=STORE_POOL,
    description="The dream's graph stages in one step: edges, communities, centrality, "
    "discoveries.",
)
def dream_graph(
    context: dg.AssetExecutionContext, store: StoreResource, dream: DreamResource
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    selected = {key.to_user_string() for key in context.selected_asset_keys}
    with all_or_nothing(context, store, dream) as run_id, store.open() as opened:
        carry_on(opened, run_id)
        graph = _Graph(opened, GraphConfig.model_validate(dream.graph), run_id, dream.dry_run)
        for name, stage in (
            (EDGES, graph.refresh_edges),
            (COMMUNITIES, graph.detect_communities),
            (CENTRALITY, graph.compute_centrality),
            (DISCOVERIES, graph.discover),
        ):
            if name not in selected:
                continue
            started = time.monotonic()
            report = stage()
            yield _materialized(context, opened, name, report, round(time.monotonic() - started, 3))
            if name == EDGES and context.selected_asset_check_keys:
                # An incremental refresh wrote a few edges: those are checked, not the store's.
                changed_by = run_id if getattr(report, "incremental", False) else None
                yield expectations_result(opened, "edges", EDGES, changed_by=changed_by)


def _materialized(
    context: dg.AssetExecutionContext, store: Store, name: str, report: Any, seconds: float
) -> dg.MaterializeResult:
    """Record one stage on the dream and say what it did."""
    run_id, dry_run = report.run_id, report.dry_run
    actions: dict[str, int] = {}
    if isinstance(report, EdgeReport):
        actions = {"edge-insert": report.inserted, "edge-update": report.updated}
    if isinstance(report, DiscoveryReport):
        actions = {"discover": 0 if dry_run else sum(report.written.values())}
        for item in report.discoveries[:LOGGED_ACTIONS]:
            context.log.info(f"{'would queue' if dry_run else 'queued'}: {item.explanation}")
    _record(store, run_id, {FIGURES[name]: report.as_dict()}, actions)
    extra = {"rows_written": rows_written(store, run_id, PHASE)} if actions else {}
    return dg.MaterializeResult(
        asset_key=name,
        metadata={
            "dream_run_id": run_id,
            "dry_run": dry_run,
            **as_metadata(report.metadata()),
            **extra,
            "duration_s": seconds,
        },
    )
