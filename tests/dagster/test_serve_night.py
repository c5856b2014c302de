"""An agent session through a whole night: the agent recalls and remembers over MCP (the
Python SDK; stdio on DuckDB, streamable HTTP on PostgreSQL) while the night's jobs run on
the same store, each launched the way the daemon launches it (a process of its own, the
multiprocess executor: a process per step). The night succeeds; the server is killed
(SIGKILL) with writes still queued and a new session's server applies them, once; the
owner's commands run while a server is connected; at the end every memory the agent was
told was kept is in the store once, with its vector, and every recall it got is logged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import dagster as dg
import pytest

import memvault
from memvault.serve import discovery
from memvault.serve.queue import queue_path
from tests.dagster.dream_support import seed_demo_store
from tests.dagster.run_checks import NIGHT, check_run

ROOT = Path(__file__).resolve().parents[2]
MEMVAULT = str(Path(sys.executable).with_name("memvault"))
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


class Agent:
    """One agent session in a thread of its own: remember a note, recall it by its words,
    again and again until stopped (or until its server is gone)."""

    def __init__(self, target: Any, name: str) -> None:
        self.target, self.name = target, name
        self.remembered: dict[str, str] = {}  # text -> block id, as answered
        self.recalls: list[str] = []  # recall ids answered
        self.errors: list[str] = []  # tool errors (a refusal, a failure)
        self.missed: list[str] = []  # a memory the next recall did not find first
        self.ended: str | None = None  # why the session ended, when its server went
        self._stop = threading.Event()
        self._thread = threading.Thread(target=anyio.run, args=(self._main,), daemon=True)

    def start(self) -> Agent:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)
        assert not self._thread.is_alive(), "the agent session did not end"

    async def _main(self) -> None:
        try:
            async with _client(self.target) as client:
                k = 0
                while not self._stop.is_set():
                    await self._turn(client, k)
                    k += 1
                    await anyio.sleep(0.2)
        except BaseException as exc:  # the server went (killed): the session ends
            self.ended = f"{type(exc).__name__}: {exc}"

    async def _turn(self, client: Any, k: int) -> None:
        word = f"zq{self.name}{k}x"
        text = f"The {word} ledger is kept in drawer {k} of the {self.name} cabinet."
        kept = await client.call_tool("remember", {"text": text, "speaker": "user"})
        if kept.is_error:
            self.errors.append(kept.content[0].text)
            return
        block_id = kept.structured_content["block_id"]
        self.remembered[text] = block_id
        found = await client.call_tool("recall", {"query": f"{word} ledger drawer", "limit": 3})
        if found.is_error:
            self.errors.append(found.content[0].text)
            return
        self.recalls.append(found.structured_content["recall_id"])
        hits = found.structured_content["results"]
        if not hits or hits[0]["block_id"] != block_id:
            self.missed.append(text)


def _client(target: Any) -> Any:
    import contextlib

    import httpx2
    from mcp import Client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    @contextlib.asynccontextmanager
    async def opened() -> Any:
        if isinstance(target, str):
            async with (
                httpx2.AsyncClient(timeout=120) as http,
                Client(streamable_http_client(target, http_client=http), mode="legacy") as client,
            ):
                yield client
            return
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(
                stdio_client(target, errlog=errlog), mode="legacy", read_timeout_seconds=120
            ) as client:
                yield client

    return opened()


def _launch(home: Path, job: str, url: str) -> subprocess.Popen[str]:
    """A job in a process of its own, as a run worker runs it (see tests/dagster/launcher.py)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.dagster.launcher", job, url],
        cwd=ROOT,
        env=os.environ | {"DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(home: Path, job: str, process: subprocess.Popen[str]) -> None:
    out, err = process.communicate(timeout=900)
    assert process.returncode == 0, err[-3000:]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        check_run(instance, out.strip().splitlines()[-1], job)


def _waiting(url: str) -> list[dict[str, Any]]:
    """The entries of the server's write queue not yet in the store."""
    path = queue_path(url)
    if not path.exists():
        return []
    entries: dict[int, dict[str, Any]] = {}
    for line in path.read_bytes().splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if "done" in data:
            for seq in data["done"]:
                entries.pop(seq, None)
        else:
            entries[data["seq"]] = data
    return list(entries.values())


def _server_pid(url: str) -> int:
    deadline = time.monotonic() + 120
    while (info := discovery.read(url)) is None:
        assert time.monotonic() < deadline, "no server published itself"
        time.sleep(0.2)
    return info.pid


def _cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMVAULT, *args, "--store", url], capture_output=True, text=True, timeout=300
    )


