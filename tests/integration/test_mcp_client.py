"""The synchronous MCP stdio client against the real reference memory server.

Also the failure paths a user meets first: a command that does not exist, a
server that exits at start, one that never answers, one that dies mid-session
(those use a tiny Python "server", so they need no node).
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault.errors import StoreError
from memvault.gardener.mcp_client import (
    McpError,
    McpServerError,
    McpStdioClient,
    McpToolError,
    parse_stdio_url,
)
from tests.integration.mcp_server import MemoryServer, read_graph_file

pytestmark = pytest.mark.integration

REFERENCE_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}


# --------------------------------------------------------------------------- URLs


def test_stdio_url_takes_leading_env_words_and_shell_quoting() -> None:
    command = parse_stdio_url(
        "mcp+stdio:MEMORY_FILE_PATH='/data/my memory.jsonl' DEBUG=1 npx -y "
        "@modelcontextprotocol/server-memory"
    )
    assert command.env == {"MEMORY_FILE_PATH": "/data/my memory.jsonl", "DEBUG": "1"}
    assert command.argv == ("npx", "-y", "@modelcontextprotocol/server-memory")
    assert parse_stdio_url(command.url) == command
    # '=' after the command is an argument, not an environment variable
    assert parse_stdio_url("mcp+stdio:server --file=x.jsonl").argv == ("server", "--file=x.jsonl")
    assert parse_stdio_url("mcp+stdio:///usr/bin/server").argv == ("/usr/bin/server",)


@pytest.mark.parametrize(
    "url", ["mcp+stdio:", "mcp+stdio:A=1 B=2", "duckdb:///x.duckdb", "mcp+stdio:'unclosed"]
)
def test_bad_stdio_urls_say_what_to_write(url: str) -> None:
    with pytest.raises(McpError, match="mcp\\+stdio"):
        parse_stdio_url(url)


# --------------------------------------------------------------------------- the reference server


def test_lists_the_reference_servers_tools_with_schemas_and_hints(
    mcp_session: McpStdioClient,
) -> None:
    tools = {tool.name: tool for tool in mcp_session.tools()}
    assert set(tools) == REFERENCE_TOOLS
    assert mcp_session.server_name == "memory-server"
    assert tools["add_observations"].parameters == ("observations",)
    assert tools["search_nodes"].input_schema["required"] == ["query"]
    assert tools["read_graph"].read_only is True
    assert tools["delete_relations"].destructive is True
    assert tools["create_relations"].destructive is False


def test_reads_and_writes_the_seeded_graph(
    mcp_session: McpStdioClient, mcp_memory: MemoryServer
) -> None:
    seeded = read_graph_file(mcp_memory.memory_file)
    graph = mcp_session.call("read_graph")
    assert {e["name"] for e in graph["entities"]} == set(seeded.entities)
    assert len(graph["relations"]) == len(seeded.relations)

    found = mcp_session.call("search_nodes", {"query": "globex"})
    assert {e["name"] for e in found["entities"]} == {"Priya Natarajan", "Globex"}

    added = mcp_session.call(
        "add_observations",
        {"observations": [{"entityName": "Globex", "contents": ["Founded in 2009"]}]},
    )
    assert added == [{"entityName": "Globex", "addedObservations": ["Founded in 2009"]}]
    on_disk = read_graph_file(mcp_memory.memory_file)
    assert ("Globex", "Founded in 2009") in on_disk.observations
    assert on_disk.observations - {("Globex", "Founded in 2009")} == seeded.observations


def test_a_tool_error_raises_with_the_servers_message(mcp_session: McpStdioClient) -> None:
    with pytest.raises(McpToolError, match="Entity with name Nobody not found") as caught:
        mcp_session.call(
            "add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}
        )
    assert caught.value.tool == "add_observations"
    assert isinstance(caught.value, StoreError)
    with pytest.raises(McpToolError, match="no_such_tool"):
        mcp_session.call("no_such_tool", {})
    # the session survives a refused call
    assert mcp_session.call("open_nodes", {"names": ["Globex"]})["entities"][0]["name"] == "Globex"


def test_environment_reaches_the_server(mcp_memory: MemoryServer, tmp_path: Path) -> None:
    """MEMORY_FILE_PATH from the URL decides which file the server reads."""
    empty = tmp_path / "empty.jsonl"
    client = McpStdioClient.from_url(
        mcp_memory.url.replace(str(mcp_memory.memory_file), str(empty))
    )
    with client:
        assert client.call("read_graph") == {"entities": [], "relations": []}
    with McpStdioClient.from_url(mcp_memory.url) as client:
        assert len(client.call("read_graph")["entities"]) == 14


# --------------------------------------------------------------------------- failures


def _python_server(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_missing_command_says_which(tmp_path: Path) -> None:
    with pytest.raises(McpServerError, match=r"cannot start MCP server.*no-such-server"):
        McpStdioClient([str(tmp_path / "no-such-server")]).start()


def test_a_server_that_exits_at_start_quotes_its_stderr() -> None:
    code = "import sys; sys.stderr.write('bad config: MEMORY_FILE_PATH unset\\n'); sys.exit(3)"
    with pytest.raises(McpServerError, match="bad config: MEMORY_FILE_PATH unset"):
        McpStdioClient(_python_server(code), timeout=10).start()


def test_a_silent_server_times_out() -> None:
    started = time.monotonic()
    with pytest.raises(McpServerError, match=r"handshake.*timeout 1 s"):
        McpStdioClient(_python_server("import time; time.sleep(60)"), timeout=1).start()
    # 1 s handshake timeout + the SDK's bounded shutdown (2 s grace, then SIGTERM)
    assert time.monotonic() - started < 10


def _children_running(pattern: str) -> list[int]:
    out = subprocess.run(
        ["ps", "-ww", "-o", "pid=,args=", "--ppid", str(os.getpid())],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [int(line.split()[0]) for line in out.splitlines() if pattern in line]


def test_a_server_that_dies_mid_session_fails_every_later_call(
    mcp_memory: MemoryServer,
) -> None:
    with mcp_memory.client(timeout=5) as client:
        assert client.call("read_graph")["entities"]
        (pid,) = _children_running(str(mcp_memory.command[-1]))
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(McpServerError, match="failed on tool 'read_graph'"):
            client.call("read_graph")
        with pytest.raises(McpServerError, match="is gone"):
            client.call("read_graph")
        assert not client.running


def test_the_server_is_stopped_when_the_block_ends(mcp_memory: MemoryServer) -> None:
    with mcp_memory.client() as client:
        client.call("read_graph")
        assert len(_children_running(str(mcp_memory.command[-1]))) == 1
    assert _children_running(str(mcp_memory.command[-1])) == []
    client.close()  # idempotent
    with pytest.raises(McpServerError, match="not running"):
        client.call("read_graph")


def test_a_client_nobody_closes_stops_its_server_when_collected(mcp_memory: MemoryServer) -> None:
    """Otherwise the server (and the event loop thread) would outlive it, and hang the exit."""
    client = mcp_memory.client()
    client.start()
    assert len(_children_running(str(mcp_memory.command[-1]))) == 1
    del client
    gc.collect()
    assert _children_running(str(mcp_memory.command[-1])) == []
