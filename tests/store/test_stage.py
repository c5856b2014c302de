"""The stage contract's run bookkeeping, on both backends: a run row never stays open."""

from __future__ import annotations

import pytest

from memvault.stage import Figures, Stage, StageFailed, timed, tracked_run
from memvault.store import Store


def test_a_stage_that_raises_leaves_its_run_failed(store: Store) -> None:
    with (
        pytest.raises(RuntimeError, match="disk on fire"),
        tracked_run(store, "gaps", {"why": "test"}) as run,
    ):
        run.stats["seen"] = 3
        raise RuntimeError("disk on fire")
    row = store.run(run.id)
    assert row is not None
    assert row["status"] == "failed" and row["finished_at"] is not None
    assert row["error"] == "RuntimeError: disk on fire"
    assert row["stats"] == {"seen": 3}  # what it had done by then is kept


def test_a_stage_that_ends_finishes_its_run_with_its_figures(store: Store) -> None:
    with tracked_run(store, "gaps") as run:
        run.stats = {"opened": 2}
    row = store.run(run.id)
    assert row is not None and row["status"] == "succeeded" and row["stats"] == {"opened": 2}
    assert not store.fetch("SELECT id FROM runs WHERE status = 'running'")


def test_a_continued_run_keeps_its_id(store: Store) -> None:
    with pytest.raises(StageFailed), tracked_run(store, "lint", run_id="lint-1") as first:
        raise StageFailed("layer 3 failed", {"done": 2})
    with tracked_run(store, "lint", run_id="lint-1") as again:
        pass
    row = store.run("lint-1")
    assert first.id == again.id == "lint-1" and row is not None and row["status"] == "succeeded"
    assert row["error"] is None


def test_a_stage_is_timed_and_reports_its_figures() -> None:
    report, seconds = timed(Stage("s", lambda: Figures({"n": 1}), writes=("blocks",)))
    assert report.metadata() == {"n": 1} and 0 <= seconds < 5
