"""E4: PageRank and personalized PageRank of the connected entity graph → table ``centrality``.

Personalized PageRank restarts at *seeds*. By default they are the entities
mentioned in the ``recent_sessions`` most recent sessions: what the owner is
into now, so ``ppr`` ranks what matters around current work, while
``pagerank`` ranks what matters overall. Seeds outside the connected graph
are dropped; with none left, ``ppr`` equals ``pagerank``. ``degree`` counts
connected edges. Derived data: replaced in one transaction, not audited.
"""

from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import igraph as ig
import polars as pl

from memvault.graph.config import GraphConfig
from memvault.graph.connected import connected_graph
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.graph import (
    recently_mentioned_entities,
    replace_graph_table,
    top_central_entities,
)


@dataclass
class CentralityReport:
    run_id: str
    dry_run: bool
    entities: int = 0
    edges: int = 0
    seeds: int = 0
    seed_source: str = ""
    seeds_in_graph: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: Seed entity ids and entity_id, pagerank, ppr of this run (also in a dry run); not in as_dict.
    seed_ids: list[str] = field(default_factory=list, repr=False)
    scores: pl.DataFrame = field(default_factory=pl.DataFrame, repr=False)

    def as_dict(self) -> dict[str, Any]:
        hidden = ("seed_ids", "scores")
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in hidden}

    def metadata(self, top: int = 10) -> dict[str, Any]:
        """What an orchestrator shows of this ranking: flat figures, the top entities by
        personalized PageRank and timings as tables."""
        best = self.scores.sort("ppr", descending=True).head(top) if self.scores.height else None
        return {
            "entities": self.entities,
            "edges": self.edges,
            "ppr_seeds": self.seeds,
            "ppr_seeds_in_graph": self.seeds_in_graph,
            "seed_source": self.seed_source,
            "top_by_ppr": best.to_dicts() if best is not None else [],
            "timings_s": dict(self.seconds),
        }


#: OpenMP threads igraph's PageRank (PRPACK) may use. On two cores shared with other work its
#: threads' busy-waiting turned a 0.03 s PageRank of 2,657 vertices into 2.1 s (0.5 s CPU);
#: on one thread it does not wait for anybody.
OPENMP_THREADS = 1


@functools.cache
def igraph_openmp() -> ctypes.CDLL | None:
    """The OpenMP runtime bundled with igraph's wheel (None when there is none to find)."""
    libs = Path(ig.__file__).resolve().parent.parent / "igraph.libs"
    for path in sorted(libs.glob("libgomp*.so*")):
        try:
            return ctypes.CDLL(str(path))  # the copy igraph loaded: same file, same library
        except OSError:
            return None
    return None


def limit_openmp_threads() -> None:
    """Let igraph's next OpenMP region (in this thread) use ``OPENMP_THREADS`` threads."""
    runtime = igraph_openmp()
    if runtime is not None:
        runtime.omp_set_num_threads(OPENMP_THREADS)


def personalized_pagerank(
    graph: ig.Graph,
    restart: Sequence[float],
    *,
    weights: Sequence[float] | str | None,
    damping: float,
) -> list[float]:
    """PageRank of ``graph`` that restarts at the seeds in proportion to ``restart`` (one
    value a vertex, zero for a vertex that is no seed); plain PageRank when no vertex is a
    seed. The one place memvault computes it: the graph's ``ppr`` (seeds: recent entities)
    and the daily profile's interests (seeds: what the owner said that day, weighted) call
    it on their own graphs."""
    limit_openmp_threads()
    if not any(restart):
        return list(graph.pagerank(weights=weights, damping=damping))
    return list(graph.personalized_pagerank(reset=list(restart), weights=weights, damping=damping))


def recent_seeds(store: Store, sessions: int) -> list[str]:
    """Entities mentioned in the ``sessions`` most recent sessions."""
    return recently_mentioned_entities(store, sessions)


def compute_centrality(
    store: Store,
    config: GraphConfig,
    run_id: str,
    *,
    seeds: list[str] | None = None,
    dry_run: bool = False,
) -> CentralityReport:
    """PageRank and personalized PageRank (seeds: given, or recent) → table ``centrality``."""
    report = CentralityReport(run_id=run_id, dry_run=dry_run)
    started = time.perf_counter()
    if seeds is None:
        seeds = recent_seeds(store, config.recent_sessions)
        report.seed_source = f"entities of the {config.recent_sessions} most recent sessions"
    else:
        report.seed_source = "given"
    view = connected_graph(store)
    report.seconds["load"] = round(time.perf_counter() - started, 4)
    graph = view.graph
    report.entities, report.edges, report.seeds = len(view.ids), graph.ecount(), len(seeds)
    started = time.perf_counter()
    if view.ids:
        index = view.index
        reset = sorted({index[s] for s in seeds if s in index})
        report.seeds_in_graph = len(reset)
        limit_openmp_threads()
        pagerank = graph.pagerank(weights="weight", damping=config.damping)
        restart = [0.0] * len(view.ids)
        for vertex in reset:
            restart[vertex] = 1.0
        ppr = personalized_pagerank(graph, restart, weights="weight", damping=config.damping)
        degree = graph.degree()
    else:
        pagerank, ppr, degree = [], [], []
    report.seconds["pagerank"] = round(time.perf_counter() - started, 4)
    report.seed_ids = list(seeds)
    report.scores = pl.DataFrame(
        {"entity_id": view.ids, "pagerank": pagerank, "ppr": ppr},
        schema={"entity_id": pl.Utf8, "pagerank": pl.Float64, "ppr": pl.Float64},
    )
    if not dry_run:
        started = time.perf_counter()
        table = pl.DataFrame(
            {
                "entity_id": view.ids,
                "pagerank": pagerank,
                "ppr": ppr,
                "degree": degree,
                "run_id": [run_id] * len(view.ids),
                "updated_at": [utcnow()] * len(view.ids),
            },
            schema_overrides={"entity_id": pl.Utf8, "pagerank": pl.Float64, "ppr": pl.Float64,
                              "degree": pl.Int32, "run_id": pl.Utf8},
        )  # fmt: skip
        replace_graph_table(store, "centrality", table, run_id)
        report.seconds["write"] = round(time.perf_counter() - started, 4)
    return report


def top_central(store: Store, n: int = 10, *, by: str = "ppr") -> pl.DataFrame:
    """The ``n`` most central entities by ``ppr`` or ``pagerank``: entity_id, name, entity_type,
    pagerank, ppr, degree, community (null when it has none)."""
    return top_central_entities(store, n, by)
