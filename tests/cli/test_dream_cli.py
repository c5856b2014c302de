"""`memvault dream` and `memvault asof` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

import memvault
from pipelines.cli.app import app
from tests.dagster.dream_support import seed_demo_store
from tests.helpers import FIXTURES, clear_cli_environment


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
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


def test_force_twice_the_second_dream_does_nothing_and_asks_nothing(cli, tmp_path: Path) -> None:
    store = f"duckdb://{tmp_path / 'demo.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=30)
    code, out, err = cli("dream", "--store", store, "--force", "--json")
    assert code == 0, err
    first = json.loads(out)
    assert first["actions"].get("insight", 0) >= 1 and first["actions"].get("supersede", 0) >= 1
    code, out, err = cli("dream", "--store", store, "--force", "--json")
    assert code == 0, err
    second = json.loads(out)
    assert second["run_id"] != first["run_id"]
    assert second["actions"] and all(n == 0 for n in second["actions"].values()), second["actions"]
    assert second["llm_calls"] == 0
    with memvault.open(store) as handle:
        insights = handle.fetch("SELECT count(*) FROM blocks WHERE kind = 'insight'")[0][0]
    assert insights == first["actions"]["insight"], "an unchanged insight is not written again"
    # Both dreams are runs of dream_job in the instance the UI reads.
    with dg.DagsterInstance.from_config(str(tmp_path / ".dagster")) as instance:
        for summary in (first, second):
            run = instance.get_run_by_id(summary["dagster_run_id"])
            assert run is not None and run.job_name == "dream_job"


def test_the_gate_settings_are_honoured(cli, tmp_path: Path, monkeypatch) -> None:
    store = f"duckdb://{tmp_path / 'demo.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=6)
    assert cli("dream", "--store", store, "--force", "--json")[0] == 0
    code, out, _ = cli("dream", "--store", store, "--json")
    assert "time gate" in json.loads(out)["skipped_reason"]
    # A gate of zero hours and one session opens once a session arrives.
    one = tmp_path / "one-session.jsonl"
    one.write_text(
        '{"type":"session","id":"s-new","source":"test","started_at":"2026-11-01T10:00:00Z"}\n'
    )
    assert cli("ingest", str(one), "--store", store)[0] == 0
    code, out, _ = cli("dream", "--store", store, "--gate-hours", "0.000001", "--gate-sessions",
                       "1", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["skipped_reason"] is None
    # The same from the environment (the dream resource reads it), now with nothing new.
    monkeypatch.setenv("MEMVAULT_DREAM_GATE_HOURS", "0.000001")
    monkeypatch.setenv("MEMVAULT_DREAM_GATE_SESSIONS", "1")
    code, out, _ = cli("dream", "--store", store, "--json")
    assert json.loads(out)["skipped_reason"] == (
        "session gate: 0 new session(s) since the last dream (needs >= 1)"
    )


def test_a_dream_stopped_by_a_check_says_it_was_reverted(cli, tmp_path: Path) -> None:
    store = f"duckdb://{tmp_path / 'demo.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=12)
    assert cli("dream", "--store", store, "--force")[0] == 0
    seed_demo_store(store, tmp_path, sessions=12, seed=8)
    with memvault.open(store) as handle:  # a survivor that forgot what it merged
        [(survivor,)] = handle.fetch(
            "SELECT min(superseded_by) FROM triples WHERE status = 'merged'"
        )
        # Through the audited write path (as a fault of memvault's own would): a night's
        # checks read the facts the audit log names since the last dream's checks.
        with handle.mutation("test-fault", "test") as m:
            m.update("triples", survivor, {"lineage": "[]"}, action="fault")
    code, out, err = cli("dream", "--store", store, "--force")
    assert code == 1 and "check no_data_loss: FAILED" in out
    assert "the dream was reverted (reverted by revert-" in err
    assert "the store is as it was before it; `memvault dream` starts a new one" in err
    code, out, _ = cli("runs", "--store", store, "--kind", "dream")
    assert code == 0 and "reverted" in out and "succeeded" in out
