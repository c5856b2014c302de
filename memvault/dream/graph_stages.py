"""The dream's graph stages as a track: edges → communities and centrality → discoveries.

Each stage is computed once, or read back when the dream is resumed: a dream re-executed
from failure runs only the stages that did not finish, and a later stage then reads what the
earlier ones wrote (the edges' audit rows, table ``communities``) instead of computing them
again. A dry run writes nothing, so a resumed dry run recomputes them. Every stage adds its
figures to the dream report's graph section (kept across a resume).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from memvault.dream.report import record_stage, rows_written, stage_figures
from memvault.dream.stages import LOGGED_ACTIONS
from memvault.graph import GraphConfig, compute_centrality, detect_communities, refresh_edges
from memvault.graph.centrality import CentralityReport
from memvault.graph.communities import CommunityReport, stored_communities
from memvault.graph.discovery import DiscoveryReport, discover
from memvault.graph.edges import EdgeReport
from memvault.stage import Report, Stage, Verdict
from memvault.store import Store

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


@dataclass(frozen=True)
class GraphStageReport:
    """One graph stage's report, with the dream it belongs to and the rows it wrote."""

    report: Any
    run_id: str
    dry_run: bool
    written: int | None = None

    def metadata(self) -> dict[str, Any]:
        extra = {} if self.written is None else {"rows_written": self.written}
        return {
            "dream_run_id": self.run_id,
            "dry_run": self.dry_run,
            **self.report.metadata(),
            **extra,
        }


@dataclass
class DreamGraph:
    """The stages of one dream's graph on one open store; ``log`` hears each discovery."""

    store: Store
    config: GraphConfig
    run_id: str
    dry_run: bool
    log: Callable[[str], None] = print
    #: Refresh every edge this time (on demand); else a full refresh when none ran in
    #: ``full_every_days`` days. A full refresh partitions from scratch (cold Leiden).
    full: bool = False
    full_every_days: float | None = None
    edges: EdgeReport | None = None
    communities: CommunityReport | None = None
    centrality: CentralityReport | None = None

    def stages(self) -> list[Stage]:
        work = {
            EDGES: (self.refresh_edges, ("edges",)),
            COMMUNITIES: (self.detect_communities, ("communities",)),
            CENTRALITY: (self.compute_centrality, ("centrality",)),
            DISCOVERIES: (self.discover, ("discovery_inbox",)),
        }
        return [
            Stage(name, partial(self._recorded, name, compute), writes)
            for name, (compute, writes) in work.items()
        ]

    def refresh_edges(self) -> EdgeReport:
        self.edges = refresh_edges(
            self.store,
            self.config,
            self.run_id,
            full=self.full,
            dry_run=self.dry_run,
            full_every_days=self.full_every_days,
        )
        return self.edges

    def detect_communities(self) -> CommunityReport:
        # After an incremental edge refresh Leiden starts from last night's partition (or does
        # not run when the connected graph is unchanged); after a full one, from scratch.
        self.communities = detect_communities(
            self.store,
            self.config,
            self.run_id,
            dry_run=self.dry_run,
            warm=self.edges is not None and self.edges.incremental,
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
        found = discover(
            self.store,
            self.config,
            self.run_id,
            self.edges,
            self.communities,
            centrality,
            dry_run=self.dry_run,
        )
        for item in found.discoveries[:LOGGED_ACTIONS]:
            self.log(f"{'would queue' if self.dry_run else 'queued'}: {item.explanation}")
        return found

    def edges_changed_only(self) -> bool:
        """Whether this dream's edges were refreshed incrementally (so a check of them looks
        at the rows the dream wrote, not the whole table)."""
        return bool(self.edges is not None and self.edges.incremental)

    def checks(self) -> dict[str, Callable[[], Verdict]]:
        """The check after the edge stage, by name."""
        return {"edges_expectations": self.edges_expectations}

    def edges_expectations(self) -> Verdict:
        """The edges' Great Expectations suite: after an incremental refresh on the edges this
        dream wrote, not the store's."""
        from memvault.quality import expectations_verdict

        changed_by = self.run_id if self.edges_changed_only() else None
        return expectations_verdict(self.store, "edges", changed_by=changed_by)

    def _recorded(self, name: str, compute: Callable[[], Any]) -> Report:
        """Compute a stage and add its figures to the dream report's graph section."""
        report = compute()
        actions: dict[str, int] = {}
        if isinstance(report, EdgeReport):
            actions = {"edge-insert": report.inserted, "edge-update": report.updated}
        if isinstance(report, DiscoveryReport):
            actions = {"discover": 0 if self.dry_run else sum(report.written.values())}
        signal = stage_figures(self.store, self.run_id).get("signal", {})
        signal[FIGURES[name]] = report.as_dict()
        signal["actions"] = signal.get("actions", {}) | actions
        record_stage(self.store, self.run_id, "signal", signal)
        written = rows_written(self.store, self.run_id, PHASE) if actions else None
        return GraphStageReport(report, self.run_id, self.dry_run, written)
