"""`memvault profile | diary | gaps | backfill` as a user runs them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memvault
from memvault.ingest import ingest_file
from memvault_demo.generator import DemoConfig, generate, write_jsonl
from pipelines.cli.app import app
from tests.helpers import clear_cli_environment


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dt.date]:
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    records, truth = generate(DemoConfig(sessions=20, days=12, seed=3, end=dt.datetime(2026, 8, 1)))
    write_jsonl(records, tmp_path / "h.jsonl")
    url = f"duckdb://{tmp_path / 's.duckdb'}"
    with memvault.open(url) as handle:
        ingest_file(handle, tmp_path / "h.jsonl")
    return url, truth.start.date()


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_a_day_never_materialized_says_how_to_get_it(store: tuple[str, dt.date]) -> None:
    url, _ = store
    code, _, err = _cli("profile", "--store", url)
    assert code == 1 and "memvault backfill --from DATE --to DATE" in err
    code, _, err = _cli("diary", "2026-07-25", "--store", url)
    assert code == 1 and "memvault backfill --from 2026-07-25 --to 2026-07-25" in err
    code, _, err = _cli("profile", "--at", "July", "--store", url)
    assert code == 1 and "is not a date" in err
    code, _, err = _cli("backfill", "--from", "2026-07-10", "--to", "2026-07-01", "--store", url)
    assert code == 1 and "is before --from" in err


def test_backfill_then_profile_diary_and_gaps(store: tuple[str, dt.date], tmp_path: Path) -> None:
    url, first = store
    last = first + dt.timedelta(days=5)
    code, out, err = _cli(
        "backfill", "--from", first.isoformat(), "--to", last.isoformat(), "--store", url, "--json"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["success"] and summary["days"] == 6 and len(summary["runs"]) == 1
    assert (tmp_path / ".dagster").is_dir(), "the runs are on the instance the UI reads"
    code, out, _ = _cli("profile", "--store", url, "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["day"] == last.isoformat()
    assert [w["window_days"] for w in shown["interest"]] == [7, 30, 90]
    code, out, _ = _cli("profile", "--at", first.isoformat(), "--store", url)
    assert code == 0 and "top entities:" in out and first.isoformat() in out
    code, out, _ = _cli("diary", "--store", url)
    assert code == 0 and last.isoformat() in out
    code, out, _ = _cli("gaps", "--store", url)
    assert code == 0 and "no knowledge gaps" in out  # gaps_job has not run


def test_backfill_submit_leaves_it_to_the_daemon(
    store: tuple[str, dt.date], tmp_path: Path
) -> None:
    import dagster as dg

    url, first = store
    code, out, err = _cli(
        "backfill",
        "--from",
        first.isoformat(),
        "--to",
        (first + dt.timedelta(days=2)).isoformat(),
        "--submit",
        "--store",
        url,
        "--json",
    )
    assert code == 0, err
    summary = json.loads(out)
    with dg.DagsterInstance.from_config(str(tmp_path / ".dagster")) as instance:
        backfill = instance.get_backfill(summary["backfill_id"])
        assert backfill is not None and backfill.tags["memvault/started_by"] == "cli"
        targeted = backfill.asset_backfill_data.target_subset  # type: ignore[union-attr]
        keys = {key.to_user_string() for key in targeted.asset_keys}
        assert keys == {
            "daily_snapshot",
            "interest_7d",
            "interest_30d",
            "interest_90d",
            "diary_page",
        }
        days = targeted.get_partitions_subset(dg.AssetKey("daily_snapshot")).get_partition_keys()
        assert sorted(days) == [(first + dt.timedelta(days=d)).isoformat() for d in range(3)]
