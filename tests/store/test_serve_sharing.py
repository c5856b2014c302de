"""`memvault serve` shares the store: its writes wait in a durable queue and are applied
once, in order (a killed server's by the next one); a remembered memory has its vector at
once and the same text is one memory; on a DuckDB file the server lets go when another
process needs the file, answers from memory meanwhile (its own writes included) and takes
the file back afterwards. On DuckDB and PostgreSQL where the backend allows."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.serve.queue import WriteQueue
from memvault.serve.service import MemoryService
from memvault.store import Store, new_run_id
from tests.helpers import TEST_NOW
from tests.recall_support import fill

#: Times of the writes a server left, relative to the tests' day (never a fixed date: a date
#: after the tests' day would be a memory from the future).
DAYS_AGO = (TEST_NOW - dt.timedelta(days=4)).isoformat(timespec="seconds")
HOUR_AGO = (TEST_NOW - dt.timedelta(hours=1)).isoformat(timespec="seconds")

QUERY = "status of Quill"
COUNTED = ("blocks", "recall_log", "feedback", "runs", "embeddings")


@pytest.fixture
def filled(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    with Store.open(store_url) as store:
        fill(store, tmp_path)
    return store_url


def _serve(url: str, tmp_path: Path, **options: object) -> tuple[Store, MemoryService]:
    store = Store.open(url, detachable=True)
    queue = WriteQueue(tmp_path / "queue.jsonl")
    return store, MemoryService(store, queue=queue, **options)  # type: ignore[arg-type]


def _stop(store: Store, service: MemoryService) -> None:
    service.close()
    store.close()


def _counts(url: str) -> dict[str, int]:
    with Store.open(url) as store:
        return store.counts(COUNTED)


def test_a_remembered_memory_has_its_vector_at_once_and_the_same_text_is_one_memory(
    filled: str, tmp_path: Path
) -> None:
    store, service = _serve(filled, tmp_path)
    try:
        first = service.remember("Ada likes the Kaffeehaus Sperl best.", speaker="user")
        again = service.remember("  ada likes the KAFFEEHAUS   Sperl best. ", speaker="user")
        vector = store.fetch(
            "SELECT e.text_hash = md5(b.text) FROM embeddings e JOIN blocks b ON b.id = e.target_id "
            "WHERE e.target_id = :id AND e.model = :m",
            {"id": first["block_id"], "m": service.recaller.model},
        )
        found = service.recall("which coffee place does Ada like", limit=3)
    finally:
        _stop(store, service)
    assert first["written"] and first["embedded"] and vector == [(True,)]
    assert again["block_id"] == first["block_id"] and not again["written"]
    assert found["search_mode"] == "hybrid"
    assert found["results"][0]["block_id"] == first["block_id"]
    with Store.open(filled) as reopened:
        rows = reopened.fetch("SELECT count(*) FROM blocks WHERE text LIKE '%Kaffeehaus%'")
    assert rows == [(1,)]


def test_writes_a_killed_server_left_in_the_queue_are_applied_once_by_the_next(
    filled: str, tmp_path: Path
) -> None:
    store, service = _serve(filled, tmp_path)
    recall = service.recall(QUERY, limit=2)
    service.writer.flush()
    block = {"type": "block", "text": "The Quill launch moved to Zanzibar.", "created_at": DAYS_AGO, "id": "blk_left"}  # fmt: skip
    feedback = {"recall_id": recall["recall_id"], "verdict": "correct", "block_id": None, "note": None, "at": HOUR_AGO}  # fmt: skip
    _stop(store, service)
    before = _counts(filled)
    # What a server killed after its fsync and before applying leaves: two entries, a torn line.
    queue = WriteQueue(tmp_path / "queue.jsonl")
    queue.append("remember", new_run_id("ingest"), {"block_id": "blk_left", "lines": [block]})
    queue.append("feedback", new_run_id("feedback"), feedback)
    queue.close()
    lines = (tmp_path / "queue.jsonl").read_bytes()
    (tmp_path / "queue.jsonl").write_bytes(lines + b'{"seq": 3, "run_id": "ingest-x", "ki')
    for _ in range(2):  # the second start finds the entries again (a lost done mark): no twice
        (tmp_path / "queue.jsonl").write_bytes(lines)
        store, service = _serve(filled, tmp_path)
        _stop(store, service)
        after = _counts(filled)
        assert after["blocks"] - before["blocks"] == 1
        assert after["feedback"] - before["feedback"] == 1
        assert after["runs"] - before["runs"] == 2
    assert (tmp_path / "queue.jsonl").read_bytes() == b""  # all applied: emptied


def test_an_entry_the_store_refuses_later_is_set_aside_not_lost(
    filled: str, tmp_path: Path
) -> None:
    queue = WriteQueue(tmp_path / "queue.jsonl")
    args = {"recall_id": "recall-gone", "verdict": "correct", "block_id": None, "note": None, "at": HOUR_AGO}  # fmt: skip
    queue.append("feedback", new_run_id("feedback"), args)
    queue.close()
    store, service = _serve(filled, tmp_path)
    try:
        assert service.writer.queue.refused == 1
        remembered = service.remember("Nothing stops the queue after a refusal.")
        assert remembered["written"]
    finally:
        _stop(store, service)
    [kept] = (tmp_path / "queue.jsonl.refused").read_text().splitlines()
    assert json.loads(kept)["args"]["recall_id"] == "recall-gone"
    assert "no recall with id" in json.loads(kept)["refused"]


OTHER = """
import sys
from memvault.store import Store
with Store.open(sys.argv[1]) as store:
    store.backend.execute(
        "INSERT INTO sessions (id, source, started_at) VALUES ('s-night', 'night', now())"
    )
    print(store.counts(("blocks",))["blocks"])
