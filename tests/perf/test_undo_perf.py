"""Benchmarks of undo on a ≥100k-block store.

Run: ``.venv/bin/pytest tests/perf -m perf -s -k undo``.

* A run that changed 100k rows, undone and re-done. The baseline in the same run is the
  row-by-row undo memvault had before (one SELECT, one UPDATE and one audit INSERT per row),
  timed on a sample and extrapolated per row; the figure printed is the ratio.
* The undo of the ingest that filled the store (every row it created removed, each audited
  with its image), against the undo memvault had before this one (every first image and every
  current row read into this process, the audit rows encoded and appended from here), each on
  its own copy of the same store, each in its own process (its CPU and peak RSS its own); the
  figures printed are the ratios. The size is ``MEMVAULT_UNDO_SESSIONS`` (default 10,100
  sessions: about 104k blocks, 785k audit rows).
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import memvault
from memvault.store import Store, undo_run
from memvault.store.audit import decode_images, images
from memvault.store.backends import ident
from memvault.store.tables import AUDITED_TABLES
from tests.perf.dream_data import build_scaled_store
from tests.perf.test_scale import _setting  # the shell's setting (conftest drops MEMVAULT_*)

SESSIONS, SEED = 10_100, 11
BASELINE_SAMPLE = 2_000
INGEST_SESSIONS = int(_setting("MEMVAULT_UNDO_SESSIONS") or SESSIONS)
_REPO = Path(__file__).resolve().parents[2]


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


_PREVIOUS_FIRST_IMAGES_SQL = """
SELECT a.target_table, a.target_id, a.before_image AS image
FROM audit_log a
JOIN (SELECT target_table, target_id, min(id) AS first_change
      FROM audit_log WHERE run_id = :r GROUP BY target_table, target_id) f
  ON a.id = f.first_change
ORDER BY a.target_table, a.target_id
"""


def _previous_undo(store: Store, run_id: str) -> int:
    """The undo memvault had before (the baseline): the first images and the rows as they
    are now read into this process, the rows the run created deleted by an id list, the audit
    rows (with those images) appended from here, in one transaction."""
    first = store.fetch_df(_PREVIOUS_FIRST_IMAGES_SQL, {"r": run_id})
    first = first.with_columns(pl.col("image").cast(pl.Utf8))
    backend, total = store.backend, 0
    with store.mutation(f"{run_id}-previous-undo", "undo") as m:
        for (table,), targets in first.group_by(["target_table"], maintain_order=True):
            name, ids = ident(str(table)), targets["target_id"].to_list()
            current = store.conform(
                str(table),
                backend.fetch_df(
                    f"SELECT * FROM {name} WHERE id IN (SELECT unnest(CAST(:ids AS TEXT[])))",
                    {"ids": ids},
                ),
            )
            now = dict(zip(current["id"].to_list(), images(current).to_list(), strict=True))
            gone = targets.filter(pl.col("image").is_null())["target_id"].to_list()
            back = targets.filter(pl.col("image").is_not_null())
            if gone:
                backend.execute(
                    f"DELETE FROM {name} WHERE id IN (SELECT unnest(CAST(:ids AS TEXT[])))",
                    {"ids": gone},
                )
                removed = [i for i in gone if i in now]
                m._log(str(table), "undo-remove", removed, [now[i] for i in removed],
                       [None] * len(removed), "previous undo")  # fmt: skip
            if back.height:
                frame = decode_images(store, str(table), back["image"])
                backend.insert_df(str(table), frame, on_conflict="replace")
                restored = frame["id"].to_list()
                m._log(str(table), "undo-restore", restored, [now.get(i) for i in restored],
                       back["image"].to_list(), "previous undo")  # fmt: skip
            total += len(gone) + back.height
    return total


def _peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` (``ru_maxrss`` keeps the parent's peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _undo_the_ingest(how: str, path: str) -> dict[str, Any]:
    """In a process of its own: undo the store's ingest ``how`` ("previous" or "now"), then
    checkpoint (what a DuckDB store writes to its file is part of the work)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0, started = usage.ru_utime + usage.ru_stime, time.perf_counter()
    with memvault.open(f"duckdb://{path}") as store:
        [(run_id,)] = store.fetch("SELECT id FROM runs WHERE kind = 'ingest'")
        rows = _previous_undo(store, run_id) if how == "previous" else undo_run(store, run_id).total
        store.backend.execute("CHECKPOINT")
        left = store.counts(AUDITED_TABLES)
        audited = store.fetch(
            "SELECT action, count(*) FROM audit_log WHERE run_id <> :r GROUP BY 1 ORDER BY 1",
            {"r": run_id},
        )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "rows": rows,
        "cpu_s": usage.ru_utime + usage.ru_stime - cpu0,
        "wall_s": time.perf_counter() - started,
        "rss_mb": _peak_rss_mb(),
        "left": left,
        "audited": [list(r) for r in audited],
    }


@pytest.mark.perf
@pytest.mark.timeout(7200)
def test_undo_of_a_large_ingest_against_the_previous_undo(tmp_path: Path) -> None:
    built = tmp_path / "built.duckdb"
    build_scaled_store(f"duckdb://{built}", sessions=INGEST_SESSIONS, seed=SEED, holdout=0)
    with memvault.open(f"duckdb://{built}") as store:
        blocks = store.counts(("blocks",))["blocks"]
    result = {}
    for how in ("previous", "now"):
        copy = tmp_path / f"{how}.duckdb"
        shutil.copyfile(built, copy)
        child = subprocess.run(
            [sys.executable, "-m", "tests.perf.test_undo_perf", how, str(copy)],
            cwd=_REPO, check=True, capture_output=True, text=True,
        )  # fmt: skip
        result[how] = json.loads(child.stdout.strip().splitlines()[-1])
        copy.unlink()
    previous, now = result["previous"], result["now"]
    assert now["rows"] == previous["rows"] > 700_000 * INGEST_SESSIONS // SESSIONS
    assert now["left"] == previous["left"], (now["left"], previous["left"])
    assert now["audited"] == previous["audited"]
    print(
        f"\nundo of the ingest of {blocks:,} blocks ({now['rows']:,} rows removed, each audited): "
        f"now {now['cpu_s']:.1f} s CPU / {now['wall_s']:.1f} s wall / {now['rss_mb']:,.0f} MB; "
        f"previous {previous['cpu_s']:.1f} s CPU / {previous['wall_s']:.1f} s wall / "
        f"{previous['rss_mb']:,.0f} MB; ratio previous/now: CPU "
        f"{previous['cpu_s'] / now['cpu_s']:.2f}×, wall {previous['wall_s'] / now['wall_s']:.2f}×, "
        f"peak RSS {previous['rss_mb'] / now['rss_mb']:.2f}×"
    )
    assert now["cpu_s"] < previous["cpu_s"] and now["rss_mb"] < previous["rss_mb"]


if __name__ == "__main__":
    print(json.dumps(_undo_the_ingest(sys.argv[1], sys.argv[2])))