def _owner_commands(url: str, tmp_path: Path, undo_run: str) -> None:
    """The owner's commands, while a server is connected (DuckDB: each asks it to let go)."""
    for args in (("status",), ("runs",), ("export", "-o", str(tmp_path / "export.jsonl")), ("collect",)):  # fmt: skip
        done = _cli(url, *args)
        assert done.returncode == 0, (args, done.stderr[-2000:])
    # The agent's recalls have read the memory since (its access count): --force, as the
    # refusal without it says.
    undone = _cli(url, "undo", undo_run, "--force")
    assert undone.returncode == 0, undone.stderr[-2000:]


def _check_kept(url: str, agents: list[Agent], undone_block: str) -> None:
    """Every memory an agent was told was kept is in the store once, active, with a vector of
    its own text (but the one the owner undid); every recall it got is logged."""
    remembered = {b for a in agents for b in a.remembered.values()}
    recalls = [r for a in agents for r in a.recalls]
    with memvault.open(url) as store:
        rows = store.fetch(
            "SELECT b.id, b.status, count(e.target_id) FROM blocks b LEFT JOIN embeddings e "
            "ON e.target_kind = 'block' AND e.target_id = b.id AND e.text_hash = md5(b.text) "
            "WHERE b.id = ANY(:ids) GROUP BY b.id, b.status",
            {"ids": sorted(remembered)},
        )
        logged = store.fetch("SELECT id FROM recall_log WHERE id = ANY(:ids)", {"ids": recalls})
        runs = store.fetch("SELECT count(*) FROM runs WHERE id = ANY(:ids)", {"ids": recalls})
    # Undoing a remember takes its block out (the removal audited); every other one is there.
    kept = remembered - {undone_block}
    assert {r[0] for r in rows} == kept, "a memory the agent was told was kept is lost"
    assert all(r[1] == "active" and r[2] == 1 for r in rows), [r for r in rows if r[2] != 1]
    assert len(logged) == len(recalls) == len(set(recalls)) == runs[0][0]


def _run_night(home: Path, url: str, during: Any, after: Any) -> None:
    """The night's jobs one after another; ``during(job, process)`` while each runs,
    ``after(job)`` once it succeeded."""
    for job in NIGHT:
        process = _launch(home, job, url)
        during(job, process)
        _finish(home, job, process)
        after(job)


@pytest.fixture
def night_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    monkeypatch.setenv("MEMVAULT_INBOX", str(tmp_path / "inbox"))
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    return tmp_path


