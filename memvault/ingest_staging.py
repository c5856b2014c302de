"""Where an ingest holds its input before it becomes visible: staging tables in the store.

A large input is read chunk by chunk into staging tables of its own (one per record type,
``ingest_stage_<id>_<table>``, made from the memory table it feeds, each row with its input
line and its place in the input), checked there with SQL, and moved into the memory tables in
one audited transaction at the end. So a process holds one chunk at a time, never the file,
and the ingest stays all or nothing: until that transaction commits, nothing of the input is
visible. Every ingest in progress is registered in ``ingest_staging`` with its process; the
staging of one that died (killed, out of memory) is dropped by the next ingest or run.

An input that fits in one chunk is staged in this process's own in-memory DuckDB instead
(:class:`MemoryStaging`) and checked by the same SQL: tables made, registered and dropped in
the store would cost a small input (a remembered memory) more than its write.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import polars as pl

from memvault.errors import StoreError
from memvault.interchange import MAPPINGS
from memvault.normalize import utcnow
from memvault.store.backends import DuckDBBackend, ident
from memvault.store.liveness import HOST, abandoned_because, carrier_pid
from memvault.store.queries import ingest as q
from memvault.store.queries import staging as sql
from memvault.store.queries.staging import LINE, SEQ

if TYPE_CHECKING:
    from memvault.store import Store
    from memvault.store.backends import Backend

#: The registry of ingests in progress.
REGISTRY = q.REGISTRY


def staging_table(ingest_id: str, type_name: str) -> str:
    return ident(f"ingest_stage_{ingest_id}_{MAPPINGS[type_name].table}")


class Staging:
    """One ingest's staging tables: appended to chunk by chunk, read back in order, dropped
    at the end (or by the next start, when the process died first)."""

    #: Whether the staged rows are held in this process (:class:`MemoryStaging`).
    in_memory = False

    def __init__(self, store: Store, source: str) -> None:
        self.store = store
        self.source = source
        self.id = secrets.token_hex(6)
        #: Where the staged rows are held and the checks' SQL runs.
        self.db: Backend = store.backend
        #: The columns staged for each record type (a subset of its table's), in order.
        self.columns: dict[str, list[str]] = {}
        self.rows: dict[str, int] = {}
        self._seq = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Staging:
        drop_abandoned_staging(self.store)
        q.register(self.store, self.id, self.source, HOST, carrier_pid(), utcnow())
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            drop_staging(self.store, self.id, self.types)
            return
        # Failing already: a staging that cannot be dropped now is dropped at the next start.
        with contextlib.suppress(Exception):
            drop_staging(self.store, self.id, self.types)

    def table(self, type_name: str) -> str:
        return staging_table(self.id, type_name)

    @property
    def types(self) -> list[str]:
        """The record types staged, in the order they are written."""
        return list(self.columns)

    # -- writing -----------------------------------------------------------------------------

    def append(self, type_name: str, frame: pl.DataFrame) -> None:
        """Stage rows of one record type (with their ``_line``), typed like their table."""
        if frame.is_empty():
            return
        target = MAPPINGS[type_name].table
        backend = self.store.backend
        content = self.store.conform(target, frame.drop(LINE))
        if type_name not in self.columns:
            unlogged = self.store.kind == "postgresql"
            sql.create_like(backend, self.table(type_name), target, unlogged=unlogged)
            self.columns[type_name] = []
        known = self.columns[type_name]
        known.extend(c for c in content.columns if c not in known)
        seq = pl.int_range(self._seq, self._seq + frame.height, eager=True, dtype=pl.Int64)
        self._seq += frame.height
        rows = content.with_columns(frame[LINE].cast(pl.Int64), seq.alias(SEQ))
        with self.store.transaction():
            backend.insert_df(self.table(type_name), rows, on_conflict="error")
            q.heartbeat(self.store, self.id, utcnow())
        self.rows[type_name] = self.rows.get(type_name, 0) + frame.height

    #: Staged rows past which PostgreSQL indexes the read-back order (a small input is read in
    #: one page: an index would cost more than it saves).
    PAGE_INDEXED = 20_000

    def ready(self) -> None:
        """Everything is staged: index the order rows are read back in (PostgreSQL reads a
        page by it; DuckDB's appends are in that order already)."""
        if self.store.kind == "postgresql":
            for type_name in [t for t, n in self.rows.items() if n > self.PAGE_INDEXED]:
                sql.index_order(self.store.backend, self.table(type_name))

    # -- checking ----------------------------------------------------------------------------

    def clashes(self, type_name: str) -> str:
        """SQL of the rows that repeat an earlier row's id with other content (``_line``,
        ``id``, ``first``: the earlier row's line)."""
        return sql.clashes_sql(self.table(type_name), self.columns[type_name])

    def drop_repeats(self, type_name: str) -> int:
        """Identical repeats of an id inside the input: all but the first are dropped."""
        repeats = sql.drop_repeats(self.db, self.table(type_name))
        self.rows[type_name] -= repeats
        return repeats

    def unknown_references(self, type_name: str, column: str, kind_type: str) -> str | None:
        """SQL of the rows whose ``column`` names a ``kind_type`` record that is neither in the
        input nor in the store (``_line`` and ``ref``); None when the column is not staged."""
        if column not in self.columns.get(type_name, ()):
            return None
        target = self.stored(kind_type, type_name, column)
        return sql.unknown_references_sql(
            self.table(type_name), column, self._in_input(kind_type), target
        )

    def _in_input(self, kind_type: str) -> str | None:
        """The staging table of ``kind_type`` records, when the input holds any."""
        return self.table(kind_type) if kind_type in self.columns else None

    def stored(self, kind_type: str, type_name: str, column: str) -> str:
        """The table of the stored ``kind_type`` records (the references in ``type_name``'s
        ``column`` are looked up there): the store's own."""
        return ident(MAPPINGS[kind_type].table)

    def naming(self, type_name: str, column: str) -> str | None:
        """SQL of the rows whose ``column`` is one of the values bound as ``:refs``."""
        if column not in self.columns.get(type_name, ()):
            return None
        return sql.naming_sql(self.table(type_name), column)

    # -- writing into the store --------------------------------------------------------------

    def resolve(self, type_name: str, columns: list[str], names: dict[str, str]) -> None:
        """Entity names in the staged ``columns`` replaced by the ids they resolve to."""
        present = [c for c in columns if c in self.columns.get(type_name, ())]
        if not names or not present:
            return
        for column in present:
            sql.rename(self.db, self.table(type_name), column, names)

    def new_values(self, type_name: str, target: str, columns: tuple[str, ...]) -> set[str]:
        """The distinct values of ``columns`` in the staged rows whose id ``target`` does not
        hold yet (what the rows about to be inserted name)."""
        present = [c for c in columns if c in self.columns.get(type_name, ())]
        if not present:
            return set()
        return sql.new_values(self.db, self.table(type_name), target, present)

    def later_ends(self, type_name: str, target: str) -> pl.DataFrame:
        """Staged rows whose id ``target`` holds with an earlier (or no) ``ended_at``: ``id``
        and the staged ``ended_at`` (a session that went on since it was stored)."""
        if "ended_at" not in self.columns.get(type_name, ()):
            return pl.DataFrame()
        return sql.later_ends(self.db, self.table(type_name), target)

    # -- reading back ------------------------------------------------------------------------

    def pages(
        self, type_name: str, size: int, prepare: Callable[[pl.DataFrame], pl.DataFrame]
    ) -> Iterator[pl.DataFrame]:
        """The staged rows of a type in input order, ``size`` at a time (their staged columns
        only, so a column the input did not set takes its table's default)."""
        table, after = self.table(type_name), -1
        while True:
            page = sql.page(self.db, table, self.columns[type_name], after, size)
            if page.is_empty():
                return
            after = int(page[SEQ].max())  # type: ignore[arg-type]
            yield prepare(page.drop(SEQ))
            if page.height < size:  # the last page
                return


class MemoryStaging(Staging):
    """A small input's staging (one chunk): held in this process's own in-memory DuckDB, not
    in the store, and checked by the same SQL as :class:`Staging`'s. The store is only asked
    which referenced records it holds; nothing is made, registered or dropped there, so a
    small input (a remembered memory) costs its checks and its one write, as before staging.
    """

    in_memory = True

    def __init__(self, store: Store, source: str) -> None:
        super().__init__(store, source)
        self.db = _memory_db()
        self._stored: set[str] = set()
        #: The staged rows of each type as they were appended, while they are still what its
        #: table holds (no repeat dropped): read back from here, not through SQL.
        self._frames: dict[str, pl.DataFrame] = {}

    def __enter__(self) -> MemoryStaging:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.db.close()  # its temporary tables go with it

    def table(self, type_name: str) -> str:
        return ident(f"stage_{MAPPINGS[type_name].table}")

    def append(self, type_name: str, frame: pl.DataFrame) -> None:
        """Stage rows of one record type (with their ``_line``), typed like their table."""
        if frame.is_empty():
            return
        content = self.store.conform(MAPPINGS[type_name].table, frame.drop(LINE))
        known = self.columns.setdefault(type_name, [])
        known.extend(c for c in content.columns if c not in known)
        seq = pl.int_range(self._seq, self._seq + frame.height, eager=True, dtype=pl.Int64)
        self._seq += frame.height
        rows = content.with_columns(frame[LINE].cast(pl.Int64), seq.alias(SEQ))
        table = self.table(type_name)
        with self.db.staged(table, rows) as view:
            if self.rows.get(type_name):
                sql.append_from(self.db, table, view)
                self._frames.pop(type_name, None)
            else:
                sql.create_temp_from(self.db, table, view)
                self._frames[type_name] = rows
        self.rows[type_name] = self.rows.get(type_name, 0) + frame.height

    def ready(self) -> None:
        """Nothing to index: the rows are in memory, in input order."""

    def drop_repeats(self, type_name: str) -> int:
        repeats = super().drop_repeats(type_name)
        if repeats:
            self._frames.pop(type_name, None)  # the table holds fewer rows now
        return repeats

    def pages(
        self, type_name: str, size: int, prepare: Callable[[pl.DataFrame], pl.DataFrame]
    ) -> Iterator[pl.DataFrame]:
        """As :meth:`Staging.pages`; the rows as appended when the table still holds them."""
        frame = self._frames.get(type_name)
        if frame is None:
            yield from super().pages(type_name, size, prepare)
            return
        rows = frame.sort(SEQ).select(self.columns[type_name])
        for start in range(0, rows.height, size):
            yield prepare(rows.slice(start, size))

    def stored(self, kind_type: str, type_name: str, column: str) -> str:
        """The stored ``kind_type`` records that ``type_name``'s ``column`` names (and the
        input does not hold), asked of the store in one query and copied beside the input."""
        table = ident(f"stored_{MAPPINGS[kind_type].table}")
        wanted = sql.named_refs(self.db, self.table(type_name), column, self._in_input(kind_type))
        found = q.stored_ids(self.store, MAPPINGS[kind_type].table, wanted) if wanted else []
        if found:
            if table not in self._stored:
                sql.create_ids(self.db, table)
                self._stored.add(table)
            sql.append_ids(self.db, table, found)
        # None found so far: no table, the same check against no rows.
        return table if table in self._stored else sql.NO_IDS


_MEMORY: tuple[int, Any] | None = None
_MEMORY_LOCK = threading.Lock()


def _memory_db() -> DuckDBBackend:
    """A connection of its own (its own temporary tables) to this process's in-memory DuckDB,
    which is opened once: opening one costs more than a small ingest's checks."""
    global _MEMORY
    import duckdb

    with _MEMORY_LOCK:
        if _MEMORY is None or _MEMORY[0] != os.getpid():  # not one inherited through fork
            _MEMORY = (os.getpid(), duckdb.connect(":memory:", config={"threads": 1}))
        con = _MEMORY[1].cursor()
    db = DuckDBBackend.__new__(DuckDBBackend)
    db.url, db.path, db._depth, db.con = "duckdb://:memory:", ":memory:", 0, con
    return db


def drop_staging(store: Store, ingest_id: str, types: list[str] | None = None) -> None:
    """Drop one ingest's staging tables (those of ``types``, else of every record type) and
    its registration."""
    with store.transaction():
        for type_name in MAPPINGS if types is None else types:
            sql.drop(store.backend, staging_table(ingest_id, type_name))
        q.unregister(store, ingest_id)


def drop_abandoned_staging(store: Store) -> list[str]:
    """Drop the staging of every ingest whose process is gone; returns their ids."""
    try:
        rows = q.registered(store)
    except Exception:  # a store not migrated yet (read-only, or an older version)
        return []
    now, dropped = utcnow(), []
    for ingest_id, host, pid, heartbeat in rows:
        if abandoned_because(host, pid, heartbeat, now) is not None:
            drop_staging(store, str(ingest_id))
            dropped.append(str(ingest_id))
    return dropped


#: DuckDB's memory while an ingest runs, unless ``MEMVAULT_INGEST_MEMORY`` sets it: DuckDB
#: keeps what it read and wrote cached up to its limit (80 % of the machine by default), so
#: without a bound its memory would grow with the input. What it cannot give up is the commit's
#: new index entries (ART), ≈ 143–165 bytes per row written on a fresh store (measured at 100k,
#: 200k and 400k blocks of a full history; 256MB failed at 200k); the limit is sized for them.
COMMIT_BYTES_PER_ROW = 300
#: The least DuckDB is given while an ingest runs (staging and checks fit in it).
MIN_INGEST_MEMORY_MB = 256


class IngestMemory:
    """DuckDB's limit during one ingest: ``MEMVAULT_INGEST_MEMORY`` when set, else the least
    until :meth:`fit` sizes it for the rows the commit writes."""

    def __init__(self, store: Store | None, setting: str | None) -> None:
        self.store = store
        self.setting = setting
        self.limit = setting or f"{MIN_INGEST_MEMORY_MB}MiB"
        self.rows: int | None = None

    def fit(self, rows: int) -> None:
        """Size the limit for a commit writing ``rows`` rows into tables already holding
        as many index entries as ``audit_log`` has rows (their nodes may be rewritten)."""
        if self.store is None or self.setting:
            return
        stored = self.store.counts(("audit_log",))["audit_log"]
        self.rows = rows
        needed = -(-(rows + stored) * COMMIT_BYTES_PER_ROW // 2**20)
        self.limit = f"{max(MIN_INGEST_MEMORY_MB, needed)}MiB"
        q.set_memory_limit(self.store, self.limit)

    def describe(self) -> str:
        if self.setting:
            return f"MEMVAULT_INGEST_MEMORY={self.setting}"
        sized = f" for {self.rows:,} rows" if self.rows is not None else ""
        return f"MEMVAULT_INGEST_MEMORY unset: {self.limit}{sized}"


@contextmanager
def bounded_cache(store: Store, enabled: bool = True) -> Iterator[IngestMemory]:
    """DuckDB's memory limit bounded for the block (see :class:`IngestMemory`), then put
    back; nothing is set on PostgreSQL, an in-memory store, or when not ``enabled``."""
    path = getattr(store.backend, "path", ":memory:")
    if not enabled or store.kind != "duckdb" or path == ":memory:":
        yield IngestMemory(None, None)
        return
    memory = IngestMemory(store, os.environ.get("MEMVAULT_INGEST_MEMORY") or None)
    before = q.memory_limit(store)
    try:
        q.set_memory_limit(store, _size(memory.limit))
    except Exception as exc:
        raise StoreError(
            f"MEMVAULT_INGEST_MEMORY={memory.limit!r} is not a size such as 1GB"
        ) from exc
    try:
        yield memory
    except Exception as exc:
        if not _out_of_memory(exc):
            raise
        # DuckDB's own message names its settings, not ours; its connection may be unusable.
        raise StoreError(
            f"DuckDB ran out of the memory an ingest may use ({memory.describe()}); "
            "nothing of the input was written. Its one commit holds every new index entry "
            "(≈ 150–220 bytes per row written): set MEMVAULT_INGEST_MEMORY "
            "higher and ingest it again"
        ) from exc
    finally:
        with contextlib.suppress(Exception):
            q.set_memory_limit(store, _size(before))


def _out_of_memory(exc: BaseException) -> bool:
    """Whether DuckDB's running out of memory is what raised ``exc`` (itself, or what was
    being handled when a later statement on the invalidated connection failed)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__module__.startswith(("duckdb", "_duckdb")) and (
            "could not allocate" in str(current) or "failed to allocate" in str(current)
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


def _size(text: str) -> str:
    """A memory size safe to splice into ``SET`` (digits, a dot, space and a unit only)."""
    if not text or not all(ch.isalnum() or ch in ". " for ch in text):
        raise StoreError(f"not a memory size: {text!r}")
    return text
