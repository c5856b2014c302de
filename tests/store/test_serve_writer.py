"""`memvault serve` answers a recall first and writes it just after (the server's writer):
each recall still gets its recall_log row, the blocks' access and audit rows under its own
run id, in the order answered; undo by recall id works; feedback right after a recall sees
it; closing the server writes what is queued. On DuckDB and PostgreSQL."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from memvault.normalize import utcnow
from memvault.recall import recaller_for
from memvault.recall.log import write_recalls
from memvault.serve import writer as writer_module
from memvault.serve.apply import apply_recalls
from memvault.serve.queue import Entry, WriteQueue
from memvault.serve.service import MemoryService, queued_recall_log
from memvault.store import Store
from memvault.store.audit import undo_run
from tests.recall_support import fill

QUERY = "status of Quill"


@pytest.fixture
def filled(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    fill(store, tmp_path)
    return store


def _service(store: Store, tmp_path: Path, **options: object) -> MemoryService:
    return MemoryService(store, queue=WriteQueue(tmp_path / "queue.jsonl"), **options)  # type: ignore[arg-type]


def _slowed(monkeypatch: pytest.MonkeyPatch, release: threading.Event, wait: float) -> None:
    """The writer's recall logs wait for ``release`` (at most ``wait`` seconds)."""

    def slow(store: Store, entries: list[Entry]) -> None:
        release.wait(wait)
        apply_recalls(store, entries)

    monkeypatch.setattr(writer_module, "apply_recalls", slow)


def _access(store: Store, block_id: str) -> int:
    return int(store.fetch("SELECT access_count FROM blocks WHERE id = :id", {"id": block_id})[0][0])  # fmt: skip


def _audit(store: Store, run_id: str) -> list[tuple[str, str, str | None]]:
    rows = store.fetch(
        "SELECT target_table, target_id, before_image FROM audit_log WHERE run_id = :r ORDER BY id",
        {"r": run_id},
    )
    return [(str(t), str(i), b) for t, i, b in rows]


def test_queued_recalls_are_written_in_order_each_its_own_undoable_run(
    filled: Store, tmp_path: Path
) -> None:
    before = _access(filled, "b_quill_status")
    service = _service(filled, tmp_path, queued=True)
    try:
        answers = [service.recall(QUERY, limit=3) for _ in range(3)]
    finally:
        service.close()
    ids = [a["recall_id"] for a in answers]
    assert all(a["results"][0]["block_id"] == "b_quill_status" for a in answers)
    logged = filled.fetch("SELECT id FROM recall_log ORDER BY created_at, id")
    assert {r[0] for r in logged} == set(ids)
    assert _access(filled, "b_quill_status") == before + 3
    # Each recall is its own run, with its row's and its blocks' audit rows; the blocks'
    # before-images follow one another (+0, +1, +2) as the recalls were answered.
    counts = []
    for rid in ids:
        assert filled.run(rid)["kind"] == "recall"  # type: ignore[index]
        audit = _audit(filled, rid)
        assert ("recall_log", rid, None) in audit
        image = next(b for t, i, b in audit if (t, i) == ("blocks", "b_quill_status"))
        counts.append(json.loads(image or "{}")["access_count"])
    assert counts == [before, before + 1, before + 2]
    for k, rid in enumerate(reversed(ids)):  # undo by recall id, the latest first
        undo_run(filled, rid)
        assert _access(filled, "b_quill_status") == before + 2 - k
        assert not filled.fetch("SELECT 1 FROM recall_log WHERE id = :id", {"id": rid})


