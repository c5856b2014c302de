"""The data layer's named queries on both backends: what each answers, for ids it knows and
for ids it does not (the command line, the wiring and the core read the store through them)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from memvault.store import Store
from memvault.store.queries.audit import (
    audit_count,
    audited_targets,
    changes_by_run,
    last_audit_id,
)
from memvault.store.queries.blocks import (
    active_block_ids,
    active_blocks_by_tier,
    block_ages,
    block_status,
    digested_block_count,
    existing_blocks,
    inactive_block_ids,
    missing_blocks,
    tiers_of,
)
from memvault.store.queries.entities import active_entities, entity_labels, entity_labels_of
from memvault.store.queries.runs import has_run_of_kind, latest_runs
from memvault.store.queries.triples import active_triple_ids, triples_by_id
from tests.helpers import TEST_NOW

T0 = TEST_NOW - dt.timedelta(days=3)


def _blocks(tiers: dict[str, str], status: str = "active") -> pl.DataFrame:
    ids = list(tiers)
    return pl.DataFrame(
        {
            "id": ids,
            "kind": ["memory"] * len(ids),
            "text": [f"memory {i}" for i in ids],
            "tier": [tiers[i] for i in ids],
            "status": [status] * len(ids),
            "created_at": [T0] * len(ids),
            "updated_at": [T0] * len(ids),
        }
    )


def test_block_queries_count_tiers_and_find_ids(store: Store) -> None:
    run = store.begin_run("test")
    with store.mutation(run, "seed") as m:
        m.insert("blocks", _blocks({"b1": "hot", "b2": "hot", "b3": "cold"}))
        m.insert("blocks", _blocks({"b4": "cold"}, status="superseded"))
    store.finish_run(run, "succeeded")

    assert active_blocks_by_tier(store) == {"hot": 2, "cold": 1}, "only active blocks count"
    assert tiers_of(store, ["b1", "b4", "nope"]) == {"b1": "hot", "b4": "cold"}
    assert missing_blocks(store, ["nope", "b2", "gone", "b4"]) == ["nope", "gone"]
    assert digested_block_count(store) == 0
    assert existing_blocks(store, ["b4", "nope"]) == {"b4"}
    assert (block_status(store, "b1"), block_status(store, "b4")) == ("active", "superseded")
    assert block_status(store, "nope") is None
    assert active_block_ids(store) == {"b1", "b2", "b3"} and inactive_block_ids(store) == {"b4"}
    assert sorted(block_ages(store)["block_id"]) == ["b1", "b2", "b3"], "active ones by default"
    assert block_ages(store, ["b4"])["block_id"].to_list() == ["b4"]
    assert block_ages(store, []).is_empty()
    assert changes_by_run(store) == {run: 4}


def test_run_queries_newest_first_and_by_kind(store: Store) -> None:
    assert not has_run_of_kind(store, "demo")
    for i, kind in enumerate(("ingest", "demo", "ingest")):
        store.record_run(f"r{i}", kind, T0 + dt.timedelta(hours=i))
    assert has_run_of_kind(store, "demo")
    assert latest_runs(store, 2)["id"].to_list() == ["r2", "r1"]
    assert latest_runs(store, 5, "ingest")["id"].to_list() == ["r2", "r0"]
    assert latest_runs(store, 1).columns == [
        "id",
        "kind",
        "status",
        "started_at",
        "finished_at",
        "error",
    ]


def _entities(rows: dict[str, tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": list(rows),
            "name": [n for n, _ in rows.values()],
            "canonical_name": [n.casefold() for n, _ in rows.values()],
            "entity_type": ["person"] * len(rows),
            "status": [s for _, s in rows.values()],
            "created_at": [T0] * len(rows),
        }
    )


def _triples(rows: dict[str, str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": list(rows),
            "subject_id": ["e1"] * len(rows),
            "predicate": ["works_at"] * len(rows),
            "object": [f"Org {i}" for i in rows],
            "status": list(rows.values()),
            "created_at": [T0] * len(rows),
        }
    )


def test_entity_and_fact_queries_keep_merged_labels_and_filter_status(store: Store) -> None:
    run = store.begin_run("test")
    with store.mutation(run, "seed") as m:
        m.insert("entities", _entities({"e1": ("Ada", "active"), "e2": ("Bob", "merged")}))
        m.insert("triples", _triples({"t1": "active", "t2": "superseded"}))
    store.finish_run(run, "succeeded")

    assert entity_labels(store) == {"e1": ("Ada", "person"), "e2": ("Bob", "person")}
    assert entity_labels_of(store, ["e2", "nope"]) == {"e2": ("Bob", "person")}
    assert entity_labels_of(store, ["e1", "e2"], active_only=True) == {"e1": ("Ada", "person")}
    assert active_entities(store)["id"].to_list() == ["e1"]

    facts = triples_by_id(store, ["t2", "t1", "nope"], ["id", "status"]).sort("id")
    assert facts.rows() == [("t1", "active"), ("t2", "superseded")]
    assert triples_by_id(store, [], "id, status").height == 0, "no ids: no rows, on PostgreSQL too"
    assert active_triple_ids(store, ["t1", "t2"]) == {"t1"}

    marks = last_audit_id(store), last_audit_id(store, "triples"), last_audit_id(store, "edges")
    assert marks[0] is not None and marks[1] == marks[0] and marks[2] is None
    assert last_audit_id(store, "triples", after=marks[1]) is None, "nothing written since"
    run2 = store.begin_run("test")
    with store.mutation(run2, "seed") as m:
        m.insert("entities", _entities({"e3": ("Cy", "active")}))
    store.finish_run(run2, "succeeded")
    assert last_audit_id(store, "triples", after=marks[1]) is None, "no fact written since"
    newest = last_audit_id(store)
    assert newest is not None and last_audit_id(store, after=marks[0]) == newest > marks[0]
    assert audit_count(store, run) == 4 and audit_count(store, run, "other") == 0
    assert audited_targets(store, run) == {"e1", "e2", "t1", "t2"}
