"""`memvault recall` and `memvault feedback` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memvault
from pipelines.cli.app import app
from tests.helpers import clear_cli_environment
from tests.recall_support import fill


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    store_url = f"duckdb://{tmp_path / 's.duckdb'}"
    with memvault.open(store_url) as store:
        fill(store, tmp_path)
    return store_url


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_recall_prints_the_answer_and_feedback_rates_it(url: str) -> None:
    code, out, err = _cli("recall", "status of Quill", "--store", url, "--limit", "2")
    assert code == 0, err
    assert "project_status" in out and "Quill" in out and "Quill status: paused" in out
    assert "searched (keywords)" in out and "no vectors" in out
    code, out, err = _cli("recall", "where does Ada work", "--store", url, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["signature"] == "employer_lookup|ent_ada"
    assert (
        shown["results"][0]["tier"] == "cold" and shown["results"][0]["digest_kind"] == "extractive"
    )
    rid, top = shown["recall_id"], shown["results"][0]["block_id"]
    code, out, err = _cli("feedback", rid, "+", "--block", top, "--note", "right", "--store", url)
    assert code == 0, err
    assert f"{top} → +1" in out and "memvault undo feedback-" in out
    code, out, _ = _cli("feedback", rid, "incorrect", "--store", url, "--json")
    assert code == 0 and json.loads(out)["verdict"] == "incorrect"
    with memvault.open(url) as store:
        assert store.get_row("recall_log", rid)["verdict"] == "INCORRECT"  # type: ignore[index]
        assert store.get_row("blocks", top)["feedback_score"] == 1.0  # type: ignore[index]


def test_feedback_on_an_unknown_recall_or_verdict_is_one_line_and_exit_1(url: str) -> None:
    code, _, err = _cli("feedback", "recall-nope", "correct", "--store", url)
    assert code == 1 and "no recall with id 'recall-nope'" in err and "Traceback" not in err
    code, out, _ = _cli("recall", "notes on pytest", "--store", url, "--json")
    rid = json.loads(out)["recall_id"]
    code, _, err = _cli("feedback", rid, "meh", "--store", url)
    assert code == 1 and "unknown verdict 'meh'" in err


def test_an_insight_is_labelled_as_one_in_the_table_and_the_json(url: str) -> None:
    from memvault.dream.reflect import StatisticsSnapshot, reflect, source_blocks
    from memvault.judge import ScriptedJudge

    text = "Quill depends on the billing service and on Redis."
    with memvault.open(url) as store:
        snapshot = StatisticsSnapshot(
            new_since_last_dream={"blocks": 1},
            totals={},
            active_triples=0,
            superseded_by_predicate={},
            central_entities=[],
            communities=[],
            recall_failures=[],
            open_reviews=0,
            sources=source_blocks(store, ["ent_quill"]),
        )
        insight = {"text": text, "entities": [], "confidence": 1.0, "source_ids": ["b_quill_deps"]}
        judge = ScriptedJudge({"reflect": [{"insights": [insight], "gaps": []}]})
        assert reflect(store, judge, snapshot, "dream-cli-0001").insights_written == 1
    code, out, err = _cli("recall", text, "--store", url)
    assert code == 0, err
    assert "insight: Quill depends" in out and "(cites b_quill_deps)" in out
    code, out, err = _cli("recall", text, "--store", url, "--json")
    results = json.loads(out)["results"]
    kinds = [(r["block_id"], r["kind"]) for r in results]
    assert kinds[0] == ("b_quill_deps", "memory"), kinds  # the memory first, then the insight
    assert [r["cites"] for r in results if r["kind"] == "insight"] == [["b_quill_deps"]]


def test_a_frozen_turn_shows_its_digest_and_show_original_prints_the_full_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.judge import HeuristicJudge
    from memvault.lifecycle.tiering import run_tiering
    from tests.old_history import add_history, questions

    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    url = f"duckdb://{tmp_path / 'old.duckdb'}"
    with memvault.open(url) as store:
        texts = add_history(store, turns=6)
        run_tiering(store, HeuristicJudge())
    question, answer = questions()[0]
    code, out, err = _cli("recall", question, "--store", url, "--json")
    assert code == 0, err
    [hit] = [h for h in json.loads(out)["results"] if h["block_id"] == answer]
    assert hit["original_archived"] is True and hit["text"] == "Melanie: Thanks, Caroline!"
    code, out, err = _cli("recall", question, "--store", url)
    assert code == 0, err
    assert "original archived" in out and "memvault show BLOCK --original" in out
    code, out, err = _cli("show", answer, "--original", "--store", url)
    assert code == 0, err
    assert out == texts[answer] + "\n"
    code, out, err = _cli("show", answer, "--store", url)
    assert code == 0 and "frozen, headline digest" in out and "original archived" in out
    assert "Melanie: Thanks, Caroline!" in out and "pottery" not in out
    code, out, _ = _cli("show", answer, "--store", url, "--json")
    shown = json.loads(out)
    assert shown["original"] == texts[answer] and shown["original_archived"] is True
    code, out, err = _cli("show", "turn-nope", "--original", "--store", url)
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.strip().splitlines() == [
        "error: no memory block with id 'turn-nope' (recall lists block ids)"
    ]


def test_a_superseded_memory_is_marked_in_the_table_and_the_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.judge import ScriptedJudge
    from memvault.temporal import apply_conflict_plan, plan_conflicts
    from tests.recall_support import JOINED_NEW, T0, add_records, employer_after, employer_before

    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    url = f"duckdb://{tmp_path / 'employers.duckdb'}"
    with memvault.open(url) as store:
        add_records(store, employer_before() + employer_after(), tmp_path / "h.jsonl")
        apply_conflict_plan(store, plan_conflicts(store, ScriptedJudge({}), now=T0), "dream-t")
    code, out, err = _cli("recall", "where does Ada work", "--store", url, "--json")
    assert code == 0, err
    hits = {h["block_id"]: h for h in json.loads(out)["results"]}
    assert hits["b_initech"]["superseded_since"] == JOINED_NEW.isoformat()
    assert hits["b_tyrell"]["superseded_since"] is None
    code, out, err = _cli("recall", "where does Ada work", "--store", url)
    assert code == 0, err
    assert f"(superseded since {JOINED_NEW:%Y-%m-%d})" in out


def test_ids_and_texts_are_printed_as_they_are_never_as_markup(url: str, tmp_path: Path) -> None:
    """An ingested id is data: ``blk[/]x`` used to crash the table, ``[link=…]`` became a
    terminal hyperlink."""
    odd = ["blk[/]x", "[link=a]b[/link]", "[bold]c"]
    lines = [
        json.dumps(
            {
                "type": "block",
                "id": block_id,
                "text": f"zebra crossing note {n} [red]",
                "created_at": "2026-11-01T10:00:00Z",
            }
        )
        for n, block_id in enumerate(odd)
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, _, err = _cli("ingest", str(path), "--store", url)
    assert code == 0, err
    code, out, err = _cli("recall", "zebra crossing", "--store", url, "--limit", "5")
    assert code == 0 and "Traceback" not in err, err
    for block_id in odd:
        assert block_id in out, out
    assert "[red]" in out
    code, out, err = _cli("show", "blk[/]x", "--store", url)
    assert code == 0 and "blk[/]x" in out, err
