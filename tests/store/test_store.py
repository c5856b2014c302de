"""The store on both backends: schema, the audited write path, undo."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

import memvault
from memvault.errors import StoreError, UndoError
from memvault.ingest import ingest_file
from memvault.store import Store, undo_run
from tests.helpers import FIXTURES, export_text, table_dump

T0 = dt.datetime(2026, 3, 1, 9, 0)


def _blocks(*ids: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": list(ids),
            "kind": ["memory"] * len(ids),
            "text": [f"memory {i}" for i in ids],
            "created_at": [T0] * len(ids),
            "updated_at": [T0] * len(ids),
        }
    )


def test_open_creates_schema_and_reopening_migrates_nothing(store_url: str) -> None:
    with memvault.open(store_url) as store:
        assert store.schema_version() >= 1
        assert store.counts()["blocks"] == 0
    with memvault.open(store_url) as again:
        assert again.migrate() == []


def test_unsupported_url_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="unsupported store URL"):
        memvault.open("mysql://localhost/x")


def test_unreachable_postgres_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        memvault.open("postgresql://nobody@127.0.0.1:1/none")


def test_every_write_is_audited_with_images(store: Store) -> None:
    run = store.begin_run("test")
    with store.mutation(run, "phase-a") as m:
        assert m.insert("blocks", _blocks("b1", "b2")) == ["b1", "b2"]
        assert m.update(
            "blocks", "b1", {"text": "edited", "importance": 0.9}, action="edit", reason="why"
        )
    log = store.fetch_df("SELECT * FROM audit_log ORDER BY id")
    assert log["action"].to_list() == ["insert", "insert", "edit"]
    assert set(log["run_id"]) == {run} and set(log["phase"]) == {"phase-a"}
    edit = log.row(2, named=True)
    assert json.loads(edit["before_image"])["text"] == "memory b1"
    assert json.loads(edit["after_image"])["text"] == "edited"
    assert json.loads(edit["after_image"])["importance"] == 0.9
    assert edit["reason"] == "why"
    assert log["before_image"][0] is None and json.loads(log["after_image"][0])["id"] == "b1"


def test_a_failed_mutation_leaves_neither_change_nor_audit(store: Store) -> None:
    run = store.begin_run("test")
    with pytest.raises(RuntimeError), store.mutation(run, "p") as m:
        m.insert("blocks", _blocks("b1"))
        raise RuntimeError("boom")
    assert store.counts()["blocks"] == 0
    assert store.counts()["audit_log"] == 0


def test_insert_skips_existing_ids_and_audits_only_new_rows(store: Store) -> None:
    run = store.begin_run("test")
    with store.mutation(run, "p") as m:
        m.insert("blocks", _blocks("b1"))
    with store.mutation(run, "p") as m:
        assert m.insert("blocks", _blocks("b1", "b2")) == ["b2"]
    assert store.counts()["audit_log"] == 2


def test_derived_tables_are_not_written_through_the_audited_path(store: Store) -> None:
    with pytest.raises(StoreError, match="not a memory table"), store.mutation("r", "p") as m:
        m.insert("audit_log", pl.DataFrame({"id": [1]}))


def test_undo_restores_exactly_the_state_before_the_run(store: Store) -> None:
    ingest_file(store, FIXTURES / "small_history.jsonl")
    before = {t: table_dump(store, t) for t in ("blocks", "triples", "entities")}
    exported = export_text(store)

    run = store.begin_run("curate")
    with store.mutation(run, "consolidate") as m:
        m.update(
            "blocks", "b1", {"text": "rewritten", "tier": "cold", "summary": "s"}, action="rewrite"
        )
        m.update_many(
            "triples",
            store.fetch_df("SELECT id FROM triples").with_columns(
                pl.lit("superseded").alias("status"), pl.lit(T0).alias("invalid_at")
            ),
            action="supersede",
        )
        m.insert(
            "entities",
            pl.DataFrame(
                {
                    "id": ["e9"],
                    "name": ["Bob"],
                    "canonical_name": ["bob"],
                    "entity_type": ["person"],
                }
            ),
        )
    store.finish_run(run, "succeeded")
    assert export_text(store) != exported

    report = undo_run(store, run)
    assert report.total == 3
    assert {t: table_dump(store, t) for t in before} == before
    assert export_text(store) == exported
    assert store.run(run)["status"] == "undone"
    with pytest.raises(UndoError, match="already undone"):
        undo_run(store, run)


def test_undo_of_an_ingest_then_undo_of_the_undo(store: Store) -> None:
    report = ingest_file(store, FIXTURES / "small_history.jsonl")
    full = export_text(store)
    undo = undo_run(store, report.run_id)
    assert export_text(store) == ""
    undo_run(store, undo.undo_run_id)
    assert export_text(store) == full
    assert store.run(report.run_id)["status"] == "succeeded"


def test_undo_refuses_when_a_later_run_changed_the_same_rows(store: Store) -> None:
    report = ingest_file(store, FIXTURES / "small_history.jsonl")
    later = store.begin_run("later")
    with store.mutation(later, "p") as m:
        m.update("blocks", "b1", {"text": "changed later"}, action="edit")
    with pytest.raises(UndoError, match=later):
        undo_run(store, report.run_id)
    undo_run(store, later)
    undo_run(store, report.run_id)
    assert store.counts()["blocks"] == 0


def test_undo_of_unknown_or_empty_runs_is_a_clear_error(store: Store) -> None:
    with pytest.raises(UndoError, match="no run with id"):
        undo_run(store, "nope")
    run = store.begin_run("idle")
    with pytest.raises(UndoError, match="changed nothing"):
        undo_run(store, run)


def test_runs_are_recorded_with_status_and_stats(store: Store) -> None:
    run = store.begin_run("dream", {"force": True})
    store.finish_run(run, "succeeded", {"actions": 3})
    row = store.last_run("dream")
    assert row is not None and row["id"] == run
    assert row["params"] == {"force": True} and row["stats"] == {"actions": 3}
