"""`memvault tier | usage` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memvault
from memvault.normalize import utcnow
from pipelines.cli.app import app
from tests.helpers import clear_cli_environment
from tests.lifecycle_support import add_blocks, add_recalls


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    url = f"duckdb://{tmp_path / 's.duckdb'}"
    now = utcnow()
    with memvault.open(url) as store:
        add_blocks(store, now, {"new": 2, "used": 40, "old": 40, "ancient": 400})
        add_recalls(store, now, "used", [1.0, 1.0, 1.0])
    return url


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_dry_run_then_tier_then_nothing_left(url: str) -> None:
    code, out, _ = _cli("tier", "--dry-run", "--json", "--store", url)
    assert code == 0
    dry = json.loads(out)
    assert dry["tiers_after"] == {"hot": 1, "warm": 1, "cold": 1, "frozen": 1}
    assert dry["run_id"] is None and dry["written"] == 0 and dry["kept_by_use"] == 1
    code, out, _ = _cli("tier", "--store", url)
    text = " ".join(out.split())
    assert code == 0 and "memvault undo tiering-" in text and "judge heuristic" in text
    code, out, _ = _cli("tier", "--json", "--store", url)
    again = json.loads(out)
    assert again["written"] == 0 and again["llm_calls"] == 0 and again["run_id"] is None


def test_usage_summary_and_per_block(url: str) -> None:
    code, out, _ = _cli("usage", "--json", "--store", url)
    assert code == 0 and json.loads(out)["reinforced"] == 1
    code, out, _ = _cli("usage", "used", "old", "--json", "--store", url)
    rows = {r["block_id"]: r for r in json.loads(out)}
    assert rows["used"]["access_multiplier"] > 3.5 and rows["used"]["target"] == "warm"
    assert rows["old"]["access_multiplier"] == 1.0 and rows["old"]["target"] == "cold"
