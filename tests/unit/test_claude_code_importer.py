"""The Claude Code importer, read against the hand-written transcripts in tests/fixtures."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from memvault.errors import IngestError, MemvaultError
from memvault.importers import ImportedSession, read_claude_code
from memvault.records import BlockRecord, EntityRecord, MentionRecord, SessionRecord

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROJECTS = FIXTURES / "claude_code"
MEMVAULT_DIR = PROJECTS / "-home-ada-src-memvault"
STORE_SESSION = MEMVAULT_DIR / "4f6d2c1e-8b3a-4e7f-9d21-6c5b0a9e3f17.jsonl"
IMPORTER_SESSION = MEMVAULT_DIR / "9a1c7e55-2d4b-4c3e-8f60-b7e2d9c41a08.jsonl"
SUBAGENT = MEMVAULT_DIR / "agent-1a2b3c4d.jsonl"
SHOP_SESSION = PROJECTS / "-home-ada-src-shop" / "c3e8b0d2-7f14-4a9b-b5d6-0e2f8a1c9d47.jsonl"
MALFORMED = (
    FIXTURES
    / "claude_code_malformed/-home-ada-src-broken/5e0b7a93-6c2d-4f18-a4e9-3d8c1b2f0e65.jsonl"
)


def only(path: Path, **options: Any) -> ImportedSession:
    (session,) = read_claude_code(path, **options)
    return session


def session_of(imported: ImportedSession) -> SessionRecord:
    (session,) = [r for r in imported.records if isinstance(r, SessionRecord)]
    return session


def blocks_of(imported: ImportedSession) -> list[BlockRecord]:
    return [r for r in imported.records if isinstance(r, BlockRecord)]


def entities_of(imported: ImportedSession) -> dict[str, str]:
    """Entity name -> type."""
    return {r.name: r.entity_type for r in imported.records if isinstance(r, EntityRecord)}


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def user_line(
    text: str, uuid: str, timestamp: str | None = "2025-10-06T08:00:00Z"
) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": "user",
        "uuid": uuid,
        "sessionId": "s-1",
        "cwd": "/tmp/x",
        "message": {"role": "user", "content": text},
    }
    if timestamp:
        line["timestamp"] = timestamp
    return line


# --- what is read ---------------------------------------------------------------------------


def test_projects_dir_yields_every_main_session_in_sorted_order() -> None:
    locations = [session.location for session in read_claude_code(PROJECTS)]
    assert locations == [str(STORE_SESSION), str(IMPORTER_SESSION), str(SHOP_SESSION)]


def test_a_project_dir_or_a_single_file_can_be_the_root() -> None:
    assert [s.location for s in read_claude_code(MEMVAULT_DIR)] == [
        str(STORE_SESSION),
        str(IMPORTER_SESSION),
    ]
    assert only(SHOP_SESSION).location == str(SHOP_SESSION)


def test_records_come_session_first_then_blocks_entities_mentions() -> None:
    kinds = [record.type for record in only(STORE_SESSION).records]
    assert kinds[0] == "session"
    assert kinds == sorted(kinds, key=["session", "block", "entity", "mention"].index)


# --- sessions -------------------------------------------------------------------------------


def test_session_record_carries_source_times_title_project_and_metadata() -> None:
    session = session_of(only(STORE_SESSION))
    assert session.id == "cc:4f6d2c1e-8b3a-4e7f-9d21-6c5b0a9e3f17"
    assert session.source == "claude-code"
    # The earliest line is the /clear command noise, the latest the final assistant reply.
    assert session.started_at == dt.datetime(2025, 10, 6, 8, 13, 58, 95000)
    assert session.ended_at == dt.datetime(2025, 10, 6, 8, 21, 33, 870000)
    assert session.title == "DuckDB vs PostgreSQL for the memvault store"
    assert session.project == "/home/ada/src/memvault"
    assert session.metadata == {
        "gitBranch": "main",
        "version": "2.0.14",
        "file": "4f6d2c1e-8b3a-4e7f-9d21-6c5b0a9e3f17.jsonl",
    }


def test_title_prefers_the_summary_of_a_message_in_this_file() -> None:
    # The shop file first carries a summary whose leaf is in another session.
    assert session_of(only(SHOP_SESSION)).title == "Stripe webhooks for the shop checkout"


def test_title_falls_back_to_the_first_user_text_cut_to_80_characters() -> None:
    title = session_of(only(IMPORTER_SESSION)).title
    assert title is not None
    assert len(title) == 80
    assert title.startswith("Write a Claude Code importer for memvault: read every session")
    assert title.endswith("…")


# --- blocks ---------------------------------------------------------------------------------


def test_blocks_per_kind_and_role() -> None:
    blocks = blocks_of(only(STORE_SESSION))
    assert [(b.kind, b.role) for b in blocks].count(("user_turn", "user")) == 3
    assert [(b.kind, b.role) for b in blocks].count(("assistant_turn", "assistant")) == 5
    assert all(b.session_id == "cc:4f6d2c1e-8b3a-4e7f-9d21-6c5b0a9e3f17" for b in blocks)
    assert all(b.id is not None and b.id.startswith("cc:") for b in blocks)


def test_assistant_parts_sharing_a_message_id_are_one_block_named_by_its_first_line() -> None:
    lines = [json.loads(line) for line in STORE_SESSION.read_text().splitlines()]
    parts = [
        line
        for line in lines
        if line.get("message", {}).get("id") == "msg_01HxQv4tN8cRzK2mWb7yLp3A"
    ]
    assert [p["message"]["content"][0]["type"] for p in parts] == ["thinking", "text", "tool_use"]

    (block,) = [b for b in blocks_of(only(STORE_SESSION)) if b.id == f"cc:{parts[0]['uuid']}"]
    assert block.text == parts[1]["message"]["content"][0]["text"]
    assert block.created_at == dt.datetime(2025, 10, 6, 8, 14, 7, 902000)


def test_text_parts_of_one_message_on_several_lines_are_joined(tmp_path: Path) -> None:
    lines = [
        {
            "type": "assistant",
            "uuid": f"a-{n}",
            "sessionId": "s-1",
            "timestamp": f"2025-10-06T08:00:0{n}Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "text", "text": t}],
            },
        }
        for n, t in enumerate(["First part.", "Second part.", "First part."])
    ]
    path = write_lines(tmp_path / "s.jsonl", lines)
    (block,) = blocks_of(only(path))
    assert block.id == "cc:a-0"
    assert block.text == "First part.\n\nSecond part."  # a repeated line adds nothing


def test_noise_tool_traffic_thinking_and_generated_lines_are_skipped() -> None:
    texts = " ".join(b.text for b in blocks_of(only(STORE_SESSION)))
    for left_out in (
        "Caveat:",  # isMeta
        "<command-name>",
        "<local-command-stdout>",
        "[Request interrupted",
        "Single user, embedded use",  # thinking
        "001_schema.sql",  # tool_use input and tool_result
        "CREATE SCHEMA",
        "The tool use was rejected",
        "PreToolUse",  # system line
    ):
        assert left_out not in texts
    importer_texts = " ".join(b.text for b in blocks_of(only(IMPORTER_SESSION)))
    assert "API Error" not in importer_texts  # isApiErrorMessage
    shop_user = blocks_of(only(SHOP_SESSION))[2]
    assert shop_user.text.startswith(
        "Here is the error from the Stripe dashboard."
    )  # image left out


def test_block_times_are_the_line_timestamps_in_naive_utc() -> None:
    blocks = blocks_of(only(STORE_SESSION))
    assert blocks[0].created_at == dt.datetime(2025, 10, 6, 8, 14, 3, 211000)
    assert blocks[0].created_at.tzinfo is None
    assert [b.created_at for b in blocks] == sorted(b.created_at for b in blocks)


def test_a_user_line_written_twice_is_one_block(tmp_path: Path) -> None:
    line = user_line("Hello there.", "u-1")
    assert len(blocks_of(only(write_lines(tmp_path / "s.jsonl", [line, line])))) == 1


def test_a_line_without_timestamp_takes_the_previous_lines(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "s.jsonl",
        [user_line("Hello there.", "u-1"), user_line("Still here.", "u-2", timestamp=None)],
    )
    blocks = blocks_of(only(path))
    assert [b.created_at for b in blocks] == [dt.datetime(2025, 10, 6, 8, 0)] * 2


def test_a_file_without_usable_text_yields_nothing(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "noise.jsonl",
        [
            {"type": "summary", "summary": "Nothing happened", "leafUuid": "u-1"},
            user_line("<command-name>/clear</command-name>", "u-1"),
            user_line("[Request interrupted by user]", "u-2"),
        ],
    )
    (tmp_path / "empty.jsonl").write_text("")
    assert list(read_claude_code(tmp_path)) == []


# --- stability ------------------------------------------------------------------------------


def test_importing_twice_gives_identical_records() -> None:
    def dump() -> list[dict[str, Any]]:
        return [
            record.to_json_dict()
            for session in read_claude_code(PROJECTS, include_subagents=True)
            for record in session.records
        ]

    first, second = dump(), dump()
    assert first == second
    # Entities recur across sessions under one id; everything else is unique.
    ids = [record["id"] for record in first if record["type"] != "entity"]
    assert len(ids) == len(set(ids))


# --- subagents ------------------------------------------------------------------------------


def test_subagent_transcripts_are_skipped_by_default() -> None:
    assert str(SUBAGENT) not in [s.location for s in read_claude_code(PROJECTS)]
    assert list(read_claude_code(SUBAGENT)) == []  # its lines are sidechain lines


def test_subagent_transcripts_are_read_on_request() -> None:
    sessions = list(read_claude_code(PROJECTS, include_subagents=True))
    assert len(sessions) == 4
    (agent,) = [s for s in sessions if s.location == str(SUBAGENT)]
    session = session_of(agent)
    # It shares its parent's sessionId, but is a session of its own.
    assert session.id == "cc:9a1c7e55-2d4b-4c3e-8f60-b7e2d9c41a08:agent-1a2b3c4d"
    assert session.metadata["parent_session"] == "cc:9a1c7e55-2d4b-4c3e-8f60-b7e2d9c41a08"
    assert [b.role for b in blocks_of(agent)] == ["user", "assistant", "assistant"]
    assert all(b.session_id == session.id for b in blocks_of(agent))


# --- errors ---------------------------------------------------------------------------------


def test_a_malformed_line_names_file_and_line() -> None:
    with pytest.raises(IngestError) as caught:
        list(read_claude_code(MALFORMED.parent))
    (problem,) = caught.value.problems
    assert problem.source == str(MALFORMED)
    assert problem.line == 3
    assert "not valid JSON" in problem.message
    assert f"{MALFORMED}:3:" in str(caught.value)


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = json.dumps(user_line("Hello.", "u-1")).encode()
    path.write_bytes(good + b"\n" + good.replace(b"Hello.", b"Hell\xff.") + b"\n")
    with pytest.raises(IngestError) as caught:
        list(read_claude_code(path))
    (problem,) = caught.value.problems
    assert (problem.source, problem.line) == (str(path), 2)
    assert "UTF-8" in problem.message


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ([1, 2], "expected a JSON object"),
        (user_line("Hi.", "u-1", timestamp="yesterday"), "not an ISO 8601 time"),
        (user_line("Hi.", "u-1", timestamp="2999-01-01T00:00:00Z"), "lies in the future"),
        ({**user_line("Hi.", "u-1"), "message": "Hi."}, "message is not an object"),
        ({**user_line("Hi.", "u-1"), "message": {"content": 7}}, "neither a string nor a list"),
    ],
)
def test_bad_lines_are_reported_not_raised_raw(tmp_path: Path, line: Any, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(user_line("Fine.", "u-0")) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(IngestError) as caught:
        list(read_claude_code(path))
    (problem,) = caught.value.problems
    assert problem.line == 2
    assert message in problem.message


def test_a_first_line_without_timestamp_is_reported(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user_line("Hi.", "u-1", timestamp=None)])
    with pytest.raises(IngestError, match=r"s\.jsonl:1: no timestamp"):
        list(read_claude_code(path))


def test_a_missing_root_is_a_memvault_error(tmp_path: Path) -> None:
    with pytest.raises(MemvaultError, match="no such file or directory"):
        list(read_claude_code(tmp_path / "nope"))


# --- entities -------------------------------------------------------------------------------


def test_entities_of_the_conversation_are_found() -> None:
    store = entities_of(only(STORE_SESSION))
    assert store["Nordwind Logistics"] == "organization"
    assert store["Hamburg"] == "place"
    assert store["Lena Okafor"] == "person"
    assert store["DuckDB"] == store["PostgreSQL"] == store["Python"] == "tool"
    assert "Lena" not in store  # "Lena's benchmarks" is Lena Okafor

    shop = entities_of(only(SHOP_SESSION))
    assert shop["Lisbon"] == "place"
    assert shop["acme-shop"] == "project"
    assert shop["Tomas Novak"] == "person"
    assert shop["Django"] == shop["Redis"] == "tool"


def test_mentions_link_blocks_and_entities_once_each() -> None:
    imported = only(STORE_SESSION)
    blocks = {b.id: b for b in blocks_of(imported)}
    entities = {r.id: r for r in imported.records if isinstance(r, EntityRecord)}
    mentions = [r for r in imported.records if isinstance(r, MentionRecord)]
    assert mentions
    for mention in mentions:
        block = blocks[mention.block_id]
        assert mention.entity in entities
        assert mention.session_id == block.session_id
        assert mention.mentioned_at == block.created_at
    pairs = [(m.block_id, m.entity) for m in mentions]
    assert len(pairs) == len(set(pairs))
    lena = next(e.id for e in entities.values() if e.name == "Lena Okafor")
    assert sum(m.entity == lena for m in mentions) == 2  # her own turn and the reply about her


def test_a_custom_extractor_is_used() -> None:
    class Nothing:
        def extract(self, text: str) -> list[Any]:
            return []

    kinds = {r.type for r in only(SHOP_SESSION, extractor=Nothing()).records}
    assert kinds == {"session", "block"}
