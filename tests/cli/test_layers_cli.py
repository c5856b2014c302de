"""`memvault attitudes | attitudes set | skills | skills use` as an owner runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli.app import app
from tests.helpers import clear_cli_environment


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    return f"duckdb://{tmp_path / 's.duckdb'}"


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_preferences_set_listed_and_replaced_through_review(url: str) -> None:
    code, out, _ = _cli("attitudes", "--store", url)
    assert code == 0 and "no preferences yet" in out
    code, out, err = _cli("attitudes", "set", "tech_choice", "prefers Polars", "--confidence",
                          "0.9", "--session", "s1", "--store", url, "--json")  # fmt: skip
    assert code == 0, err
    first = json.loads(out)
    assert first["status"] == "created"

    code, out, _ = _cli("attitudes", "set", "tech_choice", "prefers DuckDB", "--store", url)
    assert code == 0 and "memvault review approve attitude:" in out
    review_id = out.split("approve ")[1].split("`")[0]

    code, out, _ = _cli("attitudes", "--store", url, "--json")
    shown = json.loads(out)
    (current,) = shown["attitudes"]
    assert current["statement"] == "prefers Polars" and current["binding"] is True
    assert current["confidence"] == pytest.approx(0.9, abs=1e-3)
    assert current["evidence"] == ["s1"] and shown["binding_threshold"] == 0.5
    assert shown["waiting_for_review"][0]["review_id"] == review_id

    code, _, err = _cli("review", "approve", review_id, "--store", url)
    assert code == 0, err
    code, out, _ = _cli("attitudes", "--all", "--store", url, "--json")
    versions = {a["statement"]: a for a in json.loads(out)["attitudes"]}
    assert (
        versions["prefers Polars"]["superseded_at"] and versions["prefers Polars"]["weight"] == 0.5
    )
    assert versions["prefers DuckDB"]["previous_id"] == first["attitude_id"]
    code, out, _ = _cli("attitudes", "--all", "--store", url)
    assert "old, w 0.5" in out and "current" in out and "0.90→0.90" in out

    code, _, err = _cli("attitudes", "set", "food", "likes pizza", "--store", url)
    assert code == 1 and "unknown attitude category 'food'" in err and "writing_style" in err


def test_skills_use_and_list(url: str) -> None:
    code, out, _ = _cli("skills", "--store", url)
    assert code == 0 and "no skills yet" in out
    code, out, err = _cli("skills", "use", "Rust", "--proficiency", "1", "--store", url)
    assert code == 0 and "L1 heard of" in out, err
    code, out, _ = _cli("skills", "use", "Rust", "--proficiency", "1", "--note", "a CLI",
                        "--store", url, "--json")  # fmt: skip
    used = json.loads(out)
    assert (used["level"], used["label"], used["previous_level"]) == ("L2", "have done", "L1")
    code, out, _ = _cli("skills", "--store", url)
    assert "have done" in out and "Rust" in out and "halving every 90 days" in out
    code, out, _ = _cli("skills", "--store", url, "--json")
    (skill,) = json.loads(out)["skills"]
    assert skill["uses"] == 2 and skill["xp"] == pytest.approx(3.0, abs=1e-3)
    code, _, err = _cli("skills", "use", "Rust", "--proficiency", "2", "--store", url)
    assert code == 2 and "less than or equal to 1" in err
