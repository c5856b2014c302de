"""Input the command line refuses: one line on stderr, exit status 1, nothing written.

Each case runs on a small store (DuckDB and PostgreSQL) and compares the runs, recall_log
and audit_log tables before and after; memory text that looks like rich markup or an emoji
code is printed as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memvault
from memvault.errors import IngestError, QueryError
from memvault.ingest import ingest_file
from memvault.recall import MAX_QUERY_CHARS
from pipelines.cli.app import app
from tests.helpers import FIXTURES, clear_cli_environment, table_dump

SMALL = FIXTURES / "small_history.jsonl"
WATCHED = ("runs", "recall_log", "audit_log", "triples", "feedback")


@pytest.fixture
def small(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The small history in a store on each backend; the CLI runs in an empty directory."""
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    with memvault.open(store_url) as store:
        ingest_file(store, str(SMALL))
    return store_url


def snapshot(url: str) -> dict[str, list[dict]]:
    with memvault.open(url) as store:
        return {table: table_dump(store, table) for table in WATCHED}


def refused(url: str, *args: str) -> str:
    """Run the command on ``url``; assert it was refused cleanly and wrote nothing."""
    before = snapshot(url)
    result = CliRunner().invoke(app, [*args, "--store", url])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "unexpected" not in result.stderr
    assert snapshot(url) == before, "a refused command wrote to the store"
    return lines[0]


def test_asof_out_of_range_time(small: str) -> None:
    line = refused(small, "asof", "Ada Lovelace", "--at", "9999-12-31T23:59:59-14:00")
    assert "--at '9999-12-31T23:59:59-14:00' is out of range" in line


def test_recall_with_bytes_that_are_no_utf8(small: str) -> None:
    # `memvault recall $'a\xff'`: Python hands the byte on as the surrogate \udcff.
    line = refused(small, "recall", "a\udcff")
    assert line == "error: argument 'a\\xff' is not valid UTF-8 text; nothing was done"


@pytest.mark.parametrize("query", ["", "   \t ", "x" * (MAX_QUERY_CHARS + 1), "y" * 1_000_000])
def test_recall_refuses_empty_and_oversized_queries(small: str, query: str) -> None:
    line = refused(small, "recall", query)
    assert "the query is empty" in line or f"at most {MAX_QUERY_CHARS:,}" in line


def test_the_python_api_refuses_the_same_queries(small: str) -> None:
    with memvault.open(small) as store:
        before = table_dump(store, "recall_log")
        for query in ("", " \n", "z" * (MAX_QUERY_CHARS + 1), "b\udcff"):
            with pytest.raises(QueryError):
                memvault.recall(store, query)
        assert table_dump(store, "recall_log") == before
        assert memvault.recall(store, "w" * MAX_QUERY_CHARS).query == "w" * MAX_QUERY_CHARS


def test_usage_of_an_unknown_block(small: str) -> None:
    line = refused(small, "usage", "nope")
    assert "no memory block nope" in line


def test_a_bad_predicate_is_refused_with_its_line(small: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = [
        {"type": "triple", "subject": "Ada Lovelace", "predicate": "lives_in", "object": "London",
         "created_at": "2026-01-07T10:00:00Z"},
        {"type": "triple", "subject": "Ada Lovelace", "predicate": "likes');_drop_table_triples;--",
         "object": "tea", "created_at": "2026-01-07T10:00:00Z"},
    ]  # fmt: skip
    bad.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    before = snapshot(small)
    result = CliRunner().invoke(app, ["ingest", str(bad), "--store", small])
    assert result.exit_code == 1
    problem = f"""{bad}:2: predicate: "likes');_drop_table_triples;--" is not a snake_case word"""
    assert problem in result.stderr, result.stderr
    assert "nothing from this input was written" in result.stderr
    assert snapshot(small) == before, "all or nothing: the good line was not written either"
    with memvault.open(small) as store, pytest.raises(IngestError):
        ingest_file(store, str(bad))


def test_words_are_still_joined_into_a_predicate(small: str, tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({"type": "triple", "subject": "Ada Lovelace", "predicate": "Lives In",
                    "object": "London", "created_at": "2026-01-07T10:00:00Z"}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    assert CliRunner().invoke(app, ["ingest", str(good), "--store", small]).exit_code == 0
    with memvault.open(small) as store:
        assert ("lives_in",) in store.fetch("SELECT predicate FROM triples")


def test_memory_text_is_printed_as_it_is(small: str, tmp_path: Path) -> None:
    text = "Ada says :smile: and [bold]loud[/bold] at Acme"
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        json.dumps({"type": "block", "id": "b2", "session_id": "s1", "text": text,
                    "created_at": "2026-01-05T10:05:00Z"}) + "\n"
        + json.dumps({"type": "attitude", "category": "tooling", "statement": "likes :rocket:",
                      "created_at": "2026-01-05T10:00:00Z", "evidence": ["s1"]}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(notes), "--store", small]).exit_code == 0
    said = runner.invoke(app, ["recall", "what does Ada say at Acme", "--store", small]).stdout
    assert ":smile:" in said and "[bold]loud[/bold]" in said, said
    assert "😄" not in said
    listed = runner.invoke(app, ["attitudes", "--store", small]).stdout
    assert "likes :rocket:" in listed and "🚀" not in listed, listed
