"""Work that begins a run and stops half-way leaves the run failed, never ``running``: the
garden run whose survey raises, the demo that stops before its night, the lint whose
grounding rules cannot be read, on both backends.

Each test makes the work fail right after its run row was begun and reads the row back.
"""

from __future__ import annotations

from typing import Any

import pytest

import memvault
from memvault.gardener.ledger import Ledger
from memvault.gardener.run import Gardener
from memvault.judge import HeuristicJudge
from memvault.store import Store
from memvault.store.tracked import begun_run
from tests.garden_support import adapter


def _only_run(store: Store, kind: str) -> dict[str, Any]:
    rows = store.fetch("SELECT id FROM runs WHERE kind = :k", {"k": kind})
    assert len(rows) == 1, rows
    found = store.run(rows[0][0])
    assert found is not None
    return found


def test_a_begun_run_is_failed_when_its_beginning_raises_and_left_to_its_steps_else(
    store: Store,
) -> None:
    with begun_run(store, "garden", {"why": "test"}) as carried:
        pass
    row = store.run(carried.id)
    assert row is not None and row["status"] == "running" and row["finished_at"] is None
    store.finish_run(carried.id, "succeeded")
    with pytest.raises(RuntimeError, match="survey broke"), begun_run(store, "lint") as broken:
        store.backend.execute(
            "UPDATE runs SET stats = :s WHERE id = :id", {"s": '{"resume": 4}', "id": broken.id}
        )
        broken.stats["seen"] = 2
        raise RuntimeError("survey broke")
    row = store.run(broken.id)
    assert row is not None and row["status"] == "failed" and row["finished_at"] is not None
    assert row["error"] == "RuntimeError: survey broke"
    assert row["stats"] == {"resume": 4, "seen": 2}  # the saved resume point is kept


def test_the_works_error_is_raised_when_the_store_cannot_record_the_failure(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fatal store error (DuckDB invalidates the database after one) also breaks marking the
    run failed: the user must see the work's error, not the bookkeeping's."""

    def invalidated(*_: object, **__: object) -> None:
        raise OSError("database has been invalidated")

    with (
        pytest.raises(MemoryError, match="commit ran out") as raised,
        begun_run(store, "ingest") as row,
    ):
        monkeypatch.setattr(store, "finish_run", invalidated)
        raise MemoryError("commit ran out")
    assert raised.value.__notes__ == [
        f"run {row.id} could not be marked failed: database has been invalidated"
    ]


def test_a_garden_run_whose_survey_raises_is_failed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Gardener) -> None:
        raise RuntimeError("the tended store went away")

    monkeypatch.setattr(Gardener, "_survey_all", broken)
    with pytest.raises(RuntimeError, match="went away"):
        Gardener.start(Ledger(store), [adapter(store)], HeuristicJudge(), dagster_run_id="d-1")
    row = _only_run(store, "garden")
    assert row["status"] == "failed" and row["finished_at"] is not None
    assert row["error"] == "RuntimeError: the tended store went away"
    assert not store.fetch("SELECT id FROM runs WHERE status = 'running'")


def test_a_demo_that_stops_before_its_night_leaves_its_run_failed(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from pipelines.cli import demo

    def no_history(config: Any) -> Any:
        raise OSError("no space left for the history")

    monkeypatch.setattr(demo, "generate", no_history)
    with pytest.raises(OSError, match="no space left"):
        demo.run_demo(store_url, sessions=2, days=2, seed=1, console=Console(quiet=True))
    with memvault.open(store_url) as store:
        row = _only_run(store, "demo")
    assert row["status"] == "failed" and row["finished_at"] is not None
    assert row["error"] == "OSError: no space left for the history"


def test_a_garden_run_whose_survey_failed_surveys_again_when_re_executed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.gardener.stages import GardenTrack
    from memvault.gardener.state import GardenConfig

    survey_all = Gardener._survey_all
    calls: list[int] = []

    def fails_once(self: Gardener) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the tended store went away")
        survey_all(self)

    monkeypatch.setattr(Gardener, "_survey_all", fails_once)

    def track() -> GardenTrack:
        return GardenTrack(Ledger(store), [adapter(store)], HeuristicJudge(), GardenConfig(), "d-2")

    with pytest.raises(RuntimeError, match="went away"):
        track().survey()
    failed = _only_run(store, "garden")
    assert failed["status"] == "failed"
    again = track()  # a re-execution of the same Dagster run
    again.survey()
    row = _only_run(store, "garden")
    assert again.run_id == failed["id"] and row["status"] == "running" and row["error"] is None
    assert row["stats"]["run_id"] == failed["id"]  # its state is saved now: the phases go on


def test_a_lint_whose_grounding_fails_to_load_leaves_its_run_failed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.embed import make_embedder
    from memvault.lint import run as lint_run

    def unreadable() -> Any:
        raise OSError("the grounding rules are unreadable")

    monkeypatch.setattr(lint_run.Grounding, "load", unreadable)
    with pytest.raises(OSError, match="unreadable"):
        lint_run.lint_store(store, HeuristicJudge(), make_embedder("hashing"), run_id="lint-x")
    row = _only_run(store, "lint")
    assert row["status"] == "failed" and row["finished_at"] is not None
    assert row["error"] == "OSError: the grounding rules are unreadable"
    assert not store.fetch("SELECT id FROM runs WHERE status = 'running'")