def test_feedback_right_after_a_recall_waits_for_its_write(
    filled: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    _slowed(monkeypatch, release, 10)
    service = _service(filled, tmp_path, queued=True)
    try:
        found = service.recall(QUERY, limit=3)
        assert service.writer.pending() == 1  # answered, not written yet
        threading.Timer(0.3, release.set).start()
        started = time.monotonic()
        report = service.feedback(found["recall_id"], "correct")
        assert time.monotonic() - started >= 0.25  # it waited for the write
        assert report["verdict"] == "correct"
    finally:
        release.set()
        service.close()
    verdict = filled.fetch("SELECT verdict FROM recall_log WHERE id = :id", {"id": found["recall_id"]})  # fmt: skip
    assert verdict == [("CORRECT",)]


def test_closing_writes_every_recall_still_queued(
    filled: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    _slowed(monkeypatch, release, 0.5)
    service = _service(filled, tmp_path, queued=True)
    answers = [service.recall(QUERY, limit=2) for _ in range(5)]
    assert service.writer.pending() >= 4
    service.close()
    ids = {a["recall_id"] for a in answers}
    assert {r[0] for r in filled.fetch("SELECT id FROM recall_log")} == ids
    assert {r[0] for r in filled.fetch("SELECT id FROM runs WHERE kind = 'recall'")} == ids
    assert service.writer.written == 5 and service.writer.batches <= 2  # the queue, grouped
    assert not WriteQueue(tmp_path / "queue.jsonl").pending()  # nothing left waiting


def test_one_transaction_writes_many_recalls_and_undo_takes_back_one(filled: Store) -> None:
    recaller = recaller_for(filled)
    now = utcnow()
    results = [recaller.recall(filled, QUERY, limit=2, now=now, record=False) for _ in range(2)]
    before = _access(filled, "b_quill_status")
    write_recalls(filled, [(r, "s1", now) for r in results])
    assert _access(filled, "b_quill_status") == before + 2
    rows = filled.fetch("SELECT id, session_id FROM recall_log ORDER BY id")
    assert sorted(rows) == sorted((r.recall_id, "s1") for r in results)
    with pytest.raises(Exception, match="changed again later"):
        undo_run(filled, results[0].recall_id)  # the second recall read the same block since
    undo_run(filled, results[1].recall_id)
    assert _access(filled, "b_quill_status") == before + 1


def test_a_failed_write_costs_that_recall_its_log_only(
    filled: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []

    def picky(store: Store, entries: list[Entry]) -> None:
        if any(e.args["query"] == "boom" for e in entries):
            raise RuntimeError("disk on fire")
        apply_recalls(store, entries)

    monkeypatch.setattr(writer_module, "apply_recalls", picky)
    service = _service(filled, tmp_path, queued=True)
    service.writer._warn = said.append
    # Both queued before the first write: one batch, then one by one.
    with service.writer.write_lock:
        good = service.recall(QUERY, limit=2)
        bad = service.recall("boom", limit=2)
    service.close()
    assert filled.fetch("SELECT id FROM recall_log") == [(good["recall_id"],)]
    assert any(bad["recall_id"] in line and "disk on fire" in line for line in said), said
    kept = (tmp_path / "queue.jsonl.refused").read_text().splitlines()  # set aside, not lost
    assert len(kept) == 1 and json.loads(kept[0])["run_id"] == bad["recall_id"]
    assert service.writer.queue.refused == 1


def test_the_setting_says_queued_or_inline() -> None:
    assert queued_recall_log({}) is True
    assert queued_recall_log({"MEMVAULT_SERVE_RECALL_LOG": "inline"}) is False
    with pytest.raises(Exception, match="queued or inline"):
        queued_recall_log({"MEMVAULT_SERVE_RECALL_LOG": "later"})


def test_the_audit_images_are_the_rows_before_and_after(filled: Store) -> None:
    """What undo restores from: the whole block row before the recall and after it."""
    from memvault.store.audit import decode_images

    recaller = recaller_for(filled)
    now = utcnow()
    result = recaller.recall(filled, QUERY, limit=2, now=now, record=False)
    ids = sorted({h.block_id for h in result.results})
    rows_before = filled.read_table("blocks", "id = ANY(:ids)", {"ids": ids})
    write_recalls(filled, [(result, None, now)])
    rows_after = filled.read_table("blocks", "id = ANY(:ids)", {"ids": ids})
    audit = filled.fetch_df(
        "SELECT target_id, before_image, after_image FROM audit_log "
        "WHERE run_id = :r AND target_table = 'blocks' ORDER BY id",
        {"r": result.recall_id},
    )
    assert audit["target_id"].to_list() == ids
    assert decode_images(filled, "blocks", audit["before_image"]).to_dicts() == rows_before.to_dicts()  # fmt: skip
    assert decode_images(filled, "blocks", audit["after_image"]).to_dicts() == rows_after.to_dicts()  # fmt: skip
    assert rows_after["access_count"].to_list() == [c + 1 for c in rows_before["access_count"]]


def test_inline_applies_the_recall_before_it_answers(filled: Store, tmp_path: Path) -> None:
    service = _service(filled, tmp_path, queued=False)
    try:
        found = service.recall(QUERY, limit=2)
        assert service.writer.pending() == 0
        assert filled.fetch("SELECT 1 FROM recall_log WHERE id = :id", {"id": found["recall_id"]})
    finally:
        service.close()


def test_the_owners_plus_ranks_the_next_recall_of_the_same_server(
    filled: Store, tmp_path: Path
) -> None:
    """The server keeps the blocks' feedback in memory with its index; a + it records itself
    counts at once, however long the index is otherwise trusted."""
    from memvault.embed import HashingEmbedder
    from memvault.recall.recaller import Recaller

    recaller = Recaller(HashingEmbedder(), refresh_seconds=3600)
    service = MemoryService(filled, recaller, queued=False, queue=WriteQueue(tmp_path / "q.jsonl"))
    try:
        first = service.recall(QUERY, limit=5)
        ranked = [(h["block_id"], h["score"]) for h in first["results"]]
        runner_up = ranked[1][0]
        for _ in range(3):
            service.feedback(first["recall_id"], "+", block_id=runner_up)
        again = service.recall(QUERY, limit=5)
    finally:
        service.close()
    scores = {h["block_id"]: h["score"] for h in again["results"]}
    assert scores[runner_up] == pytest.approx(dict(ranked)[runner_up] + 0.09, abs=1e-6)


def test_every_tool_refuses_in_one_line_and_a_recall_holding_nul_is_logged(
    filled: Store, tmp_path: Path
) -> None:
    """Through the tools as an agent calls them, on both backends: an out-of-range time and a
    NUL in a name are one-line refusals (they used to be "Error executing tool" with no
    reason); a query holding NUL is answered, logged (PostgreSQL cannot store NUL) and rated."""
    import anyio

    from memvault.serve.tools import build_tools

    service = _service(filled, tmp_path, queued=False)
    tools = {t.name: t for t in build_tools(service.call)}  # type: ignore[attr-defined]

    def call(tool: str, given: dict[str, object]) -> object:
        return anyio.run(tools[tool].run, given, None)  # type: ignore[attr-defined]

    try:
        for given, said in (
            ({"subject": "Ada Lovelace", "at": "0001-01-01T00:30:00+01:00"}, "out of range"),
            ({"subject": "Ada Lovelace", "known_at": "9999-12-31T23:59:59-14:00"}, "out of range"),
            ({"subject": "Ada\x00"}, "subject holds a NUL character"),
            ({"subject": "Ada Lovelace", "predicate": "works_at\x00"}, "predicate holds a NUL"),
        ):
            refused = call("asof", given)
            assert refused.is_error, given  # type: ignore[attr-defined]
            text = refused.content[0].text  # type: ignore[attr-defined]
            assert text.startswith("asof: ") and said in text and "\n" not in text, text
        refused = call("feedback", {"recall_id": "recall-x\x00", "verdict": "correct"})
        assert refused.is_error and "NUL" in refused.content[0].text  # type: ignore[attr-defined]
        answered = call("recall", {"query": "status\x00 of Quill"})
        assert not answered.is_error  # type: ignore[attr-defined]
        recall_id = answered.structured_content["recall_id"]  # type: ignore[attr-defined]
        row = filled.get_row("recall_log", recall_id)
        assert row is not None and row["query"] == "status of Quill"
        rated = call("feedback", {"recall_id": recall_id, "verdict": "correct"})
        assert not rated.is_error, rated.content[0].text  # type: ignore[attr-defined]
    finally:
        service.close()