def test_an_agent_session_through_a_night_on_duckdb_over_stdio(
    night_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import StdioServerParameters

    home = night_env / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    url = f"duckdb://{night_env / 'store.duckdb'}"
    seed_demo_store(url, night_env, sessions=12)
    # A short hold-off: the server takes the file back between steps and is asked to let
    # go by the next one, again and again.
    monkeypatch.setenv("MEMVAULT_SERVE_HOLD_OFF_S", "2")
    params = StdioServerParameters(command=MEMVAULT, args=["serve", "--store", url], env=dict(os.environ))  # fmt: skip
    agents = [Agent(params, "a").start()]
    killed: list[int] = []

    def during(job: str, process: subprocess.Popen[str]) -> None:
        if job != "dream_job":
            return
        # While the dream holds the file, the agent's writes wait in the queue: kill the
        # server then, and start a new session once the dream is done.
        deadline = time.monotonic() + 600
        while not any(e["kind"] == "remember" for e in _waiting(url)):
            assert process.poll() is None and time.monotonic() < deadline, "never queued"
            time.sleep(0.05)
        pid = _server_pid(url)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    def after(job: str) -> None:
        if job != "dream_job":
            return
        assert killed and agents[0].ended, "the first session ended with its server"
        assert _waiting(url), "the killed server left writes in its queue"
        agents.append(Agent(params, "b").start())  # a new session: its server applies them

    _run_night(home, url, during, after)
    undo_run, undone = _a_remember_run(url, agents[1])
    _owner_commands(url, night_env, undo_run)
    agents[1].stop()
    for agent in agents:
        assert not agent.errors and not agent.missed, (agent.errors, agent.missed)
    _check_kept(url, agents, undone)
    assert not _waiting(url)


def _a_remember_run(url: str, agent: Agent) -> tuple[str, str]:
    """The ingest run of the agent's first memory (the owner undoes it), and its block."""
    block = next(iter(agent.remembered.values()))
    deadline = time.monotonic() + 120
    while True:  # in the store's file once the server has held it again (DuckDB)
        with memvault.open(url) as store:
            found = store.fetch(
                "SELECT run_id FROM audit_log WHERE target_table = 'blocks' "
                "AND target_id = :b AND action = 'ingest'",
                {"b": block},
            )
        if found:
            return str(found[0][0]), block
        assert time.monotonic() < deadline, f"{block} never reached the store"
        time.sleep(3)


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_an_agent_session_through_a_night_on_postgresql_over_http(
    night_env: Path, store_url: str, pg_dagster_home: Path
) -> None:
    from tests.integration.test_serve import _free_port

    seed_demo_store(store_url, night_env, sessions=12)
    servers: list[subprocess.Popen[bytes]] = []

    def start_server(**env: str) -> str:
        port = _free_port()
        log = (night_env / f"serve-{len(servers)}.log").open("w")
        servers.append(
            subprocess.Popen(
                [
                    MEMVAULT,
                    "serve",
                    "--store",
                    store_url,
                    "--transport",
                    "http",
                    "--port",
                    str(port),
                ],
                env=os.environ | env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        _server_pid(store_url)
        return f"http://127.0.0.1:{port}/mcp"

    # The first server's writer never writes a recall's log by itself (it pauses there):
    # those logs wait in the queue until a remember applies them, or the next server does.
    first = start_server(
        MEMVAULT_TEST_PAUSE_AT="recall-log-write", MEMVAULT_TEST_PAUSE_SECONDS="3600"
    )
    agents = [Agent(first, "a").start()]
    state: dict[str, Any] = {}

    def during(job: str, process: subprocess.Popen[str]) -> None:
        if job != "dream_job":
            return
        while len(agents[0].remembered) < 3:
            assert agents[0].ended is None, agents[0].ended
            time.sleep(0.1)
        agents[0].stop()
        state["queued"] = _only_recalls(first, 3)
        assert len([e for e in _waiting(store_url) if e["kind"] == "recall"]) >= 3
        servers[0].kill()  # SIGKILL, the recalls' logs still queued
        servers[0].wait(timeout=30)

    def after(job: str) -> None:
        if job == "dream_job":
            agents.append(Agent(start_server(), "b").start())  # applies them as it starts

    try:
        _run_night(pg_dagster_home, store_url, during, after)
        undo_run, undone = _a_remember_run(store_url, agents[1])
        _owner_commands(store_url, night_env, undo_run)
        agents[1].stop()
    finally:
        for server in servers:
            if server.poll() is None:
                server.terminate()
                server.wait(timeout=60)
    agents[0].recalls += state["queued"]
    for agent in agents:
        assert not agent.errors and not agent.missed, (agent.errors, agent.missed)
    _check_kept(store_url, agents, undone)
    assert not _waiting(store_url)


def _only_recalls(target: str, n: int) -> list[str]:
    """``n`` recalls on a session of their own; their recall ids."""

    async def main() -> list[str]:
        async with _client(target) as client:
            found = [await client.call_tool("recall", {"query": "ledger drawer"}) for _ in range(n)]
        assert not any(f.is_error for f in found)
        return [f.structured_content["recall_id"] for f in found]

    return anyio.run(main)
