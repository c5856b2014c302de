"""The tools as an agent meets them, through the MCP Python SDK's client over stdio (the way
Claude Code starts `memvault serve`), on both backends: descriptions and schemas written for
a model, strict arguments refused in one line with nothing written, answers within their
caps, `asof` by the names recall takes, a sign when nothing matches, and the current memory
of a changed attribute first."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import memvault
from tests.recall_support import fill

pytestmark = pytest.mark.integration

MEMVAULT = str(Path(sys.executable).with_name("memvault"))
COUNTED = ("blocks", "recall_log", "feedback", "runs", "audit_log")
#: Small caps, so a test's memories pass them (the defaults are checked in the unit tests).
CAPS = {
    "MEMVAULT_SERVE_HIT_CHARS": "400",
    "MEMVAULT_SERVE_RESULT_CHARS": "3000",
    "MEMVAULT_SERVE_MAX_FACTS": "1",
}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    return (
        env
        | CAPS
        | {
            "MEMVAULT_EMBEDDER": "hashing",
            "TMPDIR": str(tmp_path),
            "XDG_RUNTIME_DIR": "",
        }
    )


def _counts(url: str) -> dict[str, int]:
    with memvault.open(url) as store:
        return store.counts(COUNTED)


def _session(url: str, tmp_path: Path, work: Callable[[Any], Awaitable[Any]]) -> Any:
    """``work(client)`` on an MCP client session to `memvault serve` started over stdio."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=MEMVAULT, args=["serve", "--store", url], env=_env(tmp_path)
    )

    async def main() -> Any:
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(
                stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=60
            ) as client:
                return await work(client)

    return anyio.run(main)


@pytest.fixture
def seeded(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    with memvault.open(store_url) as store:
        fill(store, tmp_path)
    return store_url


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("recall", {"query": "status of Quill", "limit": True}, "limit must be a whole number"),
    ("recall", {"query": "status of Quill", "limit": "10"}, "limit must be a whole number"),
    ("recall", {"query": "status of Quill", "verbose": True}, "takes no argument 'verbose'"),
    ("remember", {"text": "Quill moved to Zanzibar.", "tags": ["x"]}, "takes no argument 'tags'"),
    ("remember", {"text": "Quill moved to Zanzibar.", "speaker": 7}, "speaker must be text"),
    ("feedback", {"recall_id": "recall-nope", "verdict": "correct"}, "no recall with id"),
    ("asof", {"subject": "Ada", "predicate": "editor"}, "works_at"),
]


#: Ada's editor, told in July and again in November (no night has read them yet).
EDITOR_MEMORIES = [
    ("Ada uses Neovim with a small config for all her editing.", "2026-07-14T10:00:00Z"),
    ("Ada switched to VS Code for the debugger.", "2026-11-20T16:00:00Z"),
]


async def _agent(client: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {"tools": (await client.list_tools()).tools}
    seen["bad"] = [await client.call_tool(name, args) for name, args, _ in BAD_CALLS]
    seen["asof"] = await client.call_tool("asof", {"subject": "ada"})
    long_memory = "Quill launch checklist: " + " ".join(
        f"step {k} verify the Zanzibar rollout" for k in range(400)
    )
    seen["remember"] = await client.call_tool("remember", {"text": long_memory})
    seen["long"] = await client.call_tool("recall", {"query": "Quill launch checklist Zanzibar"})
    seen["nonsense"] = await client.call_tool("recall", {"query": "zebra quantum paella"})
    for text, when in EDITOR_MEMORIES:
        await client.call_tool("remember", {"text": text, "occurred_at": when})
    seen["editor"] = await client.call_tool("recall", {"query": "what editor does Ada use"})
    return seen


def test_an_agent_is_told_what_each_tool_does_and_held_to_its_arguments(
    seeded: str, tmp_path: Path
) -> None:
    before = _counts(seeded)
    seen = _session(seeded, tmp_path, _agent)

    tools = {t.name: t for t in seen["tools"]}
    assert set(tools) == {"recall", "remember", "feedback", "asof"}
    for tool in tools.values():
        assert "memvault recall" not in tool.description and "memvault undo" not in tool.description
        assert "Returns JSON" in tool.description
        assert tool.input_schema["additionalProperties"] is False
    query = tools["recall"].input_schema
    assert query["properties"]["query"]["maxLength"] == 2000
    assert query["properties"]["limit"]["maximum"] == 100
    assert "400 characters" in tools["recall"].description  # the server's own cap, said

    for (name, _, said), result in zip(BAD_CALLS, seen["bad"], strict=True):
        text = result.content[0].text
        assert result.is_error, (name, text)
        assert said in text and text.startswith(name), text
        assert "\n" not in text and "pydantic" not in text and "http" not in text, text
        assert "memvault " not in text, text

    asof = seen["asof"].structured_content
    assert not seen["asof"].is_error and asof["subject_id"] == "ent_ada"
    assert asof["predicates"] == {"uses_tool": 1, "works_at": 1}
    assert len(asof["facts"]) == 1 and asof["more_facts"] == 1  # MEMVAULT_SERVE_MAX_FACTS=1

    assert not seen["remember"].is_error
    block_id = seen["remember"].structured_content["block_id"]
    long = seen["long"].structured_content
    top = next(h for h in long["results"] if h["block_id"] == block_id)
    assert top["text_cut"] is True
    assert len(top["text"]) <= 400 and top["text_chars"] > 10_000
    assert len(seen["long"].content[0].text) <= 3000  # what the agent reads, within the cap

    nonsense = seen["nonsense"].structured_content
    assert nonsense["weak_match"] is True and len(nonsense["results"]) <= 3
    assert long["weak_match"] is False

    editor = seen["editor"].structured_content
    hits = {h["block_id"]: h for h in editor["results"]}
    first = editor["results"][0]
    assert first["text"] == EDITOR_MEMORIES[1][0] and not first["older"], editor["results"]
    july = next(h for h in hits.values() if h["text"] == EDITOR_MEMORIES[0][0])
    assert july["older"] is True and july["superseded_by"] == first["block_id"]

    after = _counts(seeded)
    # the refused calls wrote nothing: three remembered memories (their runs), three recalls
    assert after["blocks"] - before["blocks"] == 3
    assert after["recall_log"] - before["recall_log"] == 3
    assert after["feedback"] == before["feedback"]
    assert after["runs"] - before["runs"] == 6
