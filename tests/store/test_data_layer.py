"""The data layer's named queries answer the same on both backends (the command line and the
wiring read the store only through them)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from memvault.store import Store
from memvault.store.queries.audit import changes_by_run
from memvault.store.queries.blocks import (
    active_blocks_by_tier,
    digested_block_count,
    missing_blocks,
    tiers_of,
)
from memvault.store.queries.runs import has_run_of_kind, latest_runs
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
