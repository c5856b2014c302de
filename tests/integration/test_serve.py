"""`memvault serve` driven by the MCP client SDK, over stdio and streamable HTTP, on both
backends: the tools answer and write as their commands do, refused input writes nothing,
the HTTP endpoint refuses strangers, and the shell's `memvault recall` uses the server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import memvault
from memvault.serve import client, discovery
from tests.recall_support import fill

pytestmark = pytest.mark.integration

MEMVAULT = str(Path(sys.executable).with_name("memvault"))
COUNTED = ("blocks", "recall_log", "feedback", "runs", "audit_log")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    # XDG_RUNTIME_DIR (the servers' sockets and discovery files) is the test run's own.
    return env | {"MEMVAULT_EMBEDDER": "hashing", "TMPDIR": str(tmp_path)}


def _counts(url: str) -> dict[str, int]:
    with memvault.open(url) as store:
        return store.counts(COUNTED)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def seeded(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    with memvault.open(store_url) as store:
        fill(store, tmp_path)
    return store_url


@contextmanager
def http_server(
    url: str, tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """`memvault serve --transport http` on a free loopback port; yields its base URL."""
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [MEMVAULT, "serve", "--store", url, "--transport", "http", "--port", str(port), *extra],
        env=_env(tmp_path) | (env or {}),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while discovery.read(url) is None:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
    assert discovery.read(url) is None  # removed on the way out


def _mcp(target: Any, work: Callable[[Any], Awaitable[Any]], headers: dict[str, str] | None = None) -> Any:  # fmt: skip
    """Run ``work(client)`` on an MCP client session to ``target`` (a URL or stdio params)."""
    import httpx2
    from mcp import Client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> Any:
        if isinstance(target, str):
            async with (
                httpx2.AsyncClient(headers=headers or {}, timeout=60) as http,
                Client(streamable_http_client(target, http_client=http), mode="legacy") as client,
            ):
                return await work(client)
        # The server's stderr goes to a file: a test process's sys.stderr may have no file
        # descriptor (pytest's capture under xdist), which the SDK's default needs.
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(
                stdio_client(target, errlog=errlog), mode="legacy", read_timeout_seconds=60
            ) as client:
                return await work(client)

    return anyio.run(main)


async def _exercise(client: Any) -> dict[str, Any]:
    """Every tool once, and each kind of bad argument; returns what the test checks."""
    seen: dict[str, Any] = {}
    tools = await client.list_tools()
    seen["tools"] = {t.name for t in tools.tools}
    found = await client.call_tool("recall", {"query": "status of Quill", "limit": 3})
    seen["recall"] = found
    memory = "The Quill launch moved to the Zanzibar data centre."
    remembered = await client.call_tool(
        "remember", {"text": memory, "speaker": "user", "session_id": "s-mcp"}
    )
    seen["remember"] = remembered
    seen["after"] = await client.call_tool("recall", {"query": "Zanzibar data centre"})
    recall_id = found.structured_content["recall_id"]
    seen["feedback"] = await client.call_tool("feedback", {"recall_id": recall_id, "verdict": "correct"})  # fmt: skip
    seen["asof"] = await client.call_tool("asof", {"subject": "Ada Lovelace", "predicate": "works_at"})  # fmt: skip
    seen["bad"] = [
        await client.call_tool(name, args)
        for name, args in [
            ("recall", {"query": "   "}),
            ("recall", {"query": "Quill", "limit": 0}),
            ("remember", {"text": ""}),
            ("remember", {"text": "from the future", "occurred_at": "2999-01-01"}),
            ("remember", {"text": "bad time", "occurred_at": "last tuesday"}),
            ("feedback", {"recall_id": "recall-nope", "verdict": "correct"}),
            ("feedback", {"recall_id": recall_id, "verdict": "maybe"}),
            ("asof", {"subject": "Nobody At All"}),
        ]
    ]
    return seen


def _check(seen: dict[str, Any]) -> None:
    assert seen["tools"] == {"recall", "remember", "feedback", "asof"}
    found = seen["recall"]
    assert not found.is_error
    hits = found.structured_content["results"]
    assert hits[0]["block_id"] == "b_quill_status" and hits[0]["tier"] == "hot"
    assert {"text", "score", "kind", "session_id", "created_at"} <= hits[0].keys()
    assert found.structured_content["recall_id"].startswith("recall-")
    block_id = seen["remember"].structured_content["block_id"]
    assert not seen["remember"].is_error and seen["remember"].structured_content["written"]
    assert seen["after"].structured_content["results"][0]["block_id"] == block_id
    assert seen["feedback"].structured_content["verdict"] == "correct"
    facts = seen["asof"].structured_content["facts"]
    assert [(f["predicate"], f["object"]) for f in facts] == [("works_at", "Acme Software")]
    for bad in seen["bad"]:
        assert bad.is_error, bad
    messages = [bad.content[0].text for bad in seen["bad"]]
    assert "query is empty" in messages[0]
    assert "nothing was written" in messages[3] and "occurred_at" in messages[3]
    assert "no recall with id" in messages[5] and "unknown verdict" not in messages[5]
    assert "named 'Nobody At All'" in messages[7]


def _expected(before: dict[str, int], after: dict[str, int]) -> None:
    """Two recalls, one remembered block (and its session run), one verdict: nothing else."""
    assert after["recall_log"] - before["recall_log"] == 2
    assert after["blocks"] - before["blocks"] == 1
    assert after["feedback"] - before["feedback"] == 1
    assert after["runs"] - before["runs"] == 4  # recall, ingest (remember), recall, feedback


def _cli(url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMVAULT, *args, "--store", url],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_over_http_the_tools_write_as_their_commands_and_the_shell_uses_the_server(
    seeded: str, tmp_path: Path
) -> None:
    before = _counts(seeded)
    with http_server(seeded, tmp_path) as base:
        seen = _mcp(f"{base}/mcp", _exercise)
        _check(seen)
        started = time.perf_counter()
        shell = _cli(seeded, tmp_path, "recall", "status of Quill", "--json")
        served_ms = (time.perf_counter() - started) * 1000
        assert shell.returncode == 0, shell.stderr
        assert json.loads(shell.stdout)["served_by"] == "server"
        refused = _cli(seeded, tmp_path, "recall", "  ")
        assert refused.returncode == 1 and "query is empty" in refused.stderr
        # The server lets go of a DuckDB file when a command asks for it, and answers on.
        status = _cli(seeded, tmp_path, "status")
        assert status.returncode == 0, status.stderr
        again = _mcp(f"{base}/mcp", lambda c: c.call_tool("recall", {"query": "Zanzibar"}))
        assert not again.is_error and again.structured_content["results"]
    after = _counts(seeded)
    _expected(before, {k: v - (2 if k in ("recall_log", "runs") else 0) for k, v in after.items()})
    started = time.perf_counter()
    alone = _cli(seeded, tmp_path, "recall", "status of Quill", "--json")
    alone_ms = (time.perf_counter() - started) * 1000
    assert alone.returncode == 0, alone.stderr
    assert json.loads(alone.stdout)["served_by"] == "process"
    print(f"memvault recall: {served_ms:.0f} ms via the server, {alone_ms:.0f} ms in-process")


def test_over_stdio_the_client_starts_the_server(seeded: str, tmp_path: Path) -> None:
    from mcp import StdioServerParameters

    before = _counts(seeded)
    params = StdioServerParameters(
        command=MEMVAULT, args=["serve", "--store", seeded], env=_env(tmp_path)
    )
    _check(_mcp(params, _exercise))
    _expected(before, _counts(seeded))
    assert discovery.read(seeded) is None


def test_http_refuses_other_hosts_origins_and_a_missing_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    with memvault.open(url) as store:
        fill(store, tmp_path)
    before = _counts(url)
    body = {"query": "status of Quill"}
    secret = "s3cret-s3cret-s3cret"
    with http_server(url, tmp_path, env={"MEMVAULT_SERVE_TOKEN": secret}) as base:
        port = base.rsplit(":", 1)[1]
        good = {"Authorization": f"Bearer {secret}"}
        for headers, status in [
            ({}, 401),
            ({"Authorization": "Bearer wrong"}, 401),
            ({"Authorization": secret}, 401),
            (good | {"Origin": "http://evil.example"}, 403),
            (good | {"Host": f"evil.example:{port}"}, 403),
            (good | {"Host": "127.0.0.1:1"}, 403),
        ]:
            for path in ("/mcp", "/memvault/v1/recall"):
                reply = httpx.post(base + path, json=body, headers=headers, timeout=10)
                assert reply.status_code == status, (headers, path, reply.text)
        found = _mcp(f"{base}/mcp", lambda c: c.call_tool("recall", body), headers=good)
        assert not found.is_error and found.structured_content["results"]
        rejected = _mcp
        with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the 401 in a group
            rejected(f"{base}/mcp", lambda c: c.call_tool("recall", body))
        shell = _cli(url, tmp_path, "recall", "status of Quill", "--json")
        assert shell.returncode == 0 and json.loads(shell.stdout)["served_by"] == "server"
    after = _counts(url)
    assert after["recall_log"] - before["recall_log"] == 2  # the two allowed recalls only


def test_a_stopped_server_writes_the_recalls_it_answered_before_it_exits(
    seeded: str, tmp_path: Path
) -> None:
    """The recall log is written after the answer; stopping the server (SIGTERM, as Ctrl-C)
    while writes wait writes them all: rows, runs and audit rows, undoable by recall id."""
    marker = tmp_path / "paused"
    env = _env(tmp_path) | {
        "MEMVAULT_TEST_PAUSE_AT": "recall-log-write",
        "MEMVAULT_TEST_PAUSE_MARKER": str(marker),
        "MEMVAULT_TEST_PAUSE_SECONDS": "2",
    }
    port = _free_port()
    before = _counts(seeded)
    with (tmp_path / "serve.log").open("w") as log:
        process = subprocess.Popen(
            [MEMVAULT, "serve", "--store", seeded, "--transport", "http", "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while discovery.read(seeded) is None:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
            ids = []
            server = discovery.read(seeded)
            assert server is not None
            for _ in range(3):
                answer = client.call(server, "recall", {"query": "status of Quill"})
                ids.append(answer["recall_id"])
            while not marker.exists():  # the writer holds the first batch, the rest wait
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            process.terminate()
            process.wait(timeout=30)
    after = _counts(seeded)
    assert after["recall_log"] - before["recall_log"] == 3
    assert after["runs"] - before["runs"] == 3
    with memvault.open(seeded) as store:
        for rid in ids:
            assert store.fetch("SELECT count(*) FROM audit_log WHERE run_id = :r", {"r": rid})[0][0] >= 2  # fmt: skip
    undone = _cli(seeded, tmp_path, "undo", ids[-1])
    assert undone.returncode == 0, undone.stderr
    assert _counts(seeded)["recall_log"] - before["recall_log"] == 2
