"""Recall through ``memvault serve``: the whole call (search, facts, the audited recall-log
write) as an agent makes it over MCP, and the shell's ``memvault recall`` with and without
a running server.

Run: ``.venv/bin/pytest tests/perf/test_serve_perf.py -m perf -s`` (``SERVE_BENCH_SESSIONS``,
default 10,100 demo sessions: the 100k-block store the recall benchmark uses; 1,000 ≈ 10k
blocks; ``SERVE_BENCH_ROUNDS`` rounds of the 8 questions, default 10). Hashing vectors
(tests/perf/dream_data.py; MiniLM would take an hour to embed 100k blocks here).

Baselines in the same run: the same queries answered in process by ``memvault.recall``
(with its write, before answering), and the same server with the recall written before it
answers (``MEMVAULT_SERVE_RECALL_LOG=inline``, the earlier path): the ratio is what the
queued writer gains. The shell's figure is compared with the in-process CLI.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

import memvault
from memvault.serve import discovery
from tests.integration.test_serve import MEMVAULT, _env, _free_port
from tests.perf.dream_data import build_scaled_store

SESSIONS = int(os.environ.get("SERVE_BENCH_SESSIONS") or 10_100)
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
ROUNDS = int(os.environ.get("SERVE_BENCH_ROUNDS") or 10)
#: The server's own time to answer each MCP recall (its ``latency_ms``: no transport, no write).
ANSWERED: list[float] = []


def _pct(values: list[float]) -> str:
    a = np.asarray(values)
    return f"p50 {np.percentile(a, 50):6.1f} ms  p95 {np.percentile(a, 95):6.1f} ms"


def _over_mcp(target: Any, queries: list[str]) -> list[float]:
    """Each query as one MCP tool call on one session (streamable HTTP to a URL, or stdio
    to a server the client starts), timed end to end."""
    import httpx2
    from mcp import Client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    times: list[float] = []

    async def calls(client: Any) -> None:
        await client.call_tool("recall", {"query": queries[0]})  # the first one warms up
        for q in queries:
            started = time.perf_counter()
            result = await client.call_tool("recall", {"query": q, "limit": 10})
            times.append((time.perf_counter() - started) * 1000)
            assert not result.is_error
            ANSWERED.append(float(result.structured_content["latency_ms"]))

    async def main() -> None:
        if isinstance(target, str):
            async with (
                httpx2.AsyncClient(timeout=120) as http,
                Client(streamable_http_client(target, http_client=http), mode="legacy") as client,
            ):
                await calls(client)
            return
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(
                stdio_client(target, errlog=errlog), mode="legacy", read_timeout_seconds=600
            ) as client:
                await calls(client)

    anyio.run(main)
    return times


@contextmanager
def _server(url: str, env: dict[str, str], log: Path) -> Iterator[str]:
    """`memvault serve --transport http` with ``env``; its base URL once it has warmed up."""
    port = _free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [MEMVAULT, "serve", "--store", url, "--transport", "http", "--port", str(port)],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 900
            while discovery.read(url) is None:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=120)


def _logged(url: str) -> int:
    with memvault.open(url) as store:
        return int(store.fetch("SELECT count(*) FROM recall_log")[0][0])


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
    # The earlier path: the same server, each recall written before it is answered.
    inline_env = env | {"MEMVAULT_SERVE_RECALL_LOG": "inline"}
    with _server(url, inline_env, tmp_path / "inline.log") as base:
        inline = _over_mcp(f"{base}/mcp", queries)
    logged = _logged(url)
    with _server(url, env, tmp_path / "queued.log") as base:
        ANSWERED.clear()
        served = _over_mcp(f"{base}/mcp", queries)
        answered = list(ANSWERED)
        shell = []
        for q in QUERIES:
            started = time.perf_counter()
            out = subprocess.run([MEMVAULT, "recall", q, "--store", url, "--json"], env=env, check=True, capture_output=True, text=True)  # fmt: skip
            shell.append((time.perf_counter() - started) * 1000)
            assert '"served_by": "server"' in out.stdout
    # Every recall answered was written by the time the server stopped.
    assert _logged(url) - logged == len(queries) + 1 + len(QUERIES)
    from mcp import StdioServerParameters

    stdio = _over_mcp(
        StdioServerParameters(command=MEMVAULT, args=["serve", "--store", url], env=env), queries
    )
    p95 = np.percentile
    print(
        f"\n{blocks:,} blocks (hashing vectors), {len(queries)} recalls each (every one recorded)\n"
        f"in process, memvault.recall         {_pct(local)}\n"
        f"MCP (HTTP), write before answering  {_pct(inline)}  (the earlier path)\n"
        f"MCP (HTTP), write queued            {_pct(served)}  "
        f"(p95 ×{p95(served, 95) / p95(inline, 95):.2f} the earlier path, "
        f"×{p95(served, 95) / p95(local, 95):.2f} in process)\n"
        f"  of which the server's answer    {_pct(answered)}  (search, facts; no write)\n"
        f"MCP (stdio), write queued           {_pct(stdio)}  "
        f"(p95 ×{p95(stdio, 95) / p95(inline, 95):.2f} the earlier path)\n"
        f"shell `memvault recall`, server     {_pct(shell)}\n"
        f"shell `memvault recall`, alone      {_pct(shell_alone)}  "
        f"(×{np.median(shell_alone) / np.median(shell):.1f} the served one)"
    )
    assert np.median(shell) < np.median(shell_alone)


#: Recalls per path in the latency run; concurrent sessions and how long they run.
LATENCY_RECALLS = int(os.environ.get("SERVE_BENCH_RECALLS") or 200)
PAIRS = int(os.environ.get("SERVE_BENCH_PAIRS") or 50)
SESSIONS_AT_ONCE = int(os.environ.get("SERVE_BENCH_CONCURRENT") or 20)
CONCURRENT_SECONDS = float(os.environ.get("SERVE_BENCH_CONCURRENT_S") or 30)


def _session_calls(target: Any, work: Any) -> Any:
    """``await work(client)`` on one MCP session (streamable HTTP to a URL, or stdio)."""
    import httpx2
    from mcp import Client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> Any:
        if isinstance(target, str):
            async with (
                httpx2.AsyncClient(timeout=600) as http,
                Client(streamable_http_client(target, http_client=http), mode="legacy") as client,
            ):
                return await work(client)
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(
                stdio_client(target, errlog=errlog), mode="legacy", read_timeout_seconds=600
            ) as client:
                return await work(client)

    return anyio.run(main)


async def _recalls(client: Any, n: int) -> list[float]:
    await client.call_tool("recall", {"query": QUERIES[0]})  # warm
    times = []
    for k in range(n):
        started = time.perf_counter()
        found = await client.call_tool("recall", {"query": QUERIES[k % len(QUERIES)]})
        times.append((time.perf_counter() - started) * 1000)
        assert not found.is_error
    return times


async def _pairs(client: Any, n: int) -> list[float]:
    """A remember and the recall that finds it, timed together."""
    times = []
    for k in range(n):
        word = f"zqpair{k}x"
        started = time.perf_counter()
        kept = await client.call_tool("remember", {"text": f"The {word} ledger is in drawer {k}."})
        found = await client.call_tool("recall", {"query": f"{word} ledger drawer", "limit": 3})
        times.append((time.perf_counter() - started) * 1000)
        assert found.structured_content["results"][0]["block_id"] == kept.structured_content["block_id"]  # fmt: skip
    return times


def _concurrent(url: str, sessions: int, seconds: float) -> tuple[list[float], int, set[str]]:
    """``sessions`` MCP sessions at once, each recalling and remembering for ``seconds``:
    every call's time, the errors, the memories the server said it kept."""
    times: list[float] = []
    kept: set[str] = set()
    errors = 0

    async def one(name: int) -> None:
        nonlocal errors
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(timeout=600) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            end = time.monotonic() + seconds
            k = 0
            while time.monotonic() < end:
                for tool, args in (
                    ("recall", {"query": QUERIES[(name + k) % len(QUERIES)]}),
                    ("remember", {"text": f"Session {name} note {k}: zqc{name}x{k}."}),
                ):
                    started = time.perf_counter()
                    try:
                        answer = await client.call_tool(tool, args)
                    except Exception:
                        errors += 1
                        continue
                    times.append((time.perf_counter() - started) * 1000)
                    if answer.is_error:
                        errors += 1
                    elif tool == "remember":
                        kept.add(answer.structured_content["block_id"])
                k += 1

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for name in range(sessions):
                group.start_soon(one, name)

    anyio.run(main)
    return times, errors, kept


