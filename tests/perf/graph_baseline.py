"""The straightforward way to compute E1–E4, for the benchmark to compare against.

Plain Python and networkx, one pair at a time: co-occurrence counted per block
pair in a Counter, Jaccard with Python sets, ``networkx.adamic_adar_index``
(the same 1/ln(degree) definition), cosine with ``numpy.dot`` per pair, the
same normalizations and weights; Louvain (networkx's built-in, the nearest
leidenalg-free equivalent) and ``networkx.pagerank`` with a personalization.

The per-pair part may run on a deterministic sample of pairs (every k-th pair
in id order); its time is then extrapolated linearly in the number of pairs.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from memvault.graph import GraphConfig

Pair = tuple[str, str]


@dataclass
class BaselineResult:
    values: dict[Pair, dict[str, Any]]  # the sampled pairs' signals, composite, status
    pairs: int  # candidate pairs in the whole graph
    sampled: int
    seconds: dict[str, float] = field(default_factory=dict)  # measured, wall
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # measured, CPU
    extrapolated_pairs_s: float = 0.0  # per-pair part scaled to every pair


def baseline_edges(
    entities: pl.DataFrame,
    mentions: pl.DataFrame,
    vectors: tuple[list[str], np.ndarray] | None,
    config: GraphConfig,
    *,
    sample: int | None = None,
) -> BaselineResult:
    import networkx as nx

    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    started, cpu_started = time.perf_counter(), time.process_time()
    etype = dict(zip(entities["id"].to_list(), entities["entity_type"].to_list(), strict=True))
    blocks: dict[str, set[str]] = defaultdict(set)
    sessions: dict[str, set[str]] = defaultdict(set)
    for entity, block, session in mentions.select(
        "entity_id", "block_id", "session_id"
    ).iter_rows():
        if entity not in etype:
            continue
        if block is not None:
            blocks[block].add(entity)
        if session is not None:
            sessions[entity].add(session)
    counts: Counter[Pair] = Counter()
    for members in blocks.values():
        ordered = sorted(members)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                counts[(a, b)] += 1
    seconds["count_pairs"] = time.perf_counter() - started
    cpu["count_pairs"] = time.process_time() - cpu_started

    started, cpu_started = time.perf_counter(), time.process_time()
    graph = nx.Graph()
    graph.add_edges_from(counts)
    unit: dict[str, np.ndarray] = {}
    if vectors is not None:
        for name, row in zip(vectors[0], vectors[1], strict=True):
            vec = np.asarray(row, dtype=np.float64)
            norm = float(np.linalg.norm(vec))
            if norm > 0:
                unit[name] = vec / norm
    seconds["build_graph"] = time.perf_counter() - started
    cpu["build_graph"] = time.process_time() - cpu_started

    pairs = sorted(counts)
    step = 1 if not sample or sample >= len(pairs) else math.ceil(len(pairs) / sample)
    chosen = pairs[::step]
    weights = config.weights.as_dict()
    started, cpu_started = time.perf_counter(), time.process_time()
    adamic = {(u, v): p for u, v, p in nx.adamic_adar_index(graph, chosen)}
    values: dict[Pair, dict[str, Any]] = {}
    for u, v in chosen:
        shared = len(sessions[u] & sessions[v])
        union = len(sessions[u] | sessions[v])
        raw = adamic[(u, v)]
        cosine = 0.0
        if u in unit and v in unit:
            cosine = min(1.0, max(0.0, float(np.dot(unit[u], unit[v]))))
        row = {
            "co_occurrence": min(
                1.0, math.log1p(counts[(u, v)]) / math.log1p(config.co_occurrence_saturation)
            ),
            "session_overlap": shared / union if union else 0.0,
            "adamic_adar": raw / (raw + config.adamic_adar_half),
            "type_affinity": config.affinity(etype[u], etype[v]),
            "semantic_similarity": cosine,
        }
        row["composite_weight"] = sum(weights[k] * row[k] for k in weights)
        row["status"] = (
            "connected" if row["composite_weight"] >= config.connect_threshold else "pending"
        )
        values[(u, v)] = row
    seconds["pair_signals"] = time.perf_counter() - started
    cpu["pair_signals"] = time.process_time() - cpu_started
    result = BaselineResult(values, len(pairs), len(chosen), seconds, cpu)
    result.extrapolated_pairs_s = seconds["pair_signals"] * len(pairs) / max(len(chosen), 1)
    return result


def baseline_graph_algorithms(
    connected: pl.DataFrame, seeds: list[str], config: GraphConfig
) -> dict[str, Any]:
    """Louvain and (personalized) PageRank over the connected edges (source, target, weight)."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_weighted_edges_from(
        connected.select("source_id", "target_id", "composite_weight").iter_rows()
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    communities = nx.community.louvain_communities(
        graph, weight="weight", resolution=config.resolution, seed=config.seed
    )
    louvain = time.perf_counter() - started
    started = time.perf_counter()
    pagerank = nx.pagerank(graph, alpha=config.damping, weight="weight")
    present = [s for s in seeds if s in graph]
    personal = nx.pagerank(
        graph,
        alpha=config.damping,
        weight="weight",
        personalization=dict.fromkeys(present, 1.0) if present else None,
    )
    ranks = time.perf_counter() - started
    return {
        "cpu_s": time.process_time() - cpu_started,
        "communities": len(communities),
        "pagerank": pagerank,
        "ppr": personal,
        "seconds": {"louvain": louvain, "pagerank": ranks},
    }
