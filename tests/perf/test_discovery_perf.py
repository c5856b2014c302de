"""Benchmark of surprise discovery (and content normalization) on the ≥100k-block store.

Run: ``.venv/bin/pytest tests/perf -m perf -s -k discovery``. The signal stage's three steps
(edges, Leiden, PageRank) are timed first on the same store in the same run; discovery's
seconds are reported against them (a ratio, not absolute seconds, is asserted). Then the
held-out sessions arrive and the incremental stage runs again (the first time
``cross_community`` has a baseline), and an immediate re-run must write nothing. Content
normalization (the first step of consolidate) is timed on the same store, and again on a
re-run, which must change nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import memvault
from memvault.dream.normalize_content import normalize_content
from memvault.graph import GraphConfig, compute_centrality, detect_communities, refresh_edges
from memvault.graph.discovery import discover
from memvault.ingest import ingest_file
from memvault.store import Store
from tests.perf.dream_data import build_scaled_store, holdout_path

SESSIONS, SEED, HOLDOUT = 10_100, 11, 100


def _signal(store: Store, run_id: str) -> tuple[float, float, dict]:
    config = GraphConfig()
    started = time.perf_counter()
    edges = refresh_edges(store, config, run_id)
    communities = detect_communities(store, config, run_id)
    centrality = compute_centrality(store, config, run_id)
    signal_s = time.perf_counter() - started
    started = time.perf_counter()
    report = discover(store, config, run_id, edges, communities, centrality)
    discovery_s = time.perf_counter() - started
    return signal_s, discovery_s, report.as_dict()


@pytest.mark.perf
@pytest.mark.timeout(3600)
def test_discovery_cost_against_the_signal_stage(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'discovery.duckdb'}"
    build_scaled_store(url, sessions=SESSIONS, seed=SEED, holdout=HOLDOUT)
    holdout = holdout_path(SESSIONS, SEED, HOLDOUT)
    with memvault.open(url) as store:
        print(f"\nstore: {store.counts(('blocks', 'entities', 'mentions'))}")
        runs = []
        for label, run_id in (("full", "perf-dream-1"), ("incremental", "perf-dream-2")):
            if label == "incremental":
                ingest_file(store, holdout)
            signal_s, discovery_s, figures = _signal(store, run_id)
            runs.append((signal_s, discovery_s))
            print(
                f"{label}: signal (edges+leiden+pagerank) {signal_s:.1f} s, discovery "
                f"+{discovery_s:.2f} s (= {discovery_s / signal_s:.1%} of the stage); "
                f"found {figures['found']} written {figures['written']} "
                f"bridge threshold {figures['bridge_threshold']} steps {figures['seconds']}"
            )
            for example in figures["examples"][:3]:
                print(f"  e.g. {example}")
        _, rerun_s, again = _signal(store, "perf-dream-3")
        print(f"immediate re-run: discovery {rerun_s:.2f} s, written {again['written']}")
        assert sum(again["written"].values()) == 0
        inbox = store.fetch("SELECT kind, count(*) FROM discovery_inbox GROUP BY kind ORDER BY 1")
        print(f"inbox: {dict(inbox)}")
        # Content normalization, the first step of consolidate, on the same store.
        started = time.perf_counter()
        content = normalize_content(store, "perf-dream-3")
        content_s = time.perf_counter() - started
        started = time.perf_counter()
        again_content = normalize_content(store, "perf-dream-4")
        content_rerun_s = time.perf_counter() - started
        print(
            f"content normalization: {content_s:.2f} s over {content.blocks_scanned:,} blocks "
            f"(changed {content.blocks_changed} blocks, {content.facts_changed} facts, "
            f"by kind {content.by_kind}); re-run {content_rerun_s:.2f} s, "
            f"changed {again_content.blocks_changed + again_content.facts_changed}"
        )
        assert again_content.blocks_changed == again_content.facts_changed == 0
        assert content_s < runs[0][0], "normalization costs more than the signal stage"
    for signal_s, discovery_s in runs:
        assert discovery_s < signal_s, "discovery costs more than the signal stage it follows"
