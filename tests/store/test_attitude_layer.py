"""Preferences as the owner relies on them: version chains, review of replacements, decay."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import polars as pl
import pytest

import memvault
from memvault.layers import attitudes
from memvault.layers.attitudes import AttitudeError, DecaySettings
from memvault.review import decide, list_items
from memvault.store import Store, undo_run

T0 = dt.datetime(2026, 3, 1, 9, 0)
SETTINGS = DecaySettings()  # λ = 0.008 per day, binding from 0.5


def day(n: float) -> dt.datetime:
    return T0 + dt.timedelta(days=n)


def _row(store: Store, attitude_id: str) -> dict:
    row = store.get_row("attitudes", attitude_id)
    assert row is not None
    return row


def _decay_run(store: Store, now: dt.datetime) -> tuple[attitudes.DecayReport, str]:
    run_id = store.begin_run("attitude_decay")
    report = attitudes.decay_attitudes(store, now, run_id, SETTINGS)
    store.finish_run(run_id, "succeeded")
    return report, run_id


def _audit_count(store: Store, run_id: str) -> int:
    return int(store.fetch("SELECT count(*) FROM audit_log WHERE run_id = :r", {"r": run_id})[0][0])


def test_first_statement_then_reinforcement(store: Store) -> None:
    first = attitudes.upsert(store, "tech_choice", "prefers Polars over pandas", 0.9, ["s1"],
                             now=T0)  # fmt: skip
    assert first.status == "created" and first.attitude_id
    row = _row(store, first.attitude_id)
    assert row["topic"] == "tech_choice" and row["previous_id"] is None
    assert row["stated_confidence"] == 0.9 and row["evidence_at"] == T0

    _decay_run(store, day(60))
    assert _row(store, first.attitude_id)["confidence"] < 0.9

    again = attitudes.upsert(store, "tech_choice", "  Prefers polars over Pandas. ", 0.9,
                             ["s2", "s1"], now=day(60))  # fmt: skip
    assert again.status == "reinforced" and again.attitude_id == first.attitude_id
    row = _row(store, first.attitude_id)
    assert json.loads(row["evidence"]) == ["s1", "s2"]
    assert row["evidence_at"] == day(60) and row["confidence"] == 0.9, "back to the stated value"
    assert store.fetch("SELECT count(*) FROM attitudes")[0][0] == 1


def test_unknown_category_names_the_ten_and_writes_nothing(store: Store) -> None:
    with pytest.raises(AttitudeError) as caught:
        attitudes.upsert(store, "food", "likes pizza", 0.8, now=T0)
    message = str(caught.value)
    assert "'food'" in message
    for category in ("writing_style", "tech_choice", "pace", "learning", "values"):
        assert category in message
    assert store.fetch("SELECT count(*) FROM attitudes")[0][0] == 0
    assert store.fetch("SELECT count(*) FROM runs")[0][0] == 0


def test_replacement_waits_for_review_then_forms_a_chain(store: Store) -> None:
    v1 = attitudes.upsert(store, "pace", "ships small changes daily", 0.8, ["s1"], now=T0)
    proposed = attitudes.upsert(store, "pace", "batches changes weekly", 0.85, ["s7"], now=day(10))
    assert proposed.status == "queued" and proposed.attitude_id is None
    assert proposed.replaces == v1.attitude_id
    assert store.fetch("SELECT count(*) FROM attitudes")[0][0] == 1, "nothing changes yet"
    (item,) = list_items(store, kinds=["attitude"])
    assert item.id == proposed.review_id and item.proposal["statement"] == "batches changes weekly"
    assert "always wait for a human" in (item.reason or "")

    # Said again while waiting: no second item.
    twice = attitudes.upsert(store, "pace", "Batches changes weekly", 0.85, now=day(11))
    assert twice.status == "already_queued" and twice.review_id == item.id

    decision = decide(store, item.id, "correct")
    head = store.fetch_df("SELECT * FROM attitudes WHERE superseded_at IS NULL")
    assert head.height == 1
    new = head.row(0, named=True)
    assert new["statement"] == "batches changes weekly" and new["previous_id"] == v1.attitude_id
    assert new["created_at"] == day(10) and new["weight"] == 1.0
    old = _row(store, str(v1.attitude_id))
    assert old["superseded_at"] == day(10) and old["weight"] == 0.5, "kept, with a lower weight"

    # A third version halves every older one; none is deleted.
    third = attitudes.upsert(store, "pace", "ships when ready", 0.7, now=day(20))
    third_decision = decide(store, str(third.review_id), "correct")
    chain = attitudes.chain(store, "pace")
    assert chain["weight"].to_list() == [0.25, 0.5, 1.0]
    assert chain["previous_id"].to_list() == [None, v1.attitude_id, new["id"]]
    assert chain["superseded_at"].null_count() == 1

    # An approval is audited and undoable: undo the last one, the chain is back to two.
    phases = store.fetch(
        "SELECT DISTINCT phase FROM audit_log WHERE run_id = :r AND target_table = 'attitudes'",
        {"r": decision.run_id},
    )
    assert phases == [("review",)]
    undo_run(store, third_decision.run_id)
    chain = attitudes.chain(store, "pace")
    assert chain.height == 2 and chain["weight"].to_list() == [0.5, 1.0]
    assert chain["superseded_at"].null_count() == 1


def test_rejected_replacement_keeps_the_current_preference(store: Store) -> None:
    v1 = attitudes.upsert(store, "aesthetic", "likes dark themes", 0.8, now=T0)
    proposed = attitudes.upsert(store, "aesthetic", "likes light themes", 0.8, now=day(1))
    decide(store, str(proposed.review_id), "wrong")
    current = attitudes.binding(store, day(1), SETTINGS)
    assert current["id"].to_list() == [v1.attitude_id]
    assert _row(store, str(v1.attitude_id))["weight"] == 1.0


def test_topics_keep_separate_chains(store: Store) -> None:
    a = attitudes.upsert(store, "tech_choice", "uses PostgreSQL", 0.8, now=T0, topic="database")
    b = attitudes.upsert(store, "tech_choice", "writes Rust", 0.8, now=T0, topic="language")
    assert a.status == b.status == "created"
    assert attitudes.chain(store, "tech_choice", "database")["id"].to_list() == [a.attitude_id]
    same = attitudes.upsert(store, "tech_choice", "Uses PostgreSQL", 0.9, now=T0, topic="Database")
    assert same.status == "reinforced" and same.attitude_id == a.attitude_id


@pytest.mark.parametrize(
    ("days", "binds"),
    [(0, True), (30, True), (90, False)],
)
def test_decay_follows_the_formula(store: Store, days: int, binds: bool) -> None:
    made = attitudes.upsert(store, "workflow", "reviews before merging", 0.9, ["s1"], now=T0)
    report, _ = _decay_run(store, day(days))
    expected = round(0.9 * math.exp(-0.008 * days), 6)
    row = _row(store, str(made.attitude_id))
    assert row["confidence"] == pytest.approx(expected, abs=1e-9)
    assert row["stated_confidence"] == 0.9, "the stated value is kept"
    view = attitudes.binding(store, day(days), SETTINGS).row(0, named=True)
    assert view["decayed"] == pytest.approx(expected, abs=1e-9) and view["binding"] is binds
    assert (report.binding, report.not_binding) == ((1, 0) if binds else (0, 1))
    assert report.decayed == (0 if days == 0 else 1)
    if days == 30:
        assert expected == pytest.approx(0.707965, abs=1e-6)
    if days == 90:
        assert report.stopped_binding == [made.attitude_id]
        assert expected == pytest.approx(0.438077, abs=1e-6)


def test_new_evidence_restores_and_a_rerun_writes_nothing(store: Store) -> None:
    made = attitudes.upsert(store, "learning", "learns from examples first", 0.9, ["s1"], now=T0)
    _, first = _decay_run(store, day(90))
    assert _audit_count(store, first) == 1
    again, second = _decay_run(store, day(90))
    assert again.decayed == 0 and _audit_count(store, second) == 0, "same now, nothing written"
    assert not attitudes.binding(store, day(90), SETTINGS)["binding"].any()

    attitudes.upsert(store, "learning", "learns from examples first", 0.9, ["s9"], now=day(91))
    view = attitudes.binding(store, day(91), SETTINGS).row(0, named=True)
    assert view["binding"] and view["decayed"] == 0.9
    assert _row(store, str(made.attitude_id))["confidence"] == 0.9


def test_decay_reads_rows_stored_before_the_decay_columns(store: Store) -> None:
    """Ingested attitudes have no stated confidence or evidence time: created_at and the
    stored confidence stand in, and the first pass records the stated value."""
    with store.mutation("ingest-old", "ingest") as m:
        m.insert("attitudes", pl.DataFrame([{
            "id": "att_old", "category": "values", "statement": "privacy over convenience",
            "confidence": 0.8, "weight": 1.0, "evidence": "[]", "created_at": T0,
        }]))  # fmt: skip
    _decay_run(store, day(30))
    row = _row(store, "att_old")
    assert row["stated_confidence"] == 0.8
    assert row["confidence"] == pytest.approx(round(0.8 * math.exp(-0.24), 6), abs=1e-9)
    again, _ = _decay_run(store, day(30))
    assert again.decayed == 0
    # The first upsert of the same category treats it as the current version.
    same = attitudes.upsert(store, "values", "Privacy over convenience", 0.8, now=day(31))
    assert same.status == "reinforced" and same.attitude_id == "att_old"


def test_decay_is_audited_and_undoable(store: Store) -> None:
    made = attitudes.upsert(store, "communication", "wants direct answers", 0.9, now=T0)
    _, run_id = _decay_run(store, day(45))
    phases = store.fetch("SELECT DISTINCT phase FROM audit_log WHERE run_id = :r", {"r": run_id})
    assert phases == [("attitudes",)]
    undo_run(store, run_id)
    assert _row(store, str(made.attitude_id))["confidence"] == 0.9
    assert _row(store, str(made.attitude_id))["decayed_at"] == T0


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_ATTITUDE_DECAY_PER_DAY", "0.02")
    monkeypatch.setenv("MEMVAULT_ATTITUDE_BINDING", "0.4")
    chosen = DecaySettings.from_env()
    assert (chosen.decay_per_day, chosen.binding_threshold) == (0.02, 0.4)
    assert DecaySettings().binding_days == pytest.approx(math.log(2) / 0.008)
    monkeypatch.setenv("MEMVAULT_ATTITUDE_DECAY_PER_DAY", "fast")
    with pytest.raises(Exception, match="MEMVAULT_ATTITUDE_DECAY_PER_DAY"):
        DecaySettings.from_env()


def test_upserts_are_audited_and_undoable(store: Store) -> None:
    made = attitudes.upsert(store, "tooling", "uses neovim", 0.8, ["s1"], now=T0)
    again = attitudes.upsert(store, "tooling", "uses Neovim", 0.9, ["s2"], now=day(5))
    for result in (made, again):
        phases = store.fetch(
            "SELECT DISTINCT phase FROM audit_log WHERE run_id = :r", {"r": result.run_id}
        )
        assert phases == [("attitudes",)]
    undo_run(store, str(again.run_id))
    row = _row(store, str(made.attitude_id))
    assert json.loads(row["evidence"]) == ["s1"] and row["evidence_at"] == T0
    assert row["stated_confidence"] == 0.8
    undo_run(store, str(made.run_id))
    assert store.fetch("SELECT count(*) FROM attitudes") == [(0,)]


def test_the_conflict_planner_reads_an_approved_chain(store: Store) -> None:
    """The dream retires the older of two preference facts when the attitudes chain says the
    newer replaced it: a chain written here is one it can follow."""
    from memvault.temporal.conflict.candidates import load_attitudes
    from memvault.temporal.conflict.rules import preference_links

    attitudes.upsert(store, "tech_choice", "Ada prefers pandas", 0.8, ["s1"], now=T0)
    proposed = attitudes.upsert(store, "tech_choice", "Ada prefers Polars", 0.9, ["s2"],
                                now=day(30))  # fmt: skip
    decide(store, str(proposed.review_id), "correct")
    prefs = pl.DataFrame(
        {
            "id": ["t1", "t2"],
            "subject_id": ["ada", "ada"],
            "predicate": ["prefers", "prefers"],
            "source_session": ["s1", "s2"],
            "valid_at": [T0, day(30)],
            "created_at": [T0, day(30)],
            "object": ["pandas", "Polars"],
        }
    )
    links = preference_links(load_attitudes(store), prefs)
    assert links.to_dicts() == [{"old": "t1", "new": "t2"}]


def test_topics_survive_export_and_ingest(store: Store, tmp_path: Path) -> None:
    from memvault.export import write_export
    from memvault.ingest import ingest_file

    attitudes.upsert(store, "tech_choice", "uses PostgreSQL", 0.8, now=T0, topic="database")
    attitudes.upsert(store, "tech_choice", "writes Rust", 0.8, now=T0)
    path = tmp_path / "attitudes.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        write_export(store, fh, ("attitude",))
    exported = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(str(r["topic"]) for r in exported) == ["database", "tech_choice"]
    with memvault.open(f"duckdb://{tmp_path / 'copy.duckdb'}") as copy:
        ingest_file(copy, path)
        assert attitudes.chain(copy, "tech_choice", "database")["statement"].to_list() == [
            "uses PostgreSQL"
        ]
