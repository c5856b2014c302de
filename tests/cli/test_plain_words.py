"""What the command line says is in plain words: no internal clause ids in help or output.

Skill levels ("can teach (L3)", "L2 have done") are a product word the owner sees and stay
when their words go with them; lint layers, garden phases and dream stages are named by what
they do. The reports are read from the commands themselves, run once on one small generated
store (lint, dream, tiering, the profile, the gardener, the review queue, the read path).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memvault
from memvault.normalize import utcnow
from pipelines.cli import common
from pipelines.cli.app import app
from tests.cli.test_store_option import command_names
from tests.dagster.dream_support import seed_demo_store
from tests.helpers import clear_cli_environment, internal_codes

runner = CliRunner()


@pytest.mark.parametrize("command", ["", *command_names()])
def test_help_has_no_internal_codes(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert len(result.output) > 80
    assert not internal_codes(result.output), (command, internal_codes(result.output))


def test_skill_levels_stay_with_their_words() -> None:
    result = runner.invoke(app, ["skills", "--help"], env={"COLUMNS": "200"})
    assert "can teach (L3)" in result.output
    assert internal_codes("the L3 layer proposes") == ["L3"]
    assert internal_codes("Skipped: GD5 reconnect") == ["GD5"]
    assert internal_codes("│ Python │ L3 can teach │ 35.85 │") == []
    assert internal_codes("│ Python │ L3    │ can teach │") == ["L3"]


@dataclass(frozen=True)
class Step:
    """One command run on the small store: its arguments (``{block}``, ``{recall}``,
    ``{review}`` and ``{day}`` are filled in from the store when it runs) and a word of the
    report it prints (``""``: any), so an empty or failed output does not pass as plain."""

    name: str
    args: tuple[str, ...]
    says: str


#: In order: the lint and the dream first, so that the later reports have something to say.
STEPS = [
    Step("status", ("status",), "audit_log"),
    Step("lint", ("lint",), "lint_semantic:"),
    Step("dream", ("dream", "--force"), "Dream report"),
    Step("dream, gate closed", ("dream",), "dream skipped"),
    Step("asof", ("asof", "Ada Lovelace"), "Ada Lovelace"),
    Step("runs", ("runs",), "dream"),
    Step("tier --dry-run", ("tier", "--dry-run"), "dry run: nothing written"),
    Step("tier", ("tier",), "memvault undo"),
    Step("usage", ("usage",), "access multiplier"),
    Step("usage BLOCK", ("usage", "{block}"), "{block}"),
    Step("inbox", ("inbox", "--all"), "discovery"),
    Step("gaps", ("gaps",), "knowledge gaps"),
    Step("backfill", ("backfill", "--from", "{day}", "--to", "{day}"), "materialized 1 day"),
    Step("profile", ("profile",), "top entities"),
    Step("diary", ("diary",), "{day}"),
    Step("attitudes", ("attitudes", "--all"), "binding"),
    Step("skills use", ("skills", "use", "Zig", "--proficiency", "1"), "Zig: L1 heard of"),
    Step("skills use, level up", ("skills", "use", "Zig", "--proficiency", "1"), "(was L1"),
    Step("skills", ("skills",), "have done"),
    Step("garden", ("garden",), "Gardening report"),
    Step("garden proposals", ("garden", "proposals"), ""),
    Step("review list", ("review", "list"), "why it waits"),
    Step("review show", ("review", "show", "{review}"), "prefers long answers"),
    Step("review reject", ("review", "reject", "{review}"), "memvault undo"),
    Step("recall", ("recall", "where does Ada work"), "feedback"),
    Step("show", ("show", "{block}"), "{block}"),
    Step("feedback", ("feedback", "{recall}", "correct"), "recorded verdict"),
]


def _ids(url: str, review: str) -> dict[str, str]:
    """What the steps' arguments name: a block, the latest recall, the queued preference
    and the last day with sessions that has a daily partition (one ends yesterday)."""
    with memvault.open(url) as store:
        [(block,)] = store.fetch("SELECT id FROM blocks ORDER BY id LIMIT 1")
        recalls = store.fetch("SELECT id FROM recall_log ORDER BY created_at DESC, id DESC")
        [(last,)] = store.fetch("SELECT max(started_at) FROM sessions")
    day = min(last.date(), utcnow().date() - dt.timedelta(days=1))
    return {"block": block, "recall": recalls[0][0], "review": review, "day": day.isoformat()}


@pytest.fixture(scope="module")
def plain_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One generated store (12 sessions) with a preference queued for review: its folder,
    URL and the review's id."""
    from memvault.layers.attitudes import upsert

    folder = tmp_path_factory.mktemp("plain_words")
    url = f"duckdb://{folder / 'small.duckdb'}"
    seed_demo_store(url, folder, sessions=12)
    with memvault.open(url) as store:
        queued = upsert(store, "writing_style", "prefers long answers", 0.9, [])
    assert queued.review_id, queued
    return folder, url, queued.review_id


@pytest.fixture(scope="module")
def entity_names(plain_store: tuple[Path, str, str]) -> list[str]:
    """The names the generator gave its entities (a tool is called "S3"): words of the
    owner's, not codes, wherever a report shows them."""
    with memvault.open(plain_store[1]) as store:
        return [str(name) for (name,) in store.fetch("SELECT name FROM entities")]


@pytest.fixture(scope="module")
def reports(plain_store: tuple[Path, str, str]) -> dict[str, tuple[int, str, str]]:
    """Each step's exit code, output (stdout and stderr) and expected word, run in order on
    the generated store with the offline judge and embedder."""
    folder, url, review_id = plain_store
    said: dict[str, tuple[int, str, str]] = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(folder)
        clear_cli_environment(monkeypatch)
        monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
        monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
        monkeypatch.setenv("MEMVAULT_INBOX", str(folder / "inbox"))
        monkeypatch.setenv("DAGSTER_HOME", str(folder / "dagster"))
        # The consoles were made at import with whatever width was around; a wide one cuts
        # no cell short (a code could hide behind "…") and wraps no level from its words.
        for console in (common.out, common.err):
            monkeypatch.setattr(console, "_width", 200)
        for step in STEPS:
            ids = _ids(url, review_id)
            args = [arg.format(**ids) for arg in step.args]
            result = runner.invoke(app, [*args, "--store", url])
            text = result.stdout + result.stderr
            said[step.name] = (result.exit_code, text, step.says.format(**ids))
    return said


@pytest.mark.parametrize("step", [s.name for s in STEPS])
def test_reports_have_no_internal_codes(
    step: str, reports: dict[str, tuple[int, str, str]], entity_names: list[str]
) -> None:
    code, text, says = reports[step]
    assert code == 0, text
    assert text.strip() and says in text, text
    assert not internal_codes(text, entity_names), (internal_codes(text, entity_names), text)


def test_reports_show_times_as_dates_and_no_bare_signs(
    reports: dict[str, tuple[int, str, str]],
) -> None:
    """A time in a report reads as a date (the review queue's oldest item in the lint's
    figures), never as seconds since 1970; an empty change reads as words, not as "+-"."""
    for step, (_code, text, _says) in reports.items():
        assert not re.search(r"\b1[5-9]\d{8}(\.\d+)?\b", text), (step, text)
        assert "+-" not in text and "+ -" not in text, (step, text)
    assert "oldest_waiting=20" in reports["lint"][1], reports["lint"][1]
