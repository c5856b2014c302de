"""A DuckDB store held only while nobody else needs the file: how ``memvault serve`` opens it.

A DuckDB file has one writer process at a time, and an agent keeps its memory server up
for as long as it runs, nights included. So the server does not open the file itself: it
opens an in-memory DuckDB that ATTACHes the file (the file's lock exists only while it is
attached) and makes it the connection's current database, so every statement reads and
writes the file as a plain connection would.

When another process wants the file (a nightly job, the collector, the owner's ``status``),
:meth:`AttachedBackend.copy_and_detach` copies what the server answers from into a second,
in-memory database (:data:`COPIED`: the memories, their vectors, facts and what a recall
reads; every other table is there with its schema only), makes that the current database
and DETACHes the file: the lock goes with it. The server's own writes meanwhile land in the
copy (so a recall sees them at once) and wait in its durable queue for the file
(:mod:`memvault.serve.queue`). :meth:`AttachedBackend.try_attach` takes the file back
when it is free and drops the copy.

Switching is the caller's to time: no transaction may be open on any connection of the
backend (the server holds all its locks while it switches).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from contextlib import AbstractContextManager
from typing import Any

from memvault.errors import StoreError
from memvault.store.backends import DuckDBBackend, is_lock_conflict, sql_literal, while_locked

#: The file, while attached.
FILE = "memvault_file"
#: The in-memory copy, while the file is away.
COPY = "memvault_copy"

#: What the copy holds of each table (a ``WHERE`` over the file's rows, ``{file}`` naming the
#: file's database; None: every row). The memories and what a recall, ``remember``,
#: ``feedback`` and ``asof`` read; of the audit log only the last write to a fact (the mark
#: by which the facts cache knows whether a fact changed); of the runs those still running
#: (an ingest checks them). The other tables (the audit log, graph edges, caches of the
#: night) are copied empty: what lands there meanwhile is dropped with the copy.
COPIED: dict[str, str | None] = {
    "schema_version": None,
    "sessions": None,
    "blocks": None,
    "block_originals": None,
    "entities": None,
    "mentions": None,
    "triples": None,
    "embeddings": "target_kind = 'block'",
    "recall_log": None,
    "feedback": None,
    "knowledge_gap": None,
    "prefetch_cache": None,
    "profile_daily": None,
    "skills": None,
    "runs": "status = 'running'",
    "audit_log": (
        "id = (SELECT max(id) FROM {file}.main.audit_log WHERE target_table = 'triples')"
    ),
}


#: Tables the server never writes (a fact or a mention comes from the night, a remember writes a
#: block): copied without their keys, which cost most of the copy (400k mentions: 2.0 s with
#: the primary key, 0.2 s without).
UNKEYED = frozenset({"mentions", "triples"})


class AttachedBackend(DuckDBBackend):
    """A DuckDB store file seen through an in-memory DuckDB that can let go of it."""

    name = "duckdb"
    detachable = True

    def __init__(self, url: str, path: str) -> None:
        import duckdb

        if path == ":memory:":
            raise StoreError("an in-memory store has no file to attach")
        self.url = url
        self.path = path
        self._depth = 0
        self.con = duckdb.connect(":memory:")
        #: Every connection of this backend (this one and its twins), switched together.
        self._connections: weakref.WeakSet[AttachedBackend] = weakref.WeakSet()
        self._connections.add(self)
        self._owner = self
        #: The database statements go to: the file, or the copy while the file is away.
        self.current = FILE
        while_locked(url, path, self._attach)
        self._use(FILE)

    # -- holding and letting go -----------------------------------------------------------------

    @property
    def attached(self) -> bool:
        """Whether the file is attached (else the copy answers)."""
        return self._owner.current == FILE

    def copy_and_detach(self, switch_lock: AbstractContextManager[Any] | None = None) -> float:
        """Copy what the server answers from into memory, switch every connection to the copy
        and detach the file (its lock released); returns the seconds it took.

        The copy is made on a connection of its own, one snapshot of the file, while the
        other connections go on reading the file; only the switch takes ``switch_lock``
        (the caller's: no statement of another connection may run during it). Nothing may
        write to the file meanwhile: what it wrote after the snapshot would not be in the
        copy."""
        owner = self._owner
        if not owner.attached:
            return 0.0
        started = time.perf_counter()
        con = owner.con.cursor()
        try:
            with contextlib.suppress(Exception):
                con.execute(f"DETACH {COPY}")  # a copy left by a failed switch
            con.execute(f"ATTACH ':memory:' AS {COPY}")
            try:
                con.execute(f"COPY FROM DATABASE {FILE} TO {COPY} (SCHEMA)")
                con.execute("BEGIN TRANSACTION")
                try:
                    for table, where in COPIED.items():
                        if not _has_table(con, table):
                            continue
                        rows = f"SELECT * FROM {FILE}.main.{table}"
                        if where:
                            rows += " WHERE " + where.format(file=FILE)
                        if table in UNKEYED:
                            con.execute(f"DROP TABLE {COPY}.main.{table}")
                            con.execute(f"CREATE TABLE {COPY}.main.{table} AS {rows}")
                        else:
                            con.execute(f"INSERT INTO {COPY}.main.{table} {rows}")
                    con.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(Exception):
                        con.execute("ROLLBACK")
                    raise
            except BaseException:
                with contextlib.suppress(Exception):
                    con.execute(f"DETACH {COPY}")
                raise
        finally:
            con.close()
        with switch_lock or contextlib.nullcontext():
            owner._switch(COPY)
            owner.con.execute(f"DETACH {FILE}")
        return time.perf_counter() - started

    def try_attach(self) -> bool:
        """Take the file back if no other process holds it (the copy is dropped); False
        while another does. True at once when it is attached already."""
        import duckdb

        owner = self._owner
        if owner.attached:
            return True
        try:
            owner._attach()
        except duckdb.IOException as exc:
            if is_lock_conflict(exc):
                return False
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        owner._switch(FILE)
        with contextlib.suppress(Exception):
            owner.con.execute(f"DETACH {COPY}")
        return True

    def _attach(self) -> None:
        self.con.execute(f"ATTACH {sql_literal(self.path)} AS {FILE}")

    def _switch(self, database: str) -> None:
        """Make ``database`` the current one of every connection of this backend."""
        self.current = database
        for backend in list(self._connections):
            backend._use(database)

    def _use(self, database: str) -> None:
        self.con.execute(f"USE {database}")

    # -- connections ----------------------------------------------------------------------------

    def twin(self) -> AttachedBackend:
        """A second connection (for another thread), switched along with this one."""
        other = AttachedBackend.__new__(AttachedBackend)
        other.url, other.path, other._depth = self.url, self.path, 0
        other._owner = self._owner
        other._connections = self._owner._connections
        other.con = self._owner.con.cursor()
        other.current = self._owner.current
        other._use(self._owner.current)
        self._owner._connections.add(other)
        return other

    def close(self) -> None:
        if self is self._owner:
            for backend in list(self._connections):
                if backend is not self:
                    with contextlib.suppress(Exception):
                        backend.con.close()
        else:
            self._connections.discard(self)
        self.con.close()


def _has_table(con: Any, table: str) -> bool:
    rows = con.execute(
        "SELECT 1 FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main' "
        "AND table_name = ?",
        [FILE, table],
    ).fetchall()
    return bool(rows)


def detachable(backend: Any) -> AttachedBackend | None:
    """The backend as an :class:`AttachedBackend`, or None (PostgreSQL, a plain DuckDB file)."""
    return backend if isinstance(backend, AttachedBackend) else None
