"""Runs left "running" by a dead process are failed on the next start; one dream at a time."""

from __future__ import annotations

import subprocess

import pytest

from memvault.dream.exclusive import DreamInProgress, begin_dream
from memvault.store import Store
from memvault.store.liveness import HOST


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_second_dream_stops_while_the_first_is_alive(store: Store) -> None:
    begin_dream(store, "dream-first", "dream", {})
    with pytest.raises(
        DreamInProgress, match="another dream is running on this store: dream-first"
    ):
        begin_dream(store, "dream-second", "dream", {})
    assert store.get_row("runs", "dream-second") is None, "it stopped before writing anything"


def test_a_dream_whose_process_died_is_reverted_and_the_next_one_starts(store: Store) -> None:
    begin_dream(store, "dream-first", "dream", {})
    store.backend.execute(
        "UPDATE runs SET pid = :p, host = :h WHERE id = 'dream-first'",
        {"p": _dead_pid(), "h": HOST},
    )
    notes = begin_dream(store, "dream-second", "dream", {})
    assert len(notes) == 1 and "dream-first failed and was reverted" in notes[0]
    assert "is gone" in notes[0]
    first = store.run("dream-first")  # a dream is all or nothing: a dead one is reverted
    assert first is not None and first["status"] == "reverted"
    assert first["error"].startswith("abandoned: its process")
    assert store.run("dream-second")["status"] == "running"  # type: ignore[index]


def test_an_ingest_killed_earlier_is_failed_when_the_next_begins(store: Store) -> None:
    run = store.begin_run("ingest", {"source": "x.jsonl"})
    store.backend.execute("UPDATE runs SET pid = :p WHERE id = :id", {"p": _dead_pid(), "id": run})
    store.begin_run("ingest", {"source": "y.jsonl"})
    assert store.run(run)["status"] == "failed"  # type: ignore[index]
    # A run with no sign of life for too long counts as abandoned, wherever it ran.
    other = store.begin_run("undo", {})
    store.backend.execute(
        "UPDATE runs SET host = 'elsewhere', heartbeat_at = TIMESTAMP '2020-01-01 00:00:00' "
        "WHERE id = :id",
        {"id": other},
    )
    assert store.fail_abandoned_runs(("undo",)) and store.run(other)["status"] == "failed"  # type: ignore[index]
