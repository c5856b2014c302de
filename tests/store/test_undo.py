"""Undo: set-based, all or nothing, and an undone ingest can be ingested again."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.dream import DreamConfig, prune_orphans
from memvault.errors import MemvaultError
from memvault.ingest import ingest_file
from memvault.judge import HeuristicJudge
from memvault.store import Store, undo_run
from memvault.store.audit import Mutation
from memvault.temporal import apply_conflict_plan, plan_conflicts
from tests.dagster.dream_support import seed_demo_store
from tests.helpers import FIXTURES, export_text


def _seeded(store: Store, url: str, tmp_path: Path) -> None:
    """A small demo store whose recalls were asked, and whose blocks were last read, two
    months ago, so the prune archives the orphans they named (an entity asked about or read
    lately is in use and kept, whatever today's date is)."""
    seed_demo_store(url, tmp_path, sessions=20)
    store.backend.execute("UPDATE recall_log SET created_at = created_at - INTERVAL '60 days'")
    store.backend.execute(
        "UPDATE blocks SET last_accessed_at = least(last_accessed_at, now() - INTERVAL '60 days')"
    )
    # Entities nothing refers to, whatever the generated history holds today: the prune's work.
    orphans = tmp_path / "orphans.jsonl"
    orphans.write_text(
        "".join(
            f'{{"type":"entity","id":"ent_orphan_{i}","name":"Orphan {i}","entity_type":"topic"}}\n'
            for i in range(3)
        )
    )
    ingest_file(store, orphans)


def _dreamed(store: Store, url: str, tmp_path: Path) -> str:
    """A demo store after a consolidation and a prune: a run that changed several tables."""
    _seeded(store, url, tmp_path)
    run = store.begin_run("dream")
    apply_conflict_plan(store, plan_conflicts(store, HeuristicJudge()), run)
    prune_orphans(store, run, DreamConfig(orphan_grace_days=0))
    store.finish_run(run, "succeeded")
    return run


def test_undo_restores_every_table_the_run_changed_and_can_be_undone_itself(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    _seeded(store, store_url, tmp_path)
    before = export_text(store)
    run = store.begin_run("dream")
    apply_conflict_plan(store, plan_conflicts(store, HeuristicJudge()), run)
    prune_orphans(store, run, DreamConfig(orphan_grace_days=0))
    store.finish_run(run, "succeeded")
    after = export_text(store)
    assert after != before
    report = undo_run(store, run)
    assert set(report.restored) >= {"triples", "entities"} and report.total > 10
    assert export_text(store) == before
    undo_run(store, report.undo_run_id)  # the undo is a run like any other
    assert export_text(store) == after
    assert store.run(run)["status"] == "succeeded"  # type: ignore[index]


def test_a_killed_undo_changes_nothing_and_can_be_run_again(
    store: Store, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _dreamed(store, store_url, tmp_path)
    after = export_text(store)
    real = Mutation.restore_many
    calls = {"n": 0}

    def dies_on_the_second_table(self: Mutation, table: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("the process was stopped")
        return real(self, table, *args, **kwargs)

    monkeypatch.setattr(Mutation, "restore_many", dies_on_the_second_table)
    with pytest.raises(KeyboardInterrupt):
        undo_run(store, run)
    assert export_text(store) == after, "nothing of a killed undo stays"
    assert store.run(run)["status"] == "succeeded"  # type: ignore[index]
    monkeypatch.setattr(Mutation, "restore_many", real)
    undo_run(store, run)
    assert store.run(run)["status"] == "undone"  # type: ignore[index]


def test_an_undone_ingest_can_be_ingested_again(store: Store) -> None:
    source = FIXTURES / "small_history.jsonl"
    first = ingest_file(store, source)
    assert ingest_file(store, source).already_ingested
    report = undo_run(store, first.run_id or "")
    assert store.counts(("blocks",))["blocks"] == 0
    again = ingest_file(store, source)
    assert not again.already_ingested and again.inserted["block"] == first.inserted["block"]
    # Undo that ingest, then undo the undo: the file counts as ingested again.
    second = undo_run(store, again.run_id or "")
    undo_run(store, second.undo_run_id)
    assert ingest_file(store, source).already_ingested
    with pytest.raises(MemvaultError, match="already undone"):
        undo_run(store, report.run_id)


def test_an_undo_that_removes_most_of_a_table_keeps_the_rest_its_keys_and_defaults(
    store: Store, tmp_path: Path
) -> None:
    """On DuckDB a table that loses most of its rows is made again without them instead of
    deleted from: the rows it keeps, its primary key and its defaults stay."""
    first = tmp_path / "first.jsonl"
    first.write_text(
        '{"type":"session","id":"s1","source":"test","started_at":"2026-01-05T10:00:00Z"}\n'
        '{"type":"block","id":"b1","session_id":"s1","text":"Kept.",'
        '"created_at":"2026-01-05T10:01:00Z"}\n'
    )
    ingest_file(store, first)
    kept = export_text(store)
    later = tmp_path / "later.jsonl"
    later.write_text(
        "".join(
            f'{{"type":"block","id":"b{i}","session_id":"s1","text":"Later {i}.",'
            f'"created_at":"2026-01-05T10:0{i}:00Z"}}\n'
            for i in range(2, 6)
        )
    )
    report = undo_run(store, ingest_file(store, later).run_id or "")
    assert report.restored["blocks"] == 4
    assert export_text(store) == kept
    copy = (
        "INSERT INTO blocks (id, session_id, kind, text, created_at, updated_at) "
        "SELECT :id, session_id, kind, 'x', created_at, updated_at FROM blocks WHERE id = 'b1'"
    )
    with pytest.raises(Exception, match=r"(?i)duplicate|constraint"):
        store.backend.execute(copy, {"id": "b1"})
    store.backend.execute(copy, {"id": "b9"})
    assert store.fetch("SELECT importance, tier, status FROM blocks WHERE id = 'b9'") == [
        (0.5, "hot", "active")
    ]
