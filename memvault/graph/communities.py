"""E3: weighted Leiden communities of the connected entity graph → table ``communities``.

``leidenalg``'s RBConfiguration (modularity with a resolution) reads
``composite_weight`` as the edge weight; a fixed seed and a fixed vertex and
edge order make the partition reproducible. Communities are numbered by size
(largest first), ties by their smallest member id, so the same partition gets
the same numbers. The table is derived data: replaced as a whole, in one
transaction, not audited.

A *warm* run (the dream's after an incremental edge refresh) starts Leiden from the
partition the table holds (entities new to the graph start alone), which takes fewer
passes than a cold start and keeps communities stable from night to night; and it does not
run at all when the connected graph is the one the table was computed from (its
fingerprint is kept on the run's cursor). The result then depends on the partition it
started from as well as on the graph; a cold run (the default, and the dream's after a full
edge refresh) depends on the graph alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any

import leidenalg as la
import polars as pl

from memvault.graph.config import GraphConfig
from memvault.graph.connected import ConnectedGraph, connected_graph
from memvault.graph.incremental import last_cursor
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.graph import partition_run_ids, replace_graph_table, stored_partition
from memvault.store.queries.runs import save_run_cursor

CURSOR_KEY = "graph_communities"


@dataclass
class CommunityReport:
    run_id: str
    dry_run: bool
    entities: int = 0
    edges: int = 0
    communities: int = 0
    largest: int = 0
    quality: float = 0.0
    #: "cold", "warm" (from the stored partition) or "unchanged" (the graph the table was
    #: computed from: Leiden did not run).
    start: str = "cold"
    seconds: dict[str, float] = field(default_factory=dict)
    #: entity_id, community, size of this run's partition (also in a dry run); not in as_dict.
    membership: pl.DataFrame = field(default_factory=pl.DataFrame, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "membership"}

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows of this partition: flat figures, timings as a table."""
        return {
            "communities": self.communities,
            "largest_community": self.largest,
            "entities": self.entities,
            "edges": self.edges,
            "quality": round(self.quality, 4),
            "start": self.start,
            "timings_s": dict(self.seconds),
        }


def number_communities(ids: list[str], membership: list[int]) -> pl.DataFrame:
    """entity_id, community, size: communities renumbered by size desc, then smallest member id."""
    frame = pl.DataFrame(
        {"entity_id": ids, "raw": membership}, schema={"entity_id": pl.Utf8, "raw": pl.Int64}
    )
    order = (
        frame.group_by("raw")
        .agg(size=pl.len(), first=pl.col("entity_id").min())
        .sort(["size", "first"], descending=[True, False])
        .with_row_index("community")
    )
    return (
        frame.join(order, on="raw")
        .select("entity_id", pl.col("community").cast(pl.Int32), pl.col("size").cast(pl.Int32))
        .sort("entity_id")
    )


def stored_communities(store: Store, run_id: str) -> CommunityReport:
    """The partition table ``communities`` holds, as a report: a dream resumed after its
    community stage reads what that stage wrote instead of partitioning again."""
    rows = stored_partition(store).cast(
        {"entity_id": pl.Utf8, "community": pl.Int32, "size": pl.Int32}
    )
    report = CommunityReport(run_id=run_id, dry_run=False, membership=rows)
    report.entities = rows.height
    report.communities = int(rows["community"].n_unique()) if rows.height else 0
    report.largest = int(rows["size"].max()) if rows.height else 0  # type: ignore[arg-type]
    return report


def detect_communities(
    store: Store, config: GraphConfig, run_id: str, *, dry_run: bool = False, warm: bool = False
) -> CommunityReport:
    """Partition the connected graph and replace table ``communities`` (unless ``dry_run``);
    ``warm``: start from the stored partition, or keep it when the graph is unchanged."""
    report = CommunityReport(run_id=run_id, dry_run=dry_run)
    started = time.perf_counter()
    view = connected_graph(store)
    fingerprint = view.fingerprint()
    initial = _stored_membership(store, view) if warm else None
    report.seconds["load"] = round(time.perf_counter() - started, 4)
    report.entities, report.edges = len(view.ids), view.graph.ecount()
    if warm and _unchanged(store, fingerprint):
        kept = stored_communities(store, run_id)
        report.membership, report.communities, report.largest = (
            kept.membership, kept.communities, kept.largest)  # fmt: skip
        report.start = "unchanged"
        return report
    started = time.perf_counter()
    if view.ids:
        report.start = "warm" if initial is not None else "cold"
        partition = la.find_partition(
            view.graph,
            la.RBConfigurationVertexPartition,
            initial_membership=initial,
            weights="weight",
            resolution_parameter=config.resolution,
            seed=config.seed,
            n_iterations=config.leiden_iterations,
        )
        rows = number_communities(view.ids, list(partition.membership))
        report.quality = float(partition.quality())
    else:
        rows = number_communities([], [])
    report.seconds["leiden"] = round(time.perf_counter() - started, 4)
    report.membership = rows
    report.communities = int(rows["community"].n_unique()) if rows.height else 0
    report.largest = int(rows["size"].max()) if rows.height else 0  # type: ignore[arg-type]
    if not dry_run:
        started = time.perf_counter()
        now = utcnow()
        table = rows.with_columns(run_id=pl.lit(run_id), updated_at=pl.lit(now))
        with store.transaction():
            replace_graph_table(store, "communities", table, run_id)
            _save_fingerprint(store, run_id, fingerprint)
        report.seconds["write"] = round(time.perf_counter() - started, 4)
    return report


def _stored_membership(store: Store, view: ConnectedGraph) -> list[int] | None:
    """Each vertex's community in table ``communities``, a new one of its own for a vertex the
    table does not hold; None when the table is empty (nothing to start from)."""
    stored = stored_partition(store).select("entity_id", "community")
    if stored.is_empty() or not view.ids:
        return None
    stored = stored.cast({"entity_id": pl.Utf8, "community": pl.Int64})
    frame = pl.DataFrame({"entity_id": view.ids}, schema={"entity_id": pl.Utf8})
    joined = frame.join(stored, on="entity_id", how="left", maintain_order="left")
    first_new = int(stored["community"].max() or 0) + 1  # type: ignore[arg-type]
    fresh = pl.int_range(first_new, first_new + joined.height, eager=True)
    labels = joined["community"].fill_null(fresh)
    return (labels.rank("dense") - 1).cast(pl.Int64).to_list()  # leidenalg wants 0..n-1


def _unchanged(store: Store, fingerprint: str) -> bool:
    """Whether table ``communities`` was computed (by a run still standing) from a graph with
    this fingerprint."""
    cursor = last_cursor(store, CURSOR_KEY)
    if cursor is None or cursor.get("graph") != fingerprint:
        return False
    return partition_run_ids(store) == [cursor["run_id"]]


def _save_fingerprint(store: Store, run_id: str, fingerprint: str) -> None:
    """Record on the run's cursor which graph its partition was computed from (a run without
    a runs row, e.g. a test's, records nothing)."""
    row = store.run(run_id)
    if row is None:
        return
    state = row["cursor"]
    state[CURSOR_KEY] = {"graph": fingerprint, "at": utcnow().isoformat()}
    save_run_cursor(store, run_id, state)
