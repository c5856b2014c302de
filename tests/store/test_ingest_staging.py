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
from memvault.store import Store, undo_run
from memvault.store.audit import decode_images
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


def _ingest_audit(store: Store, run_id: str | None) -> list[dict]:
    """The audit rows of an ingest's inserts, images decoded (PostgreSQL's SQL spells a time
    with a ``T`` where polars writes a space), with the fields each image holds."""
    rows = store.fetch_df(
        "SELECT target_table, target_id, phase, action, before_image, after_image, reason "
        "FROM audit_log WHERE run_id = :r AND action = 'ingest' ORDER BY target_table, target_id",
        {"r": run_id},
    )
    found = []
    for (table,), group in rows.group_by(["target_table"], maintain_order=True):
        decoded = decode_images(store, str(table), group["after_image"]).to_dicts()
        for row, image in zip(group.to_dicts(), decoded, strict=True):
            text = row.pop("after_image")
            found.append(row | {"after": image, "fields": sorted(json.loads(text))})
    return found


def test_the_store_staging_writes_what_memory_writes_and_undo_takes_it_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Moved inside the database (rows and audit rows by one statement a table), an input
    gives the report, rows and audit rows that the page-by-page path gives; undoing that
    ingest restores the store, and undoing the undo brings it back."""
    empty = export_text(store)
    first = ingest_file(store, SMALL)  # one chunk: in memory, page by page
    written = export_text(store)
    undo_run(store, first.run_id or "")
    assert export_text(store) == empty
    monkeypatch.setattr(ingest, "SMALL_IN_MEMORY", False)
    second = ingest_file(store, SMALL)  # staged in the store, moved by SQL
    assert second.as_dict() | {"run_id": None} == first.as_dict() | {"run_id": None}
    assert export_text(store) == written
    audited = _ingest_audit(store, second.run_id)
    assert len(audited) == sum(second.inserted.values()) == 10
    assert audited == _ingest_audit(store, first.run_id)
    undo = undo_run(store, second.run_id or "")
    assert export_text(store) == empty
    undo_run(store, undo.undo_run_id)
    assert export_text(store) == written


# -- a small input: staged and checked in memory, by the same checks -------------------------

_S = {"type": "session", "id": "s2", "started_at": "2026-02-01T10:00:00Z"}
_B = {"type": "block", "session_id": "s2", "created_at": "2026-02-01T10:05:00Z"}
_M = {"type": "mention", "session_id": "s2", "mentioned_at": "2026-02-01T10:05:00Z"}
#: Inputs refused for each kind of problem (the store holds SMALL when they are ingested).
_REFUSED = {
    "clash": [_S, dict(_B, id="x", text="one"), dict(_B, id="x", text="two")],
    "unknown session": [_S, dict(_B, id="x", text="t", session_id="nowhere")],
    "unknown block": [_S, dict(_M, entity="org_acme", block_id="nowhere")],
    "unknown entity": [_S, dict(_B, id="x", text="t"), dict(_M, entity="Bob", block_id="x")],
    "ambiguous name": [
        {"type": "entity", "id": "ada2", "name": "Ada Lovelace", "entity_type": "person"},
        dict(_M, entity="Ada Lovelace", block_id="b1", session_id="s1"),
    ],
    "several": [
        dict(_B, id="y", text="t", session_id="gone"),
        dict(_M, entity="Nobody", block_id="b1", session_id="s1"),
        dict(_M, entity="org_acme", block_id="lost", session_id="also gone"),
    ],
}


def _outcome(store: Store, path: Path) -> tuple[str, int] | str:
    try:
        report = ingest_file(store, path, force=True)
    except IngestError as exc:
        return str(exc), exc.total
    return json.dumps(report.as_dict() | {"run_id": None}, sort_keys=True)


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_a_small_input_is_refused_in_memory_as_staging_refuses_it(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The same problems, lines and counts whether the input is checked in memory or in the
    store's staging; nothing is written either way, and the memory path leaves no staging."""
    ingest_file(store, SMALL)
    before = export_text(store)
    path = _lines(tmp_path / "bad.jsonl", *_REFUSED[case])
    in_memory = _outcome(store, path)
    monkeypatch.setattr(ingest, "SMALL_IN_MEMORY", False)
    staged = _outcome(store, path)
    assert isinstance(in_memory, tuple), in_memory
    assert in_memory == staged
    assert export_text(store) == before
    assert _staging_tables(store) == [] and store.fetch(f"SELECT * FROM {REGISTRY}") == []


