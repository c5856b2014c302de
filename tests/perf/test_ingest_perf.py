"""Benchmarks (run explicitly: `pytest tests/perf -m perf -s`); they print figures, they do not gate."""

from __future__ import annotations

import os

import pytest

from tests.helpers import require_service
from tests.perf import small_ingest_bench
from tests.perf.ingest_bench import benchmark, report

pytestmark = pytest.mark.perf


def test_ingest_throughput_against_naive_inserts(postgres_available: bool) -> None:
    require_service(postgres_available, "PostgreSQL")
    blocks = int(os.environ.get("MEMVAULT_PERF_BLOCKS", "100000"))
    results = benchmark(blocks, naive_rows=int(os.environ.get("MEMVAULT_PERF_NAIVE_ROWS", "10000")))
    print("\n" + report(results))
    assert results["blocks"] == blocks


@pytest.mark.parametrize("backend", ["duckdb", "postgresql"])
def test_a_small_ingest_checked_in_memory_against_staged(
    backend: str, postgres_available: bool
) -> None:
    """One session and one block (a remembered memory), both paths alternating in one run."""
    if backend == "postgresql":
        require_service(postgres_available, "PostgreSQL")
    result = small_ingest_bench.benchmark(backend, 40)
    print("\n" + small_ingest_bench.report(result))
    assert result["in memory"]["round_trips"] < result["staged"]["round_trips"]
