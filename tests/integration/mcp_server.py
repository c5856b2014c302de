"""Helpers for the tests that tend the reference MCP memory server.

The server is the npm package ``@modelcontextprotocol/server-memory``, pinned in
``mcp-server/package.json`` and installed by ``scripts/setup.sh --test``
(``npm ci --prefix mcp-server``). Each test copies the seed graph
``tests/fixtures/mcp/memory.jsonl`` into its tmp_path and starts its own server
on that copy (``MEMORY_FILE_PATH``), so no test sees another's writes.

The seed graph holds what the gardener should find: one person under two
spellings (``Jonathan Pryce`` / ``Jon Pryce``), a repeated observation on
``default_user``, a look-alike pair that are different people (``Alex Kim`` /
``Alex Kimura``), a bloated entity (``Project Atlas`` with an observation over
750 characters), stale facts (``Priya Natarajan works_at`` Acme Corp and Globex,
``default_user lives_in`` Berlin and Lisbon, with "moved in …" observations), and
orphans (``Sourdough starter``, linkable to ``default_user`` by its text;
``Tabs versus spaces``, not linkable).
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memvault.gardener.mcp_client import McpStdioClient
from tests.helpers import require_service

REPO = Path(__file__).resolve().parents[2]
SEED_GRAPH = REPO / "tests" / "fixtures" / "mcp" / "memory.jsonl"
SERVER_PACKAGE = REPO / "mcp-server" / "node_modules" / "@modelcontextprotocol" / "server-memory"
SERVER_SCRIPT = SERVER_PACKAGE / "dist" / "index.js"


def server_command() -> list[str] | None:
    """``node <installed server>/dist/index.js``, or None when node or the package is missing."""
    node = shutil.which("node")
    if node is None or not SERVER_SCRIPT.is_file():
        return None
    return [node, str(SERVER_SCRIPT)]


def server_version() -> str | None:
    manifest = SERVER_PACKAGE / "package.json"
    if not manifest.is_file():
        return None
    return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])


@dataclass(frozen=True)
class MemoryServer:
    """How to start one reference server on one memory file (the process is started per use)."""

    command: tuple[str, ...]
    memory_file: Path

    @property
    def env(self) -> dict[str, str]:
        return {"MEMORY_FILE_PATH": str(self.memory_file)}

    @property
    def url(self) -> str:
        """The ``mcp+stdio:`` store URL ``memvault garden --store`` takes."""
        words = [f"MEMORY_FILE_PATH={self.memory_file}", *self.command]
        return "mcp+stdio:" + shlex.join(words)

    def client(self, timeout: float = 30.0) -> McpStdioClient:
        return McpStdioClient(self.command, env=self.env, timeout=timeout)


def seed_memory_file(directory: Path, source: Path = SEED_GRAPH) -> Path:
    """A fresh copy of the seed graph in ``directory`` (the server will rewrite it)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "memory.jsonl"
    shutil.copyfile(source, target)
    return target


@dataclass(frozen=True)
class GraphFile:
    """A memory.jsonl as sets, for before/after comparisons that ignore order and layout."""

    entities: dict[str, tuple[str, tuple[str, ...]]]  # name -> (entityType, observations)
    relations: set[tuple[str, str, str]]  # (from, relationType, to)

    @property
    def observations(self) -> set[tuple[str, str]]:
        """Every (entity, observation text) pair."""
        return {(name, text) for name, (_, obs) in self.entities.items() for text in obs}

    @property
    def observation_texts(self) -> set[str]:
        return {text for _, (_, obs) in self.entities.items() for text in obs}

    @property
    def observation_count(self) -> int:
        return sum(len(obs) for _, obs in self.entities.values())


def read_graph_file(path: Path) -> GraphFile:
    """Parse a memory.jsonl the way the server does (entity and relation lines)."""
    entities: dict[str, tuple[str, tuple[str, ...]]] = {}
    relations: set[tuple[str, str, str]] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("type") == "entity":
            entities[row["name"]] = (row["entityType"], tuple(row["observations"]))
        elif row.get("type") == "relation":
            relations.add((row["from"], row["relationType"], row["to"]))
    return GraphFile(entities=entities, relations=relations)


@pytest.fixture
def mcp_memory(tmp_path: Path) -> MemoryServer:
    """The reference MCP memory server on a fresh copy of the seed graph (not started yet).

    Skips on a laptop without node or ``mcp-server/node_modules``; fails under CI=true.
    """
    command = server_command()
    require_service(
        command is not None,
        "node and @modelcontextprotocol/server-memory (npm ci --prefix mcp-server)",
    )
    assert command is not None
    return MemoryServer(command=tuple(command), memory_file=seed_memory_file(tmp_path / "mcp"))


@pytest.fixture
def mcp_session(mcp_memory: MemoryServer) -> Iterator[McpStdioClient]:
    """A started MCP session with the reference server, stopped after the test."""
    with mcp_memory.client() as client:
        yield client
