"""Recall through ``memvault serve``: the whole call (search, facts, the audited recall-log
write) as an agent makes it over MCP, and the shell's ``memvault recall`` with and without
a running server.

Run: ``.venv/bin/pytest tests/perf/test_serve_perf.py -m perf -s`` (``SERVE_BENCH_SESSIONS``,
default 1,000 demo sessions ≈ 10k blocks; 10,100 gives the 100k-block store the recall
benchmark uses). Hashing vectors (tests/perf/dream_data.py). Baseline in the same run: the
same queries answered in process by ``memvault.recall`` (with its write), so the MCP and HTTP
overhead is the ratio; the shell's figure is compared with the in-process CLI.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import anyio
import numpy as np
import pytest

import memvault
from tests.integration.test_serve import MEMVAULT, _env, http_server
from tests.perf.dream_data import build_scaled_store

SESSIONS = int(os.environ.get("SERVE_BENCH_SESSIONS") or 1000)
QUERIES = [
    "where does Ada work",
    "what is the status of the billing migration",
    "who knows about Kubernetes",
    "which tools does Ada use for testing",
    "what did we decide about the cache",
    "where does Ada live",
    "what does the ingest service depend on",
    "how do I restart the scheduler",
]
ROUNDS = 25


def _pct(values: list[float]) -> str:
    a = np.asarray(values)
    return f"p50 {np.percentile(a, 50):6.1f} ms  p95 {np.percentile(a, 95):6.1f} ms"


def _over_mcp(base: str, queries: list[str]) -> list[float]:
    """Each query as one MCP tool call on one session, timed end to end."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    times: list[float] = []

    async def main() -> None:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            Client(
                streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy"
            ) as client,
        ):
            await client.call_tool("recall", {"query": queries[0]})  # the first one warms up
            for q in queries:
                started = time.perf_counter()
                result = await client.call_tool("recall", {"query": q, "limit": 10})
                times.append((time.perf_counter() - started) * 1000)
                assert not result.is_error

    anyio.run(main)
    return times


@pytest.mark.perf
@pytest.mark.timeout(1800)
def test_recall_through_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    build_scaled_store(url, sessions=SESSIONS, seed=11, holdout=1, embed=("entity", "block"))
    queries = QUERIES * ROUNDS
    with memvault.open(url) as store:
        blocks = store.fetch("SELECT count(*) FROM blocks")[0][0]
        memvault.recall(store, queries[0])  # builds the index
        local = []
        for q in queries:
            started = time.perf_counter()
            memvault.recall(store, q, limit=10)
            local.append((time.perf_counter() - started) * 1000)
    env = _env(tmp_path)
    shell_alone = []
    for q in QUERIES[:3]:
        started = time.perf_counter()
        subprocess.run([MEMVAULT, "recall", q, "--store", url, "--json"], env=env, check=True, capture_output=True)  # fmt: skip
        shell_alone.append((time.perf_counter() - started) * 1000)
    with http_server(url, tmp_path) as base:
        served = _over_mcp(base, queries)
        shell = []
        for q in QUERIES:
            started = time.perf_counter()
            out = subprocess.run([MEMVAULT, "recall", q, "--store", url, "--json"], env=env, check=True, capture_output=True, text=True)  # fmt: skip
            shell.append((time.perf_counter() - started) * 1000)
            assert '"served_by": "server"' in out.stdout
    print(
        f"\n{blocks:,} blocks, {len(queries)} recalls each (every one recorded)\n"
        f"in process, memvault.recall      {_pct(local)}\n"
        f"over MCP (streamable HTTP)       {_pct(served)}  "
        f"(p95 ×{np.percentile(served, 95) / np.percentile(local, 95):.2f} in-process)\n"
        f"shell `memvault recall`, server  {_pct(shell)}\n"
        f"shell `memvault recall`, alone   {_pct(shell_alone)}  "
        f"(×{np.median(shell_alone) / np.median(shell):.1f} the served one)"
    )
    assert np.median(shell) < np.median(shell_alone)
