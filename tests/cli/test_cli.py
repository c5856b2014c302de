"""The `memvault` command as a user runs it: exit codes, one-line errors, --json, --store."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from pipelines.cli.app import app
from pipelines.cli.demo import NIGHT
from pipelines.definitions import defs
from tests.helpers import FIXTURES, clear_cli_environment

SMALL = FIXTURES / "small_history.jsonl"


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Run the CLI in an empty working directory; returns (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        result = runner.invoke(app, list(args), input=stdin)
        return result.exit_code, result.stdout, result.stderr

    yield run
    # The demo moves the profile's first partition; later tests get the code location back.
    monkeypatch.undo()
    from pipelines.runner import definitions

    definitions()


def test_ingest_status_export_undo(cli, tmp_path: Path) -> None:
    code, out, _ = cli("ingest", str(SMALL), "--json")
    assert code == 0
    report = json.loads(out)
    assert sum(report["inserted"].values()) == 10
    assert (tmp_path / ".memvault" / "memvault.duckdb").exists(), (
        "the default store is local DuckDB"
    )

    code, out, _ = cli("status", "--json")
    assert json.loads(out)["counts"]["blocks"] == 1

    code, out, _ = cli("export")
    assert code == 0 and len(out.splitlines()) == 10

    code, out, _ = cli("runs", "--json")
    runs = json.loads(out)
    assert runs[0]["kind"] == "ingest" and runs[0]["changes"] >= 10

    code, out, _ = cli("undo", report["run_id"], "--json")
    assert code == 0 and sum(json.loads(out)["restored"].values()) >= 10
    assert cli("export")[1] == ""


def test_global_store_option(cli, tmp_path: Path) -> None:
    store = f"duckdb://{tmp_path / 'elsewhere.duckdb'}"
    assert cli("--store", store, "ingest", str(SMALL))[0] == 0
    _, out, _ = cli("status", "--json", "--store", store)
    assert json.loads(out)["counts"]["sessions"] == 1
    assert not (tmp_path / ".memvault").exists()


def test_stdin_ingest_and_one_line_errors(cli, tmp_path: Path) -> None:
    code, _, err = cli("ingest", "-", stdin='{"type": "blok"}\n')
    assert code == 1
    assert "<stdin>:1: unknown record type 'blok'" in err
    assert "Traceback" not in err

    code, _, err = cli("ingest", "missing.jsonl")
    assert code == 1 and "missing.jsonl: no such file" in err

    code, _, err = cli("--store", "mysql://x", "status")
    assert code == 1 and "unsupported store URL" in err

    code, _, err = cli("undo", "no-such-run")
    assert code == 1 and "no run with id 'no-such-run'" in err

    code, _, err = cli("export", "--type", "nonsense")
    assert code == 1 and "unknown record type(s) nonsense" in err


def test_export_to_file_then_ingest_elsewhere(cli, tmp_path: Path) -> None:
    cli("ingest", str(SMALL))
    assert cli("export", "-o", "out.jsonl")[0] == 0
    other = f"duckdb://{tmp_path / 'other.duckdb'}"
    assert cli("ingest", "out.jsonl", "--store", other)[0] == 0
    assert cli("export", "--store", other)[1] == (tmp_path / "out.jsonl").read_text()


def test_claude_code_import(cli) -> None:
    code, out, _ = cli("ingest", "--from", "claude-code", str(FIXTURES / "claude_code"), "--json")
    assert code == 0
    assert json.loads(out)["inserted"]["session"] == 3
    code, _, err = cli("ingest", "--from", "claude-code", str(FIXTURES / "claude_code_malformed"))
    assert code == 1 and ".jsonl:3: not valid JSON" in err


def test_demo_builds_a_fresh_store_and_runs_every_asset(cli, tmp_path: Path) -> None:
    code, out, err = cli("demo", "--sessions", "12", "--days", "20", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["success"]
    assert summary["before"]["blocks"] == 0 and summary["after"]["blocks"] > 0
    assert summary["after"]["embeddings"] >= summary["after"]["blocks"]
    graph = defs.resolve_asset_graph()
    assert set(summary["assets"]) == {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert summary["assets"]["dream_consolidate"]["supersedes"] >= 1
    # Each job of the night is a named run in the instance the UI reads.
    assert set(summary["dagster_runs"]) == set(NIGHT)
    profile = summary["profile"]
    with dg.DagsterInstance.from_config(str(tmp_path / ".dagster")) as instance:
        runs = [*summary["dagster_runs"].items(), *(("profile_job", r) for r in profile["runs"])]
        for job, run_id in runs:
            run = instance.get_run_by_id(run_id)
            assert run is not None and run.job_name == job
            assert run.status == dg.DagsterRunStatus.SUCCESS
        # Every day of the history is a materialized partition (the Partitions tab shows it).
        for name in ("daily_snapshot", "interest_90d", "diary_page"):
            days = instance.get_materialized_partitions(dg.AssetKey(name))
            assert len(days) == profile["days"] == 20, name
            assert min(days) == profile["first"]
    code, out, _ = cli("profile", "--json", "--store", summary["store"])
    assert code == 0 and json.loads(out)["day"] == profile["last"]
    code, out, _ = cli("diary", profile["last"], "--store", summary["store"])
    assert code == 0 and profile["last"] in out
    code, out, _ = cli("gaps", "--json", "--store", summary["store"])
    assert code == 0 and {g["kind"] for g in json.loads(out)} >= {"recall"}
    # Every track works on the demo store: the gardener too, and nothing touches the default.
    assert "demo.duckdb" in summary["assets"]["garden_report"]["resume_point"]
    assert not (tmp_path / ".memvault" / "memvault.duckdb").exists()
    assert all(summary["checks"].values())
    assert (tmp_path / ".dagster" / "dagster.yaml").exists(), "runs land where `memvault ui` looks"

    again = json.loads(cli("demo", "--sessions", "12", "--days", "20", "--json")[1])
    assert again["after"] == summary["after"], "a second demo starts from a fresh store again"

    cli("ingest", str(SMALL), "--store", "duckdb://mine.duckdb")
    code, _, err = cli("demo", "--store", "duckdb://mine.duckdb")
    assert code == 1 and "already holds data" in err


def test_lint_runs_the_named_job_and_reports_each_layer(cli, tmp_path: Path) -> None:
    assert cli("ingest", str(SMALL), "--store", "duckdb://lint.duckdb")[0] == 0
    code, out, err = cli("lint", "--store", "duckdb://lint.duckdb", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["success"] and summary["checks"] == {"judged_changes_confirmed": True}
    semantic = summary["assets"]["lint_semantic"]
    assert semantic["mode"].startswith("rules only") and semantic["llm_calls"] == 0
    assert semantic["new_facts"] > 0
    with dg.DagsterInstance.from_config(str(tmp_path / ".dagster")) as instance:
        run = instance.get_run_by_id(summary["dagster_run_id"])
        assert run is not None and run.job_name == "lint_job"
    code, out, _ = cli("lint", "--store", "duckdb://lint.duckdb")
    assert code == 0 and "lint_semantic: " in out and "new_facts=0" in out


def test_bad_llm_configuration_is_one_line(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMVAULT_EMBEDDER", raising=False)
    code, _, err = cli("--embedder", "word2vec", "collect")
    assert code == 1 and "unknown embedder 'word2vec'" in err
