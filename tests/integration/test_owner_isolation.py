"""Two owners on one installation: what an agent or a person reaches for owner A shows nothing
of owner B's, through the long-lived paths (``memvault serve --owner A`` over MCP, the review
page started for A), on DuckDB files and on PostgreSQL schemas.

The one-shot commands (recall, show, asof, feedback, export, runs, the audit log) are checked
by tests/cli/test_owners.py; here the servers, which hold a store open for as long as they run.
Bob's history names every person, company, place and preference differently from Alice's, so
any of his words in Alice's answers or pages is a leak.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memvault
from memvault.ingest import ingest_file
from memvault.owners import Registry
from tests.cli.test_owners import BOB_ONLY, SMALL, bob_history
from tests.helpers import PG_URL, require_service
from tests.integration.test_serve import _free_port, _mcp
from tests.review_support import two_waiting_changes

pytestmark = pytest.mark.integration
MEMVAULT = str(Path(sys.executable).with_name("memvault"))
#: Alice's two waiting changes (not the usual ones: Bob's history names Globex).
ALICE_MOVES = (("vandelay", "paris", "berlin"), ("initech", "oslo", "rome"))
#: Bob's two waiting changes: organizations and places Alice's memory never names.
BOB_MOVES = (("umbrella", "quito", "lima"), ("hooli", "cusco", "tacna"))
BOB_WORDS = (*BOB_ONLY, "Umbrella", "Quito", "Lima", "Hooli", "Cusco", "Tacna")
COUNTED = ("blocks", "recall_log", "feedback", "runs", "audit_log", "review_queue")


@pytest.fixture(params=["duckdb", "postgresql"])
def owners(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    """Alice and Bob, each with a history and two changes waiting for review in their own
    store (a DuckDB file each, or a schema each on one PostgreSQL server)."""
    monkeypatch.setenv("MEMVAULT_OWNERS", str(tmp_path / "registry" / "owners.json"))
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    base = None
    if request.param == "postgresql":
        require_service(request.getfixturevalue("postgres_available"), f"PostgreSQL at {PG_URL}")
        base = PG_URL
    tag = secrets.token_hex(3)
    alice, bob = f"alice_{tag}", f"bob_{tag}"
    registry = Registry()
    for name, history, moves in (
        (alice, SMALL, ALICE_MOVES),
        (bob, bob_history(tmp_path), BOB_MOVES),
    ):
        url = registry.add(name, base).store
        folder = tmp_path / name
        folder.mkdir()
        with memvault.open(url) as store:
            ingest_file(store, history)
        two_waiting_changes(url, folder, moves)
    yield alice, bob
    if base:
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True) as con:
            for name in (alice, bob):
                con.execute(f"DROP SCHEMA IF EXISTS owner_{name} CASCADE")


def _env(tmp_path: Path) -> dict[str, str]:
    """A server's environment: the registry, the test's embedder, a runtime folder of its own
    (sockets, discovery and key files), nothing else of the caller's memvault settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return env | {
        "MEMVAULT_OWNERS": os.environ["MEMVAULT_OWNERS"],
        "MEMVAULT_EMBEDDER": "hashing",
        "TMPDIR": str(tmp_path),
        "XDG_RUNTIME_DIR": str(runtime),
    }


def _counts(owner: str) -> dict[str, int]:
    with memvault.open(Registry().get(owner).store) as store:
        return store.counts(COUNTED)


def _leaks(text: str) -> list[str]:
    return [word for word in BOB_WORDS if word in text]


async def _ask_as_alice(client: Any) -> dict[str, Any]:
    """Questions both memories answer, Bob's names asked for by name, and one memory written."""
    seen: dict[str, Any] = {}
    seen["recall"] = await client.call_tool("recall", {"query": "who works at which company"})
    seen["by_name"] = await client.call_tool("recall", {"query": "Grace Hopper Globex Cobol"})
    seen["places"] = await client.call_tool("recall", {"query": "where is Umbrella located"})
    seen["asof"] = await client.call_tool("asof", {"subject": "Ada Lovelace"})
    seen["asof_bob"] = await client.call_tool("asof", {"subject": "Grace Hopper"})
    seen["remember"] = await client.call_tool(
        "remember", {"text": "Ada moved her team to the Zanzibar office.", "speaker": "user"}
    )
    return seen


def test_alices_mcp_server_answers_from_her_memory_alone(
    owners: tuple[str, str], tmp_path: Path
) -> None:
    from mcp import StdioServerParameters

    alice, bob = owners
    bob_before = _counts(bob)
    alice_before = _counts(alice)
    params = StdioServerParameters(
        command=MEMVAULT, args=["serve", "--owner", alice], env=_env(tmp_path)
    )
    seen = _mcp(params, _ask_as_alice)

    unknown = seen.pop("asof_bob")  # Bob's name is no one in Alice's memory
    assert unknown.is_error and "nobody and nothing in memory is named" in str(unknown.content)
    for name, result in seen.items():
        assert not result.is_error, (name, result.content)
    said = json.dumps({k: _answer(v.structured_content) for k, v in seen.items()})
    assert "Acme" in said, "Alice's own memory was not found"
    assert not _leaks(said), (_leaks(said), said[:2000])
    assert _counts(bob) == bob_before, "a server of Alice's wrote to Bob's store"
    after = _counts(alice)
    assert after["blocks"] == alice_before["blocks"] + 1, "the remembered memory went elsewhere"
    assert after["recall_log"] > alice_before["recall_log"]


def _answer(content: dict[str, Any]) -> dict[str, Any]:
    """What a tool answered, without the question it echoes (Bob's names, asked by name)."""
    return {k: v for k, v in content.items() if k not in ("query", "subject")}


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode("utf-8"))


def test_alices_review_page_shows_her_waiting_changes_only(
    owners: tuple[str, str], tmp_path: Path
) -> None:
    alice, bob = owners
    env = _env(tmp_path)
    port = _free_port()
    log = (tmp_path / "review.log").open("w")
    server = subprocess.Popen(
        [MEMVAULT, "--owner", alice, "review", "--serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        key_path = Path(env["XDG_RUNTIME_DIR"]) / "memvault" / f"review-{port}.key"
        deadline = time.monotonic() + 60
        while True:
            try:
                key = key_path.read_text()
                page = _page(f"http://127.0.0.1:{port}/k/{key.strip()}/")
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "review.log").read_text()
                assert time.monotonic() < deadline, (tmp_path / "review.log").read_text()
                time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    assert "Berlin" in page and "Rome" in page, "Alice's waiting changes are not on her page"
    assert not _leaks(page), (_leaks(page), page[:2000])
    with memvault.open(Registry().get(bob).store) as store:
        assert store.counts(["review_queue"])["review_queue"] == 2, "Bob's items were touched"
