"""Benchmark of undo on a ≥100k-block store: a run that changed 100k rows, undone and re-done.

Run: ``.venv/bin/pytest tests/perf -m perf -s -k undo``. The baseline in the same run is the
row-by-row undo memvault had before (one SELECT, one UPDATE and one audit INSERT per row),
timed on a sample and extrapolated per row; the figure printed is the ratio.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest

import memvault
from memvault.store import Store, undo_run
from memvault.store.audit import decode_images
from tests.perf.dream_data import build_scaled_store

SESSIONS, SEED = 10_100, 11
BASELINE_SAMPLE = 2_000


def _touch_every_block(store: Store, run_id: str) -> int:
    ids = [r[0] for r in store.fetch("SELECT id FROM blocks ORDER BY id")]
    with store.mutation(run_id, "bench") as m:
        return m.update_many(
            "blocks",
            pl.DataFrame({"id": ids, "importance": [0.123] * len(ids)}),
            action="update",
            reason="benchmark",
        )


def _row_by_row_undo(store: Store, run_id: str, limit: int) -> float:
    """The old undo: each row's before-image restored on its own (the baseline)."""
    log = store.fetch_df(
        "SELECT target_table, target_id, before_image FROM audit_log WHERE run_id = :r "
        "ORDER BY id DESC LIMIT :n",
        {"r": run_id, "n": limit},
    )
    started = time.perf_counter()
    with store.mutation(f"{run_id}-baseline", "undo") as m:
        for table, target, before in log.iter_rows():
            frame = decode_images(store, table, pl.Series([before]))
            current = store.get_row(table, target)
            store.backend.insert_df(table, frame, on_conflict="replace")
            m._log(table, "undo-restore", [target], [json.dumps(current, default=str)],
                   [before], "baseline")  # fmt: skip
    return time.perf_counter() - started


@pytest.mark.perf
@pytest.mark.timeout(3600)
def test_undo_of_a_100k_row_run(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'undo.duckdb'}"
    build_scaled_store(url, sessions=SESSIONS, seed=SEED, holdout=0)
    with memvault.open(url) as store:
        run = store.begin_run("bench")
        rows = _touch_every_block(store, run)
        store.finish_run(run, "succeeded")
        assert rows >= 100_000, rows
        baseline = _row_by_row_undo(store, run, BASELINE_SAMPLE) / BASELINE_SAMPLE

        started = time.perf_counter()
        report = undo_run(store, run)
        undo_s = time.perf_counter() - started
        assert report.restored["blocks"] == rows
        left = store.fetch("SELECT count(*) FROM blocks WHERE importance = 0.123")[0][0]
        assert left == 0

        started = time.perf_counter()
        undo_run(store, report.undo_run_id)
        redo_s = time.perf_counter() - started
        # (the baseline had already put its sample back before the undo)
        redone = store.fetch("SELECT count(*) FROM blocks WHERE importance = 0.123")[0][0]
        assert redone == rows - BASELINE_SAMPLE
    print(
        f"\nundo of a {rows:,}-row run: {undo_s:.1f} s; undo of that undo: {redo_s:.1f} s; "
        f"row-by-row baseline {baseline * 1000:.2f} ms/row → {baseline * rows:.0f} s "
        f"extrapolated ({baseline * rows / undo_s:.0f}× slower)"
    )
    assert undo_s <= 30 and redo_s <= 30
