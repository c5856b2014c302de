"""Graph benchmark (run explicitly: `pytest tests/perf -m perf -s -k graph`); it prints figures.

It gates only what makes the comparison fair: the baseline computes the same
pairs and the same signals and weights (within 1e-9) as memvault.
"""

from __future__ import annotations

import os

import pytest

from tests.perf.graph_bench import benchmark, report

pytestmark = pytest.mark.perf


@pytest.mark.timeout(7200)
def test_graph_against_networkx_baseline() -> None:
    results = benchmark(
        sessions=int(os.environ.get("MEMVAULT_PERF_SESSIONS", "10100")),
        holdout=int(os.environ.get("MEMVAULT_PERF_NEW_SESSIONS", "100")),
        sample=int(os.environ.get("MEMVAULT_PERF_BASELINE_PAIRS", "100000")),
    )
    print("\n" + report(results))
    baseline = results["baseline"]
    assert baseline["same_pair_count"]
    assert baseline["max_abs_difference"] <= 1e-9
    assert baseline["status_equal"]
    assert results["accuracy"]["missing"] == 0
