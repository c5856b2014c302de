"""The connected part of the entity graph as an igraph ``Graph`` (E3/E4 read it).

Vertices are the active entities with at least one connected edge, in id
order; edges are sorted by (source, target) and carry ``composite_weight`` as
``weight``. A fixed order makes Leiden with a fixed seed, and PageRank,
reproducible run after run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import igraph as ig
import numpy as np
import polars as pl

from memvault.store import Store
from memvault.store.queries.graph import connected_edges


@dataclass
class ConnectedGraph:
    ids: list[str]
    graph: ig.Graph

    @property
    def index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.ids)}

    def fingerprint(self) -> str:
        """A hash of the vertices, edges and weights: equal fingerprints, equal graphs (so a
        stage that read this graph before need not run again)."""
        digest = hashlib.sha256("\n".join(self.ids).encode())
        digest.update(np.asarray(self.graph.get_edgelist(), dtype=np.int64).tobytes())
        weights = self.graph.es["weight"] if self.graph.ecount() else []
        digest.update(np.asarray(weights, dtype=np.float64).tobytes())
        return digest.hexdigest()[:16]


def connected_graph(store: Store) -> ConnectedGraph:
    edges = connected_edges(store)
    if edges.is_empty():
        return ConnectedGraph([], ig.Graph())
    edges = edges.cast(
        {"source_id": pl.Utf8, "target_id": pl.Utf8, "composite_weight": pl.Float64}
    ).sort("source_id", "target_id")
    ids = pl.concat([edges["source_id"], edges["target_id"]]).unique().sort().to_list()
    index = {name: i for i, name in enumerate(ids)}
    source = edges["source_id"].replace_strict(index, return_dtype=pl.Int64).to_list()
    target = edges["target_id"].replace_strict(index, return_dtype=pl.Int64).to_list()
    graph = ig.Graph(n=len(ids), edges=list(zip(source, target, strict=True)), directed=False)
    graph.es["weight"] = edges["composite_weight"].to_list()
    return ConnectedGraph(ids, graph)