def test_a_small_input_is_written_in_memory_as_staging_writes_it(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names resolved against the store, a stored session referenced, an identical repeat
    dropped, a stored session extended: the same report and store as through the store's
    staging (here a DuckDB one), and the store is given no staging table."""
    import memvault

    later = dict(_S, id="s1", started_at="2026-01-05T10:00:00Z", ended_at="2026-01-05T12:00:00Z")
    path = _lines(
        tmp_path / "good.jsonl",
        later,
        dict(_B, id="x", text="t", session_id="s1"),
        dict(_B, id="x", text="t", session_id="s1"),
        dict(_M, entity="Ada Lovelace", block_id="x", session_id="s1"),
        dict(_M, entity="org_acme", block_id="b1", session_id="s1"),
    )
    with memvault.open(f"duckdb://{tmp_path / 'staged.duckdb'}") as other:
        ingest_file(other, SMALL)
        monkeypatch.setattr(ingest, "SMALL_IN_MEMORY", False)
        staged = _outcome(other, path), export_text(other)
    monkeypatch.setattr(ingest, "SMALL_IN_MEMORY", True)
    ingest_file(store, SMALL)
    made: list[str] = []
    monkeypatch.setattr(Staging, "append", lambda self, t, f: made.append(t))
    assert (_outcome(store, path), export_text(store)) == staged
    assert made == [], "a small input stages nothing in the store"
    assert '"sessions_extended": 1' in staged[0] and '"block": 1' in staged[0]


def test_running_out_of_duckdbs_ingest_memory_names_the_setting_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's commit holds every new index entry within ``MEMVAULT_INGEST_MEMORY``; when it
    runs out (measured: 100MB at 99,882 blocks of a full history), the error says which
    setting to raise, nothing is visible, and the next ingest goes through. Other errors are
    left as they are."""
    import duckdb

    import memvault
    from memvault.errors import StoreError
    from memvault.store.audit import Mutation

    real = Mutation.insert_new
    raised: list[Exception] = []

    def fails_on_mentions(self: Mutation, table: str, *args: object, **kwargs: object) -> int:
        if table == "mentions" and raised:
            raise raised[0]
        return real(self, table, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Mutation, "insert_new", fails_on_mentions)
    monkeypatch.setattr(ingest, "SMALL_IN_MEMORY", False)
    with memvault.open(f"duckdb://{tmp_path / 'store.duckdb'}") as store:
        raised.append(
            duckdb.TransactionException(
                "TransactionContext Error: Failed to commit: failed to allocate data of size "
                "64.0 KiB (95.3 MiB/95.3 MiB used)"
            )
        )
        with pytest.raises(
            StoreError, match=r"MEMVAULT_INGEST_MEMORY unset: 256MiB for 10 rows\); nothing of the"
        ):
            ingest_file(store, SMALL)
        raised[0] = duckdb.ConstraintException("Constraint Error: something else")
        with pytest.raises(duckdb.ConstraintException, match="something else"):
            ingest_file(store, SMALL)
        assert store.counts(("blocks", "mentions", "audit_log")) == {
            "blocks": 0,
            "mentions": 0,
            "audit_log": 0,
        }
        assert _staging_tables(store) == []
        raised.clear()
        assert sum(ingest_file(store, SMALL).inserted.values()) == 10


def test_duckdbs_ingest_memory_is_sized_for_the_rows_its_commit_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unset, ``MEMVAULT_INGEST_MEMORY`` is the least (256MiB) while staging and, for the
    write, ``COMMIT_BYTES_PER_ROW`` per row written and per audit row stored (the commit's
    index entries, which DuckDB cannot give up): a small history gets no more than it needs, a
    large one what its commit needs. Set, it is used as given. The limit is put back after."""
    import memvault
    import memvault.ingest_staging as staging
    from memvault.store.audit import Mutation

    real = Mutation.insert_new
    seen: list[str] = []

    def noting(self: Mutation, *args: object, **kwargs: object) -> int:
        [(limit,)] = self.store.fetch("SELECT current_setting('memory_limit')")
        seen.append(str(limit))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Mutation, "insert_new", noting)
    monkeypatch.setattr(ingest, "SMALL_IN_MEMORY", False)
    monkeypatch.delenv("MEMVAULT_INGEST_MEMORY", raising=False)
    with memvault.open(f"duckdb://{tmp_path / 'store.duckdb'}") as store:
        [(before,)] = store.fetch("SELECT current_setting('memory_limit')")
        ingest_file(store, SMALL)
        assert set(seen) == {"256.0 MiB"}, "10 rows: the least"
        [(after,)] = store.fetch("SELECT current_setting('memory_limit')")
        assert after[:2] == before[:2] and after != "256.0 MiB", "put back"
        seen.clear()
        monkeypatch.setattr(staging, "COMMIT_BYTES_PER_ROW", 20 * 2**20)
        stored = store.counts(("audit_log",))["audit_log"]
        ingest_file(store, SMALL, force=True)  # the same 10 rows, now stored
        assert set(seen) == {f"{(10 + stored) * 20:.1f} MiB"}
        seen.clear()
        monkeypatch.setenv("MEMVAULT_INGEST_MEMORY", "300MiB")
        ingest_file(store, SMALL, force=True)
        assert set(seen) == {"300.0 MiB"}