"""


def test_the_server_lets_go_of_a_duckdb_file_and_answers_from_memory_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    with Store.open(url) as seed:
        fill(seed, tmp_path)
    store, service = _serve(url, tmp_path, hold_off=3600.0)
    try:
        service.warm()
        held = subprocess.run([sys.executable, "-c", OTHER, url], capture_output=True, text=True, env=_no_wait())  # fmt: skip
        assert held.returncode != 0 and "locked" in held.stderr  # no server to ask: held
        let_go = service.release()
        assert let_go["held"] is False
        done = subprocess.run([sys.executable, "-c", OTHER, url], capture_output=True, text=True, env=_no_wait())  # fmt: skip
        assert done.returncode == 0, done.stderr  # another process opens and writes the file
        memory = service.remember("The orchard ledger moved to the barn.", speaker="user")
        found = service.recall("orchard ledger barn", limit=2)
        assert found["results"][0]["block_id"] == memory["block_id"]  # the copy has it
        assert service.writer.waiting() >= 2  # the memory and the recall wait for the file
        assert service.writer.take_back() is False  # the hold-off is not over
        assert service.writer.take_back(force=True) is True
        assert service.writer.waiting() == 0
    finally:
        _stop(store, service)
    with Store.open(url) as reopened:
        assert reopened.fetch("SELECT id FROM sessions WHERE id = 's-night'") == [("s-night",)]
        assert reopened.fetch("SELECT count(*) FROM blocks WHERE id = :id", {"id": memory["block_id"]}) == [(1,)]  # fmt: skip
        assert reopened.fetch("SELECT count(*) FROM recall_log WHERE id = :id", {"id": found["recall_id"]}) == [(1,)]  # fmt: skip
        assert reopened.fetch("SELECT count(*) FROM embeddings WHERE target_id = :id", {"id": memory["block_id"]}) == [(1,)]  # fmt: skip


def _no_wait() -> dict[str, str]:
    import os

    return os.environ | {"MEMVAULT_LOCK_TIMEOUT": "0.5"}


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_on_postgresql_letting_go_changes_nothing(filled: str, tmp_path: Path) -> None:
    store, service = _serve(filled, tmp_path)
    try:
        assert service.release() == {"held": True, "detachable": False}
        memory = service.remember("Written straight to PostgreSQL.")
        assert service.writer.waiting() == 0
    finally:
        _stop(store, service)
    with Store.open(filled) as reopened:
        assert reopened.fetch("SELECT count(*) FROM blocks WHERE id = :id", {"id": memory["block_id"]}) == [(1,)]  # fmt: skip


def test_a_question_naming_nothing_is_never_answered_from_a_prefetched_entry(
    filled: str, tmp_path: Path
) -> None:
    """The night prefetches the signatures asked lately; a question that names no entity has
    the signature of every such question, so a prefetched answer for it would answer them
    all alike, and not find what was remembered since."""
    from memvault.normalize import utcnow
    from memvault.recall.prefetch import run_prefetch

    store, service = _serve(filled, tmp_path)
    try:
        service.recall("ledger drawer", limit=3)
        service.writer.flush()
        run_prefetch(service.writer.store, service.recaller, utcnow())
        cached = store.fetch("SELECT count(*) FROM prefetch_cache WHERE signature = '-|'")
        memory = service.remember("The zqa1x ledger is kept in drawer one.")
        found = service.recall("zqa1x ledger drawer", limit=3)
    finally:
        _stop(store, service)
    assert cached == [(1,)]  # the night did prefetch it
    assert not found["served_from_prefetch"]
    assert found["results"][0]["block_id"] == memory["block_id"]


def test_the_collector_applies_what_a_stopped_server_left_unless_a_server_holds_it(
    filled: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that stopped while a nightly job held the file leaves its writes queued; the
    night's collector applies them first (once), so the dream reads what the agent kept."""
    from memvault.collector import collect
    from memvault.serve.queue import queue_path
    from memvault.serve.writer import apply_left

    block = {"type": "block", "text": "Kept while the night held the file.", "created_at": DAYS_AGO, "id": "blk_left"}  # fmt: skip
    with Store.open(filled) as store:
        path = queue_path(store.url)
    queue = WriteQueue(path)
    queue.append("remember", new_run_id("ingest"), {"block_id": "blk_left", "lines": [block]})
    with Store.open(filled) as store:
        assert apply_left(store) == 0  # its server still holds the queue: it applies it
        queue.close()
        report = collect(store, inbox=None, claude_projects=None)
        assert report.serve_writes_applied == 1
        assert store.fetch("SELECT count(*) FROM blocks WHERE id = 'blk_left'") == [(1,)]
        assert apply_left(store) == 0  # applied once
    assert path.read_bytes() == b""
