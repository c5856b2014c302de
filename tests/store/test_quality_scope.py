"""A table's expectations on the rows one run changed: a night checks what it wrote, not the
whole store, and still catches a bad row it wrote (both backends)."""

from __future__ import annotations

import polars as pl

from memvault.quality import validate_table
from memvault.store import Store
from tests.helpers import TEST_NOW


def _edges(run_id: str, ids: list[str], weight: float) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": ids,
            "source_id": [f"{i}-a" for i in ids],
            "target_id": [f"{i}-b" for i in ids],
            "composite_weight": [weight] * len(ids),
            "status": ["connected"] * len(ids),
            "updated_at": [TEST_NOW.replace(tzinfo=None)] * len(ids),
        }
    )


def _write(store: Store, run_id: str, frame: pl.DataFrame) -> None:
    store.begin_run("dream", {}, run_id=run_id)
    with store.mutation(run_id, "dream_signal") as m:
        m.insert("edges", frame)
    store.finish_run(run_id, "succeeded")


def test_the_rows_a_run_changed_are_checked_and_only_those(store: Store) -> None:
    _write(store, "dream-full", _edges("dream-full", [f"e{k}" for k in range(30)], 0.5))
    _write(store, "dream-bad", _edges("dream-bad", ["x1", "x2"], -1.0))  # a negative weight
    _write(store, "dream-good", _edges("dream-good", ["y1"], 0.7))

    every = validate_table(store, "edges")
    assert not every.success and every.rows == 33
    bad = validate_table(store, "edges", changed_by="dream-bad")
    assert not bad.success and bad.rows == 2
    assert bad.failed == ["expect_column_values_to_be_between(composite_weight)"]
    good = validate_table(store, "edges", changed_by="dream-good")
    assert good.success and good.rows == 1
    nothing = validate_table(store, "edges", changed_by="dream-that-wrote-nothing")
    assert nothing.success and nothing.rows == 0 and nothing.evaluated == 0
