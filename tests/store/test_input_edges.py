"""Bad input is a one-line FILE:LINE error with nothing written; odd but valid input is stored
faithfully."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.collector import collect
from memvault.errors import IngestError
from memvault.ingest import ingest_file
from memvault.normalize import MAX_TEXT_CHARS
from memvault.store import Store
from pipelines.cli.app import app
from tests.helpers import FIXTURES, export_text

SESSION = '{"type":"session","id":"s1","source":"t","started_at":"2026-01-01T00:00:00Z"}'


def _block(extra: str, text: str = "x") -> str:
    return (
        '{"type":"block","id":"b1","session_id":"s1","kind":"memory","text":"' + text + '",'
        '"created_at":"2026-01-01T00:00:00Z"' + extra + "}"
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"type":"entity","id":"","name":"X","entity_type":"person"}', ":2: id is empty"),
        (
            '{"type":"session","id":"s2","source":"t","started_at":"0001-01-01T00:30:00+01:00"}',
            ":2: started_at: 0001-01-01T00:30:00+01:00 is out of range once converted to UTC",
        ),
        (_block(',"access_count":99999999999999999999999'), ":2: access_count"),
        (_block(',"importance":NaN'), ":2: importance: Input should be a finite number"),
        (_block(',"feedback_score":Infinity'), ":2: feedback_score: Input should be a finite"),
    ],
)
def test_bad_values_are_file_line_errors_and_nothing_is_written(
    store: Store, tmp_path: Path, line: str, expected: str
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(SESSION + "\n" + line + "\n")
    before = export_text(store)
    with pytest.raises(IngestError) as caught:
        ingest_file(store, path)
    assert expected in str(caught.value.problems[0]), caught.value.problems
    assert str(caught.value.problems[0]).startswith(f"{path}:2:")
    assert export_text(store) == before


def test_an_over_long_text_is_split_without_losing_whitespace(store: Store, tmp_path: Path) -> None:
    words = ("lorem ipsum dolor sit amet, consectetur adipiscing elit\n\n" * 1300).strip()
    assert len(words) > 2 * MAX_TEXT_CHARS
    path = tmp_path / "long.jsonl"
    path.write_text(SESSION + "\n" + _block("", text=words.replace("\n", "\\n")) + "\n")
    report = ingest_file(store, path)
    assert report.split_blocks == 1
    parts = store.fetch(
        "SELECT text FROM blocks WHERE id = 'b1' OR parent_id = 'b1' ORDER BY length(id), id"
    )
    assert len(parts) >= 3
    assert "".join(t for (t,) in parts) == words, "the parts join back to the text exactly"


def test_a_transcript_with_an_impossible_time_does_not_stop_the_others(
    store: Store, tmp_path: Path
) -> None:
    projects = tmp_path / "projects"
    shutil.copytree(FIXTURES / "claude_code", projects)
    victim = sorted(projects.rglob("*.jsonl"))[0]
    lines = victim.read_text().splitlines()
    lines[2] = lines[2].replace('"timestamp":"', '"timestamp":"0001-01-01T00:30:00+01:00","x":"', 1)
    victim.write_text("\n".join(lines) + "\n")
    report = collect(store, inbox=None, claude_projects=projects)
    assert report.files_seen >= 2 and report.files_ingested == report.files_seen - 1
    [(failed, why)] = report.failures
    assert failed == str(victim) and f"{victim}:3:" in why and "ISO 8601" in why


def test_markup_in_user_text_is_printed_not_interpreted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "[bold]weird[red].jsonl"
    path.write_text(SESSION.replace('"t"', '"[/]"')[:-1] + ',"[/]":1}\n')
    result = CliRunner().invoke(app, ["ingest", str(path)])
    assert result.exit_code == 1
    assert f"error: {path}:1: unknown field '[/]'" in result.stderr
    assert "Traceback" not in result.stderr and "MarkupError" not in result.output
