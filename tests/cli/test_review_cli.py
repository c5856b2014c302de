"""`memvault review list | show` as an owner reads them: whole ids, and the memories shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import memvault
from memvault.review import list_items
from pipelines.cli import common
from pipelines.cli.app import app
from tests.helpers import clear_cli_environment
from tests.review_support import DOUBT_TEXT, LONG_ID, SCRIPT, Kinds, every_kind


@pytest.fixture
def kinds(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Kinds]:
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    return store_url, every_kind(store_url, tmp_path)


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_list_never_cuts_an_id_on_a_narrow_terminal(
    kinds: tuple[str, Kinds], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, made = kinds
    monkeypatch.setattr(common, "out", Console(width=60))
    shown = _cli("review", "list", "--store", url)
    with memvault.open(url) as store:
        ids = [i.id for i in list_items(store)]
    assert len(ids) == 5 and made.memory == f"memory:{LONG_ID}" and len(made.memory) > 60
    missing = [i for i in ids if i not in shown.splitlines()]
    assert not missing, f"ids cut or wrapped: {missing}\n{shown}"


def test_list_shows_every_items_impact(kinds: tuple[str, Kinds]) -> None:
    """Each kind (conflicts, a low-confidence memory, an archive, the gardener's merge) with
    the impact score it was queued with, never "impact —"."""
    url, _ = kinds
    shown = _cli("review", "list", "--store", url)
    impacts = re.findall(r"· impact (\S+)", shown)
    assert len(impacts) == 5 and "—" not in impacts, shown
    assert all(0.0 <= float(i) <= 1.0 for i in impacts), impacts


def test_show_prints_the_memories_of_each_kind(kinds: tuple[str, Kinds]) -> None:
    url, made = kinds
    memory = _cli("review", "show", made.memory, "--store", url)
    assert "subject Ada · predicate lives_in · object Lisbon" in memory
    assert "valid from 2025-03-01 until — · recorded 2025-01-10 · confidence 0.20" in memory
    assert f"> {DOUBT_TEXT}" in memory
    merge = _cli("review", "show", made.merge, "--store", url)
    assert "merged away — blocks blk_merged" in merge and "kept — blocks blk_kept" in merge
    assert "Ada drinks [-black coffee-] every morning" in merge
    assert "Ada drinks {+green tea+} every morning before the standup" in merge
    assert f"[-{SCRIPT}-]" in merge, "markup in a memory is printed as it is, not read"
    archive = _cli("review", "show", made.archive, "--store", url)
    assert f"Acme {SCRIPT} based_in Leeds" in archive
    assert "valid from 2019-01-01 until 2021-01-01" in archive
    conflict = _cli("review", "show", "conflict:globex1|globex2", "--store", url)
    assert "Globex located_in [-Paris-]" in conflict
    assert "Globex located_in {+Berlin+}" in conflict


def test_show_json_carries_the_memories(kinds: tuple[str, Kinds]) -> None:
    url, made = kinds
    shown = json.loads(_cli("review", "show", made.merge, "--json", "--store", url))
    texts = [m["text"] for m in shown["evidence"]["memories"]]
    assert texts[0].startswith("Ada drinks black coffee") and texts[1].startswith(
        "Ada drinks green"
    )
    left, right = shown["evidence"]["diff"]
    assert {"op": "del", "text": "black coffee "} in left
    assert {"op": "ins", "text": "green tea "} in right


def test_show_other_kinds_side_by_side(kinds: tuple[str, Kinds]) -> None:
    """A garden invalidation (the retired fact and the newer one), a split (the block now and
    what is left of it, then the pieces) and a replaced preference (current and proposed)."""
    from memvault.gardener.ledger import Ledger
    from memvault.layers.attitudes import upsert

    url, _ = kinds
    with memvault.open(url) as store:
        run_id = store.begin_run("garden", {})
        ledger = Ledger(store)
        invalidate, _ = ledger.propose(
            run_id, "invalidate", store_name="memvault", action="invalidate",
            target_table="triples", target_id="merged", related=["kept"], certain=False,
            confidence=0.5, reason="a newer drink",
        )  # fmt: skip
        split, _ = ledger.propose(
            run_id, "split", store_name="memvault", action="split", target_table="blocks",
            target_id="blk_kept", certain=False, confidence=0.6, reason="split into 1 item(s)",
            detail={"parent_text": "Ada drinks green tea", "pieces": [{"text": "every morning"}]},
        )  # fmt: skip
        store.finish_run(run_id, "succeeded", {})
        upsert(store, "tech_choice", "prefers Polars")
        replaced = upsert(store, "tech_choice", "prefers pandas")
        assert replaced.review_id
    shown = _cli("review", "show", invalidate, "--store", url)
    assert "retired — triples merged" in shown and "newer — triples kept" in shown
    assert "Ada drinks [-black coffee-]" in shown and "Ada drinks {+green tea+}" in shown
    shown = _cli("review", "show", split, "--store", url)
    assert "after the split — proposal blk_kept" in shown
    assert "Ada drinks green tea [-every morning before the standup-]" in shown
    assert "piece 1 — proposal" in shown and "  every morning" in shown
    shown = _cli("review", "show", replaced.review_id, "--store", url)
    assert "prefers [-Polars-]" in shown and "prefers {+pandas+}" in shown
