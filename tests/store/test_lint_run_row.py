"""A lint's run row, on DuckDB and PostgreSQL: a lint of only some of its layers (a subset of
the lint step, as the UI can select) finishes its run, and does not move the mark the
semantic layer reads new facts from."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.embed import make_embedder
from memvault.judge import HeuristicJudge
from memvault.lint.run import lint_store
from memvault.lint.stages import STRUCTURE, LintTrack
from memvault.review import ReviewPolicy
from memvault.store import Store
from tests.store.temporal_history import History


def _facts(store: Store, tmp_path: Path) -> None:
    h = History()
    h.entity("ada", "Ada")
    h.fact("f1", "ada", "uses", "Vim", created="2025-01-02", text="Ada uses Vim.")
    h.ingest(store, tmp_path)


def _track(store: Store, run_id: str) -> LintTrack:
    return LintTrack(
        store,
        run_id,
        judge=HeuristicJudge,
        embedder=lambda: make_embedder("hashing"),
        policy=ReviewPolicy,
        similarity=0.6,
        pairs_per_100=5,
        warn=lambda _: None,
    )


def _status(store: Store, run_id: str) -> str:
    row = store.run(run_id)
    assert row is not None
    return str(row["status"])


def test_a_lint_of_only_its_structure_layer_finishes_its_run(store: Store, tmp_path: Path) -> None:
    _facts(store, tmp_path)
    with _track(store, "lint-part") as track:
        [structure] = [s for s in track.stages() if s.name == STRUCTURE]
        assert structure.run().metadata()["findings"] >= 0
        assert _status(store, "lint-part") == "running"
    assert _status(store, "lint-part") == "succeeded"
    assert not store.fetch("SELECT id FROM runs WHERE kind = 'lint' AND status = 'running'")


def test_a_partial_lint_leaves_the_semantic_layer_reading_from_the_last_full_lint(
    store: Store, tmp_path: Path
) -> None:
    _facts(store, tmp_path)
    with _track(store, "lint-part"):
        pass  # no layer selected: the run ends, the semantic layer never ran
    assert _track(store, "lint-next").since is None, "no lint has read the facts yet"
    full = lint_store(store, HeuristicJudge(), make_embedder("hashing"), run_id="lint-full")
    started = store.run(full.run_id)["started_at"]  # type: ignore[index]
    with _track(store, "lint-part-2"):
        pass
    assert _track(store, "lint-after").since == started


def test_a_lint_stopped_between_its_layers_is_failed_with_the_error(
    store: Store, tmp_path: Path
) -> None:
    _facts(store, tmp_path)
    with pytest.raises(KeyboardInterrupt), _track(store, "lint-stopped"):
        raise KeyboardInterrupt("stopped")
    row = store.run("lint-stopped")
    assert row is not None and row["status"] == "failed"
    assert row["error"] == "KeyboardInterrupt: stopped"


def test_a_lint_made_but_never_entered_begins_no_run(store: Store, tmp_path: Path) -> None:
    _facts(store, tmp_path)
    assert _track(store, "lint-unentered").since is None
    assert store.run("lint-unentered") is None
    assert not store.fetch("SELECT id FROM runs WHERE kind = 'lint' AND status = 'running'")
