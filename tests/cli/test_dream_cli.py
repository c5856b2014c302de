"""`memvault dream` and `memvault asof` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.dagster.dream_support import seed_demo_store
from tests.helpers import FIXTURES


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    for var in ("MEMVAULT_STORE", "DAGSTER_HOME", "MEMVAULT_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(app, list(args))
        return result.exit_code, result.stdout, result.stderr

    return run


def test_the_gate_holds_on_a_small_store(cli) -> None:
    assert cli("ingest", str(FIXTURES / "small_history.jsonl"))[0] == 0
    code, out, _ = cli("dream", "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["run_id"] is None and summary["actions"] == {} and summary["llm_calls"] == 0
    assert "session gate: 1 new session(s)" in summary["skipped_reason"]


def test_dream_dry_run_then_real_then_asof(cli, tmp_path: Path) -> None:
    store = f"duckdb://{tmp_path / 'demo.duckdb'}"
    truth = seed_demo_store(store, tmp_path, sessions=30)

    code, out, _ = cli("dream", "--store", store, "--dry-run", "--json")
    assert code == 0
    dry = json.loads(out)
    assert dry["skipped_reason"] is None and dry["actions"].get("supersede", 0) == 0
    assert dry["stages"]["consolidate"]["planned"].get("supersede", 0) > 0

    code, out, _ = cli("dream", "--store", store, "--json")
    assert code == 0, out
    real = json.loads(out)
    assert real["actions"]["supersede"] >= 1 and real["llm_calls"] == 0
    assert all(real["checks"].values()), real["checks"]

    # A new session or two is not enough for the gate; --force overrides it.
    code, out, _ = cli("dream", "--store", store, "--json")
    assert json.loads(out)["skipped_reason"].startswith("time gate")

    last = truth.employer_timeline[-1]
    code, out, _ = cli(
        "asof",
        truth.owner_id,
        "works_at",
        "--at",
        f"{last.valid_from:%Y-%m-%d}",
        "--store",
        store,
        "--json",
    )
    assert code == 0
    assert [f["object"] for f in json.loads(out)] == [last.value]
    code, out, _ = cli("asof", truth.owner_id, "--at", "2020-01-01", "--store", store)
    assert code == 0 and "nothing known" in out


def test_asof_errors_are_one_line(cli, tmp_path: Path) -> None:
    cli("ingest", str(FIXTURES / "small_history.jsonl"))
    code, _, err = cli("asof", "Nobody Atall", "--at", "2026-01-01")
    assert code == 1 and "no entity has the id or name 'Nobody Atall'" in err
    code, _, err = cli("asof", "Ada Lovelace", "--at", "yesterday-ish")
    assert code == 1 and "--at 'yesterday-ish' is not a date" in err
