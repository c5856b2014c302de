"""A failed dream is reverted: every row it changed and the derived tables it rewrote come back
as they were, in one transaction, and a dream whose process died is reverted by the next run
that begins (of any kind); any other run left running by a dead process is closed as failed."""

from __future__ import annotations

import subprocess

import polars as pl
import pytest

from memvault.dream.atomic import DreamReverted, ensure_going_on, fail_dream
from memvault.dream.exclusive import begin_dream
from memvault.errors import UndoError
from memvault.normalize import utcnow
from memvault.store import Store, undo_run
from memvault.store.liveness import HOST
from memvault.store.revert import keep_prior
from memvault.store.tables import AUDITED_TABLES
from tests.helpers import TEST_NOW, table_dump

STATE_TABLES = (*AUDITED_TABLES, "communities", "centrality")


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _state(store: Store) -> dict[str, list[dict]]:
    return {t: table_dump(store, t) for t in STATE_TABLES}


def _seed(store: Store) -> None:
    """A few memories, a fact and a community table, written by an ingest that succeeded."""
    run = store.begin_run("ingest")
    ada = {"id": "ent_ada", "name": "Ada", "canonical_name": "ada", "entity_type": "person"}
    block = {"id": "blk_1", "kind": "memory", "text": "Ada works at Acme", "updated_at": TEST_NOW}
    fact = {"id": "t_1", "subject_id": "ent_ada", "predicate": "works_at", "object": "Acme"}
    with store.mutation(run, "ingest") as m:
        for table, row in (("entities", ada), ("blocks", block), ("triples", fact)):
            m.insert(table, pl.DataFrame([row | {"created_at": TEST_NOW}]), action="ingest")
    store.backend.execute(
        "INSERT INTO communities (entity_id, community, size, run_id, updated_at) "
        "VALUES ('ent_ada', 3, 1, 'older-dream', :t)",
        {"t": TEST_NOW},
    )
    store.finish_run(run, "succeeded")


def _dream_writes(store: Store, run_id: str) -> None:
    """What a dream does before it fails: audited changes in several transactions, and a
    derived table rewritten whole."""
    insight = {"id": "blk_insight", "kind": "insight", "text": "Ada likes Acme"}
    with store.mutation(run_id, "dream_reflect") as m:
        m.insert(
            "blocks", pl.DataFrame([insight | {"created_at": utcnow(), "updated_at": utcnow()}])
        )
    with store.mutation(run_id, "dream_consolidate") as m:
        m.update("triples", "t_1", {"status": "superseded", "invalid_at": utcnow()},
                 action="supersede")  # fmt: skip
        m.update("blocks", "blk_1", {"text": "Ada works at Acme."}, action="normalize-text")
    with store.transaction():
        keep_prior(store, "communities", run_id)
        store.backend.execute("DELETE FROM communities")
        keep_prior(store, "communities", run_id)  # a resumed stage keeps the first copy
        store.backend.execute(
            "INSERT INTO communities (entity_id, community, size, run_id, updated_at) "
            "VALUES ('ent_ada', 9, 2, :r, :t)",
            {"r": run_id, "t": utcnow()},
        )


def test_a_failed_dream_leaves_every_table_as_it_was(store: Store) -> None:
    _seed(store)
    before = _state(store)
    begin_dream(store, "dream-failing", "dream", {})
    _dream_writes(store, "dream-failing")
    assert _state(store) != before
    report = fail_dream(store, "dream-failing", "blocking check(s) failed: grounding")
    assert report is not None and report.total == 3 and report.derived == {"communities": 1}
    assert _state(store) == before
    run = store.run("dream-failing")
    assert run is not None and run["status"] == "reverted"
    assert run["error"].startswith("blocking check(s) failed: grounding; reverted by revert-")
    revert = store.run(report.revert_run_id)
    assert revert is not None and revert["kind"] == "revert" and revert["status"] == "succeeded"
    assert store.fetch("SELECT count(*) FROM derived_prior")[0][0] == 0
    # Ended: a re-execution of it stops, failing it again changes nothing, undo refuses.
    with pytest.raises(DreamReverted, match="start a new dream"):
        ensure_going_on(store, "dream-failing")
    with pytest.raises(DreamReverted):
        begin_dream(store, "dream-failing", "dream", {})
    assert fail_dream(store, "dream-failing", "again") is None
    with pytest.raises(UndoError, match="reverted already"):
        undo_run(store, "dream-failing")
    # The revert is a run like any other: undoing it brings the failed dream's writes back.
    undo_run(store, report.revert_run_id)
    assert store.get_row("blocks", "blk_insight") is not None


def test_a_dream_that_succeeds_keeps_no_copy(store: Store) -> None:
    _seed(store)
    begin_dream(store, "dream-ok", "dream", {})
    _dream_writes(store, "dream-ok")
    assert store.fetch("SELECT count(*) FROM derived_prior")[0][0] == 2
    store.finish_run("dream-ok", "succeeded")
    assert store.fetch("SELECT count(*) FROM derived_prior")[0][0] == 0


def test_a_dream_whose_process_died_is_reverted_by_the_next_run_of_any_kind(
    store: Store,
) -> None:
    _seed(store)
    before = _state(store)
    begin_dream(store, "dream-killed", "dream", {})
    _dream_writes(store, "dream-killed")
    store.backend.execute(
        "UPDATE runs SET pid = :p, host = :h WHERE id = 'dream-killed'",
        {"p": _dead_pid(), "h": HOST},
    )
    store.begin_run("lint")
    assert _state(store) == before
    run = store.run("dream-killed")
    assert run is not None and run["status"] == "reverted"
    assert run["error"].startswith("abandoned: its process")


def test_a_killed_ingest_is_closed_when_a_run_of_another_kind_begins(store: Store) -> None:
    run = store.begin_run("ingest", {"source": "x.jsonl"})
    store.backend.execute("UPDATE runs SET pid = :p WHERE id = :id", {"p": _dead_pid(), "id": run})
    store.begin_run("dream")
    closed = store.run(run)
    assert closed is not None and closed["status"] == "failed"
    assert closed["finished_at"] is not None and closed["error"].startswith("abandoned:")


def test_a_run_alive_is_left_running(store: Store) -> None:
    run = store.begin_run("ingest")
    store.begin_run("lint")
    assert store.run(run)["status"] == "running"  # type: ignore[index]