@pytest.mark.perf
@pytest.mark.timeout(7200)
def test_serve_latency_at_scale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole call through the Python SDK over each transport, with the in-process answer
    in the same run; a remember followed by the recall that finds it; concurrent sessions."""
    from mcp import StdioServerParameters

    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    build_scaled_store(url, sessions=SESSIONS, seed=11, holdout=1, embed=("entity", "block"))
    with memvault.open(url) as store:
        blocks = store.fetch("SELECT count(*) FROM blocks")[0][0]
        memvault.recall(store, QUERIES[0])  # builds the index
        local = []
        for k in range(LATENCY_RECALLS):
            started = time.perf_counter()
            memvault.recall(store, QUERIES[k % len(QUERIES)], limit=10)
            local.append((time.perf_counter() - started) * 1000)
    env = _env(tmp_path)
    with _server(url, env, tmp_path / "http.log") as base:
        http = _session_calls(f"{base}/mcp", lambda c: _recalls(c, LATENCY_RECALLS))
        pairs = _session_calls(f"{base}/mcp", lambda c: _pairs(c, PAIRS))
        calls, errors, kept = _concurrent(f"{base}/mcp", SESSIONS_AT_ONCE, CONCURRENT_SECONDS)
    with memvault.open(url) as store:
        stored = store.fetch("SELECT count(*) FROM blocks WHERE id = ANY(:ids)", {"ids": sorted(kept)})  # fmt: skip
    stdio = _session_calls(
        StdioServerParameters(command=MEMVAULT, args=["serve", "--store", url], env=env),
        lambda c: _recalls(c, LATENCY_RECALLS),
    )
    print(
        f"\n{blocks:,} blocks (hashing vectors), {LATENCY_RECALLS} recalls each\n"
        f"in process, memvault.recall     {_pct(local)}\n"
        f"MCP over streamable HTTP        {_pct(http)}\n"
        f"MCP over stdio                  {_pct(stdio)}\n"
        f"remember then recall (HTTP)     {_pct(pairs)}  ({PAIRS} pairs)\n"
        f"{SESSIONS_AT_ONCE} sessions for {CONCURRENT_SECONDS:g} s       {_pct(calls)}  "
        f"({len(calls)} calls, {errors} errors, {len(kept)} memories kept, {stored[0][0]} stored)"
    )
    assert errors == 0 and stored[0][0] == len(kept)
