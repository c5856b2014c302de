"""The search index reads what changed by change, not by timestamp ties: after a bulk write
that stamps a thousand blocks with one time (tiering's tiered_at), later writes cost no
rebuild and re-read only themselves; a block stamped with the same time, or an earlier one,
whose write lands after the index read is still found. On DuckDB and PostgreSQL."""

from __future__ import annotations

import datetime as dt

import polars as pl

from memvault.embed import HashingEmbedder
from memvault.ingest import Numbered, ingest_records
from memvault.recall.recaller import Recaller
from memvault.records import BlockRecord, SessionRecord
from memvault.store import Store
from tests.helpers import TEST_NOW

#: More blocks than the rebuild threshold (a thousand, or a fifth of the store) in one tie.
BULK = 1_200
T0 = TEST_NOW - dt.timedelta(days=30)


def _write(store: Store, texts: list[str], at: dt.datetime, session: str = "s-bulk") -> list[str]:
    records = [SessionRecord(id=session, started_at=at - dt.timedelta(days=1))]
    records += [
        BlockRecord(session_id=session, text=t, created_at=at + dt.timedelta(seconds=k))
        for k, t in enumerate(texts)
    ]
    ingest_records(store, [Numbered(k, r) for k, r in enumerate(records)], source="test")
    return [str(r.id) for r in records[1:]]  # type: ignore[attr-defined]


def _recaller() -> Recaller:
    return Recaller(HashingEmbedder(), refresh_seconds=0)


def test_a_bulk_write_with_one_time_is_read_once_and_later_writes_cost_no_rebuild(
    store: Store,
) -> None:
    ids = _write(store, [f"note {k} about the orchard ledger {k * 7}" for k in range(BULK)], T0)
    recaller = _recaller()
    index = recaller.ready(store)
    assert index.main.size == BULK and index.rebuilds == 0
    tiered_at = TEST_NOW - dt.timedelta(hours=1)
    with store.mutation("test-tiering", "tiering") as m:  # one stamp on every block, as tiering
        m.update_many(
            "blocks",
            pl.DataFrame({"id": ids, "tier": ["warm"] * BULK, "tiered_at": [tiered_at] * BULK}),
            action="demote",
        )
    index = recaller.ready(store)
    assert index.rebuilds == 1  # a thousand blocks changed: rebuilt, once
    read = index.stats.get("changed_read", 0)
    for k in range(5):  # remember, then recall: each refresh reads the new block only
        [new] = _write(store, [f"Ada likes the Kaffeehaus number {k}"], TEST_NOW - dt.timedelta(minutes=30 - k), f"s{k}")  # fmt: skip
        index = recaller.ready(store)
        found = recaller.search(store, f"Kaffeehaus number {k}", [], 1)[0]
        assert found[0].block_id == new
    assert index.rebuilds == 1, "a write after the bulk one rebuilt the index"
    assert index.stats["changed_read"] - read == 5


def test_a_row_stamped_at_the_latest_time_or_before_it_but_written_later_is_found(
    store: Store,
) -> None:
    _write(store, [f"entry {k} of the harvest log" for k in range(20)], T0)
    recaller = _recaller()
    recaller.ready(store)
    latest = store.fetch("SELECT max(updated_at) FROM blocks")[0][0]
    # Written after the index read, stamped with the very time it read last (a transaction
    # that committed late), and one stamped a day earlier still.
    [tie] = _write(store, ["the quince tree was planted by the north wall"], latest, "s-tie")
    store.backend.execute(
        "UPDATE blocks SET created_at = :t, updated_at = :t WHERE id = :id",
        {"t": latest, "id": tie},
    )
    [early] = _write(store, ["the medlar tree needs a frost first"], T0 - dt.timedelta(days=1), "s-early")  # fmt: skip
    recaller.ready(store)
    assert recaller.search(store, "quince tree north wall", [], 1)[0][0].block_id == tie
    assert recaller.search(store, "medlar tree frost", [], 1)[0][0].block_id == early
    assert recaller.index is not None and recaller.index.rebuilds == 0
