"""Ingest in bounded memory, both backends: the input is staged in the store chunk by chunk and
becomes visible in one step; a killed ingest's staging is dropped at the next start."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import memvault.ingest as ingest
from memvault.errors import IngestError
from memvault.ingest import ingest_file, iter_jsonl
from memvault.ingest_staging import REGISTRY, Staging
from memvault.store import Store
from memvault.store.liveness import HOST
from tests.helpers import FIXTURES, export_text

SMALL = FIXTURES / "small_history.jsonl"


def _staging_tables(store: Store) -> list[str]:
    schema = "current_schema()" if store.kind == "duckdb" else f"'{store.backend.schema}'"  # type: ignore[attr-defined]
    return [
        r[0]
        for r in store.fetch(
            "SELECT table_name FROM information_schema.tables "
            f"WHERE table_schema = {schema} AND table_name LIKE 'ingest_stage_%'"
        )
    ]


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _lines(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_chunks_and_pages_give_the_same_store_as_one_piece(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    """Read 3 records at a time and written 2 rows at a time, a file whose names resolve to
    entities of later chunks (and repeats a record identically) gives what one piece gives."""
    records = [json.loads(line) for line in SMALL.read_text().splitlines()]
    path = _lines(tmp_path / "in.jsonl", *records, records[3])  # block b1 once more, identical
    one_piece = f"duckdb://{tmp_path / 'one.duckdb'}"
    import memvault

    with memvault.open(one_piece) as other:
        ingest_file(other, path)
        expected = export_text(other)
    monkeypatch.setattr(ingest, "CHUNK_RECORDS", 3)
    monkeypatch.setattr(ingest, "WRITE_ROWS", 2)
    report = ingest_file(store, path)
    assert report.inserted["block"] == 1 and sum(report.inserted.values()) == 10
    assert export_text(store) == expected
    assert _staging_tables(store) == [] and store.fetch(f"SELECT * FROM {REGISTRY}") == []


def test_a_clash_across_chunks_is_found_and_nothing_is_left(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "CHUNK_RECORDS", 2)
    session = {"type": "session", "id": "s1", "started_at": "2026-02-01T10:00:00Z"}
    block = {"type": "block", "session_id": "s1", "created_at": "2026-02-01T10:05:00Z"}
    path = _lines(
        tmp_path / "t.jsonl",
        session,
        dict(block, id="b", text="one"),
        dict(block, id="c", text="other"),
        dict(block, id="b", text="two"),
        dict(block, id="d", text="x", session_id="nowhere"),
    )
    with pytest.raises(IngestError, match=r":4: id 'b' also on line 2 with different content"):
        ingest_file(store, path)
    path.write_text(path.read_text().replace('"two"', '"one"'))
    with pytest.raises(IngestError, match=r":5: unknown session 'nowhere'"):
        ingest_file(store, path)
    assert store.counts(("blocks", "sessions", "audit_log")) == {
        "blocks": 0,
        "sessions": 0,
        "audit_log": 0,
    }
    assert _staging_tables(store) == [] and store.fetch(f"SELECT * FROM {REGISTRY}") == []
    assert store.fetch("SELECT count(*) FROM runs") == [(0,)], "a refused input starts no run"


def test_a_dead_ingests_staging_is_invisible_and_dropped_at_the_next_start(
    store: Store, tmp_path: Path
) -> None:
    # An ingest staged its input, then its process died before the one step that shows it.
    staging = Staging(store, str(SMALL)).__enter__()
    with SMALL.open("rb") as fh:
        ingest.stage(iter_jsonl(fh, str(SMALL)), staging)
    store.backend.execute(
        f"UPDATE {REGISTRY} SET pid = :p, host = :h", {"p": _dead_pid(), "h": HOST}
    )
    assert len(_staging_tables(store)) == 9
    assert store.counts(("blocks", "entities", "audit_log")) == {
        "blocks": 0,
        "entities": 0,
        "audit_log": 0,
    }
    report = ingest_file(store, SMALL)  # the next start drops it, then ingests as usual
    assert sum(report.inserted.values()) == 10
    assert _staging_tables(store) == [] and store.fetch(f"SELECT * FROM {REGISTRY}") == []


def test_a_live_ingests_staging_is_left_alone(store: Store) -> None:
    staging = Staging(store, "elsewhere").__enter__()
    with SMALL.open("rb") as fh:
        ingest.stage(iter_jsonl(fh, str(SMALL)), staging)
    assert store.fail_abandoned_runs() == []
    assert len(_staging_tables(store)) == 9  # this process is alive: its staging stays
    staging.__exit__(None)
    assert _staging_tables(store) == []
