"""`memvault inbox` as a user runs it: new discoveries shown once, most surprising first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memvault
from pipelines.cli.app import app
from tests.helpers import clear_cli_environment
from tests.store.test_discovery import _dream, _world


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    url = f"duckdb://{tmp_path / 's.duckdb'}"
    with memvault.open(url) as store:
        _world(store)
        _dream(store, "dream-one")
    return url


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_inbox_shows_new_discoveries_once_and_all_lists_them_again(url: str) -> None:
    with memvault.open(url) as store:
        total = store.fetch("SELECT count(*) FROM discovery_inbox")[0][0]
    code, out, err = _cli("inbox", "--store", url, "--json", "--limit", "2")
    assert code == 0, err
    first = json.loads(out)
    shown = first["discoveries"]
    assert len(shown) == 2 and first["new_left"] == total - 2
    assert shown[0]["score"] >= shown[1]["score"]
    assert shown[0]["explanation"].startswith("No employer on record for p6")
    assert all(d["status"] == "seen" for d in shown)

    code, out, _ = _cli("inbox", "--store", url)  # the table's width is the terminal's
    assert code == 0 and "indirect_strong" in out
    assert f"{total - 2} shown and marked seen" in out
    code, out, _ = _cli("inbox", "--store", url)
    assert code == 0 and "nothing new in the inbox" in out

    code, out, _ = _cli("inbox", "--all", "--store", url, "--json")
    listed = json.loads(out)["discoveries"]
    assert len(listed) == total and {d["status"] for d in listed} == {"seen"}
    assert any("never mentioned together" in d["explanation"] for d in listed)
    with memvault.open(url) as store:
        runs = store.fetch("SELECT count(*) FROM runs WHERE kind = 'inbox'")[0][0]
    assert runs == 2, "--all and an empty inbox change nothing"


def test_a_bad_limit_is_refused(url: str) -> None:
    code, _, err = _cli("inbox", "--limit", "0", "--store", url)
    assert code != 0 and "--limit" in err
