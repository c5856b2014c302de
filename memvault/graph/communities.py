"""E3: weighted Leiden communities of the connected entity graph → table ``communities``.

``leidenalg``'s RBConfiguration (modularity with a resolution) reads
``composite_weight`` as the edge weight; a fixed seed and a fixed vertex and
edge order make the partition reproducible. Communities are numbered by size
(largest first), ties by their smallest member id, so the same partition gets
the same numbers. The table is derived data: replaced as a whole, in one
transaction, not audited.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any

import leidenalg as la
import polars as pl

from memvault.graph.config import GraphConfig
from memvault.graph.connected import connected_graph
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.revert import keep_prior


@dataclass
class CommunityReport:
    run_id: str
    dry_run: bool
    entities: int = 0
    edges: int = 0
    communities: int = 0
    largest: int = 0
    quality: float = 0.0
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
    rows = store.fetch_df("SELECT entity_id, community, size FROM communities ORDER BY entity_id")
    rows = rows.cast({"entity_id": pl.Utf8, "community": pl.Int32, "size": pl.Int32})
    report = CommunityReport(run_id=run_id, dry_run=False, membership=rows)
    report.entities = rows.height
    report.communities = int(rows["community"].n_unique()) if rows.height else 0
    report.largest = int(rows["size"].max()) if rows.height else 0  # type: ignore[arg-type]
    return report


def detect_communities(
    store: Store, config: GraphConfig, run_id: str, *, dry_run: bool = False
) -> CommunityReport:
    """Partition the connected graph and replace table ``communities`` (unless ``dry_run``)."""
    report = CommunityReport(run_id=run_id, dry_run=dry_run)
    started = time.perf_counter()
    view = connected_graph(store)
    report.seconds["load"] = round(time.perf_counter() - started, 4)
    report.entities, report.edges = len(view.ids), view.graph.ecount()
    started = time.perf_counter()
    if view.ids:
        partition = la.find_partition(
            view.graph,
            la.RBConfigurationVertexPartition,
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
            keep_prior(store, "communities", run_id)  # a dream that fails puts it back
            store.backend.execute("DELETE FROM communities")
            if table.height:
                store.backend.insert_df(
                    "communities", store.conform("communities", table), on_conflict="error"
                )
        report.seconds["write"] = round(time.perf_counter() - started, 4)
    return report
