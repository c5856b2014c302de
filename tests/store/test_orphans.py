"""Orphan entities: archived by the dream's prune, revived when referred to again."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from memvault.dream import DreamConfig, prune_orphans
from memvault.store import Store, undo_run
from tests.store.temporal_history import History

YOUNG_IS_FINE = DreamConfig(orphan_grace_days=0)


def _status(store: Store, entity_id: str) -> str:
    row = store.get_row("entities", entity_id)
    assert row is not None
    return row["status"]


def _history_with_a_loner(store: Store, tmp_path: Path) -> History:
    h = History()
    h.entity("ada", "Ada Lovelace")
    h.entity("babbage", "Charles Babbage")  # nothing refers to him yet
    h.fact("t1", "ada", "lives_in", "London", valid="2024-01-01", created="2024-01-01")
    h.ingest(store, tmp_path)
    return h


def test_an_archived_orphan_comes_back_when_a_later_session_mentions_it(
    store: Store, tmp_path: Path
) -> None:
    h = _history_with_a_loner(store, tmp_path)
    pruned = prune_orphans(store, "dream-orphans-1", YOUNG_IS_FINE)
    assert pruned.archived == 1 and _status(store, "babbage") == "archived"

    h.session("ses_later", "2024-06-01")
    h.records.append(
        {"type": "mention", "id": "men_later", "entity": "babbage", "session_id": "ses_later",
         "mentioned_at": "2024-06-01T10:00:00Z"}
    )  # fmt: skip
    h.ingest(store, tmp_path)
    assert _status(store, "babbage") == "active"
    [revival] = store.fetch(
        "SELECT action, phase FROM audit_log WHERE target_table = 'entities' "
        "AND target_id = 'babbage' ORDER BY id DESC LIMIT 1"
    )
    assert revival == ("revive", "ingest")
    # Referred to now, so the next prune leaves it alone.
    assert prune_orphans(store, "dream-orphans-2", YOUNG_IS_FINE).archived == 0


def test_a_fact_written_outside_ingest_is_revived_by_the_next_prune(
    store: Store, tmp_path: Path
) -> None:
    _history_with_a_loner(store, tmp_path)
    prune_orphans(store, "dream-orphans-1", YOUNG_IS_FINE)
    fact = {"id": "t2", "subject_id": "babbage", "predicate": "works_on", "object": "engines",
            "created_at": dt.datetime(2024, 7, 1), "status": "active", "confidence": 0.9}  # fmt: skip
    with store.mutation("import-by-hand", "manual") as m:
        m.insert("triples", pl.DataFrame([fact]))
    assert _status(store, "babbage") == "archived"
    run = store.begin_run("dream")
    result = prune_orphans(store, run, YOUNG_IS_FINE)
    assert result.revived == 1 and result.archived == 0
    assert _status(store, "babbage") == "active"
    undo_run(store, run)  # the revival is audited like any change
    assert _status(store, "babbage") == "archived"


def test_an_entity_archived_for_another_reason_stays_archived(store: Store, tmp_path: Path) -> None:
    h = _history_with_a_loner(store, tmp_path)
    with store.mutation("curator-1", "manual") as m:
        m.update("entities", "babbage", {"status": "archived"}, action="archive", reason="by hand")
    h.session("ses_later", "2024-06-01")
    h.records.append(
        {"type": "mention", "id": "men_later", "entity": "babbage", "session_id": "ses_later",
         "mentioned_at": "2024-06-01T10:00:00Z"}
    )  # fmt: skip
    h.ingest(store, tmp_path)
    assert _status(store, "babbage") == "archived"
    assert prune_orphans(store, "dream-orphans-1", YOUNG_IS_FINE).revived == 0


def test_the_edges_at_an_archived_orphan_are_archived_and_only_those(
    store: Store, tmp_path: Path
) -> None:
    _history_with_a_loner(store, tmp_path)
    weights = dict.fromkeys(
        ("co_occurrence", "session_overlap", "adamic_adar", "type_affinity",
         "semantic_similarity", "composite_weight"), 0.1,
    )  # fmt: skip
    at = dt.datetime(2024, 2, 1)
    edges = [
        {"id": "e_pending", "source_id": "ada", "target_id": "babbage", "status": "pending"},
        {"id": "e_gone", "source_id": "babbage", "target_id": "ada", "status": "archived"},
    ]
    with store.mutation("edges-by-hand", "manual") as m:
        m.insert("edges", pl.DataFrame([{**e, **weights, "updated_at": at} for e in edges]))
    pruned = prune_orphans(store, "dream-orphans-edges", YOUNG_IS_FINE)
    assert pruned.archived == 1 and pruned.edges_archived == 1
    assert _status(store, "babbage") == "archived" and _status(store, "ada") == "active"
    assert store.fetch("SELECT id, status FROM edges ORDER BY id") == [
        ("e_gone", "archived"),
        ("e_pending", "archived"),
    ]
    [(archived_by,)] = store.fetch(
        "SELECT run_id FROM audit_log WHERE target_table = 'edges' AND action = 'archive'"
    )
    assert archived_by == "dream-orphans-edges"
