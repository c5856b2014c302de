"""``memvault garden``: the ceremony from the command line, its outcome line, approvals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import memvault
from memvault.gardener.outcome import PREFIX, parse_outcome_line
from memvault.gardener.report import parse_report
from pipelines.cli.gardener import garden_app
from tests.garden_support import demo_file, seed

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(garden_app, name="garden")
    return app


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    path, _ = demo_file(tmp_path, sessions=80, days=120)
    store_url = f"duckdb://{tmp_path / 'cli.duckdb'}"
    with memvault.open(store_url) as store:
        seed(store, path)
    return store_url


def test_workflow_outcome_is_the_last_line_after_the_report(url: str) -> None:
    result = runner.invoke(_app(), ["garden", "--store", url, "--workflow-outcome"])
    assert result.exit_code == 0, result.output
    outcome = parse_outcome_line(result.stdout)
    assert outcome["outcome"] == "succeeded"
    report_text = result.stdout.rsplit(PREFIX, 1)[0]
    report = parse_report(report_text)
    assert report.mode == "tend-and-propose"
    assert report.mutations_max == 25


def test_without_the_flag_there_is_no_outcome_line(url: str) -> None:
    result = runner.invoke(_app(), ["garden", "--store", url, "--max-mutations", "3"])
    assert result.exit_code == 0, result.output
    assert PREFIX not in result.stdout
    assert parse_report(result.stdout).mutations_used <= 3


def test_json_and_the_approval_flow(url: str) -> None:
    result = runner.invoke(_app(), ["garden", "--store", url, "--json", "--max-judgments", "200"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["outcome"] == "succeeded" and body["report_id"]
    listed = runner.invoke(_app(), ["garden", "proposals", "--store", url, "--json"])
    proposals = json.loads(listed.stdout)
    assert proposals, "the demo store should yield proposals"
    wrong = runner.invoke(_app(), ["garden", "approve", "gp-nope", "--store", url])
    assert wrong.exit_code == 1 and "not a pending garden proposal" in wrong.output
    ok = runner.invoke(_app(), ["garden", "approve", "--all", "--store", url, "--json"])
    assert ok.exit_code == 0, ok.output
    assert sorted(json.loads(ok.stdout)["approved"]) == sorted(p["id"] for p in proposals)
    approved = runner.invoke(
        _app(), ["garden", "proposals", "--store", url, "--status", "approved"]
    )
    assert all(p["id"] in approved.stdout for p in proposals)


def test_a_bad_mode_is_one_line_of_error(url: str) -> None:
    result = runner.invoke(_app(), ["garden", "--store", url, "--mode", "yolo"])
    assert result.exit_code == 1
    assert "unknown --mode 'yolo'" in result.output


def test_the_report_on_the_command_line_names_phases_in_plain_words(url: str) -> None:
    """The report and the outcome line carry no internal code (a skip reads "reconnect orphans")."""
    from tests.helpers import internal_codes

    result = runner.invoke(_app(), ["garden", "--store", url, "--workflow-outcome"])
    assert result.exit_code == 0, result.output
    parse_report(result.stdout.rsplit(PREFIX, 1)[0])
    assert not internal_codes(result.stdout), internal_codes(result.stdout)


def test_a_run_asked_for_on_a_quiet_store_gardens_and_says_it_was_quiet(url: str) -> None:
    big = ["--max-mutations", "1000", "--max-judgments", "1000"]
    for _ in range(4):  # a run capped with work left is due again the next night
        done = runner.invoke(_app(), ["garden", "--store", url, *big])
        assert done.exit_code == 0, done.output
        assert "the store is quiet" not in done.stderr
        if "resume point: clean" in done.stdout:
            break
    else:
        pytest.fail("the gardener never finished its work on the store")
    again = runner.invoke(_app(), ["garden", "--store", url, *big])
    assert again.exit_code == 0, again.output
    assert parse_report(again.stdout).mode == "tend-and-propose"  # it ran: asked by hand
    assert "the store is quiet" in again.stderr, again.stderr
