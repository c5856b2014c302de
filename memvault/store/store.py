"""The memvault store: one interface over DuckDB and PostgreSQL.

``Store.open(url)`` connects, applies pending forward migrations from
``sql/migrations`` and hands out the audited write path (``store.mutation``).
Reads are plain SQL returning tuples or polars DataFrames.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import polars as pl

from memvault.errors import StoreError
from memvault.ids import new_run_id
from memvault.normalize import utcnow
from memvault.paths import data_dir, sql_text
from memvault.store.backends import Backend, ident
from memvault.store.connection import connect
from memvault.store.liveness import HOST, abandoned_because, carrier_pid
from memvault.store.tables import COUNTED_TABLES, JSON_COLUMNS

_POLARS_TYPES: dict[str, pl.DataType] = {
    "varchar": pl.Utf8(),
    "text": pl.Utf8(),
    "double": pl.Float64(),
    "double precision": pl.Float64(),
    "boolean": pl.Boolean(),
    "timestamp": pl.Datetime("us"),
    "timestamp without time zone": pl.Datetime("us"),
    "integer": pl.Int32(),
    "bigint": pl.Int64(),
    "date": pl.Date(),
    "blob": pl.Binary(),
    "bytea": pl.Binary(),
}


class Store:
    """A connection to one memvault store (see ``memvault.open``)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._schemas: dict[str, dict[str, pl.DataType]] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls, url: str, *, read_only: bool = False, migrate: bool = True, detachable: bool = False
    ) -> Store:
        """Connect (and migrate). ``detachable``: a DuckDB file is held only while no other
        process asks for it (see :mod:`memvault.store.attached`)."""
        store = cls(connect(url, read_only=read_only, detachable=detachable))
        if migrate and not read_only:
            store.migrate()
        return store

    @property
    def url(self) -> str:
        return self.backend.url

    @property
    def kind(self) -> str:
        return self.backend.name

    def close(self) -> None:
        self.backend.close()

    def twin(self) -> Store:
        """Another connection to this store (already migrated), for a second thread: a
        connection is never shared by threads, and two connections read and write at once."""
        return Store(self.backend.twin())

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema ------------------------------------------------------------------------------

    def schema_version(self) -> int:
        try:
            rows = self.backend.fetch("SELECT max(version) FROM schema_version")
        except Exception:
            return 0
        return int(rows[0][0] or 0)

    def migrate(self) -> list[int]:
        """Apply every migration newer than the store's version, each in its own transaction."""
        current = self.schema_version()
        applied: list[int] = []
        for path in sorted(data_dir("sql").joinpath("migrations").glob("*.sql")):
            version = int(path.name.split("_", 1)[0])
            if version <= current:
                continue
            try:
                with self.backend.transaction():
                    self.backend.execute_script(path.read_text(encoding="utf-8"))
                    self.backend.execute(
                        "INSERT INTO schema_version (version, name, applied_at) VALUES (:v, :n, :t)",
                        {"v": version, "n": path.stem, "t": utcnow()},
                    )
            except Exception as exc:
                raise StoreError(f"migration {path.name} failed on {self.kind}: {exc}") from exc
            applied.append(version)
        self._schemas.clear()
        return applied

    def table_schema(self, table: str) -> dict[str, pl.DataType]:
        """Column name → polars dtype, read from the database once per table."""
        if table not in self._schemas:
            cols = self.backend.columns(table)
            if not cols:
                raise StoreError(f"table {table!r} does not exist in this store")
            self._schemas[table] = {
                name: _POLARS_TYPES.get(kind.lower(), pl.Utf8()) for name, kind in cols
            }
        return self._schemas[table]

    def conform(self, table: str, df: pl.DataFrame) -> pl.DataFrame:
        """``df`` cast to the table's column types (unknown columns are an error)."""
        schema = self.table_schema(table)
        unknown = [c for c in df.columns if c not in schema]
        if unknown:
            raise StoreError(f"table {table} has no column(s) {', '.join(unknown)}")
        return df.select(pl.col(c).cast(schema[c], strict=False) for c in df.columns)

    # -- reads -------------------------------------------------------------------------------

    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self.backend.fetch(sql, params)

    def fetch_df(self, sql: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame:
        return self.backend.fetch_df(sql, params)

    def query(self, name: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame:
        """Run the named query ``sql/queries/<name>.sql``."""
        return self.backend.fetch_df(sql_text(f"queries/{name}.sql"), params)

    def get_row(self, table: str, row_id: str) -> dict[str, Any] | None:
        df = self.fetch_df(f"SELECT * FROM {ident(table)} WHERE id = :id", {"id": row_id})
        return df.row(0, named=True) if df.height else None

    def read_table(
        self, table: str, where: str = "", params: Mapping[str, Any] | None = None
    ) -> pl.DataFrame:
        """A whole table (optionally filtered), ordered by id, typed as in the database."""
        sql = f"SELECT * FROM {ident(table)} {('WHERE ' + where) if where else ''} ORDER BY 1"
        df = self.fetch_df(sql, params)
        if df.is_empty():
            return pl.DataFrame(schema=self.table_schema(table))
        return df

    def counts(self, tables: tuple[str, ...] = COUNTED_TABLES) -> dict[str, int]:
        sql = " UNION ALL ".join(f"SELECT '{t}', count(*) FROM {ident(t)}" for t in tables)
        return {name: int(n) for name, n in self.fetch(sql)}

    # -- writes ------------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.backend.transaction():
            yield

    @contextmanager
    def mutation(self, run_id: str, phase: str) -> Iterator[Any]:
        """The one audited write path: every change inside is logged in the same transaction."""
        from memvault.store.audit import Mutation

        with self.backend.transaction():
            yield Mutation(self, run_id, phase)

    # -- runs --------------------------------------------------------------------------------

    def begin_run(
        self, kind: str, params: Mapping[str, Any] | None = None, run_id: str | None = None
    ) -> str:
        run_id = run_id or new_run_id(kind)
        self.fail_abandoned_runs()  # a run killed earlier, of any kind, is closed, not left open
        existing = self.get_row("runs", run_id)
        now = utcnow()
        if existing is None:
            self.backend.execute(
                "INSERT INTO runs (id, kind, status, started_at, params, host, pid, heartbeat_at) "
                "VALUES (:id, :k, 'running', :t, :p, :host, :pid, :t)",
                {
                    "id": run_id,
                    "k": kind,
                    "t": now,
                    "p": json.dumps(dict(params or {}), default=str),
                    "host": HOST,
                    "pid": carrier_pid(),
                },
            )
        else:  # a resumed run keeps its id and history
            self.backend.execute(
                "UPDATE runs SET status = 'running', error = NULL, host = :host, pid = :pid, "
                "heartbeat_at = :t WHERE id = :id",
                {"id": run_id, "host": HOST, "pid": carrier_pid(), "t": now},
            )
        return run_id

    def record_run(
        self, run_id: str, kind: str, at: dt.datetime, params: Mapping[str, Any] | None = None
    ) -> None:
        """A run that starts and succeeds at ``at`` (a foreground write such as a recall), in
        one statement, so ``memvault runs`` and ``undo`` know it."""
        self.backend.execute(
            "INSERT INTO runs (id, kind, status, started_at, finished_at, params, host, pid, "
            "heartbeat_at) VALUES (:id, :k, 'succeeded', :t, :t, :p, :h, :pid, :t)",
            {
                "id": run_id,
                "k": kind,
                "t": at,
                "p": json.dumps(dict(params or {}), default=str),
                "h": HOST,
                "pid": carrier_pid(),
            },
        )

    def heartbeat(self, run_id: str) -> None:
        """This process carries the run on now (each stage of a run may be its own process)."""
        self.backend.execute(
            "UPDATE runs SET host = :host, pid = :pid, heartbeat_at = :t WHERE id = :id",
            {"id": run_id, "host": HOST, "pid": carrier_pid(), "t": utcnow()},
        )

    def fail_abandoned_runs(self, kinds: tuple[str, ...] | None = None) -> list[str]:
        """Close the ``running`` runs whose process is gone: marked failed, and a dream's
        writes reverted (it is all or nothing); one line per run closed."""
        from memvault.ingest_staging import drop_abandoned_staging
        from memvault.store.revert import ALL_OR_NOTHING, revert_run

        drop_abandoned_staging(self)  # what a killed ingest staged was never visible: dropped
        rows = self.fetch(
            "SELECT id, kind, host, pid, heartbeat_at FROM runs WHERE status = 'running' "
            "ORDER BY started_at, id"
        )
        now, marked = utcnow(), []
        for run_id, kind, host, pid, heartbeat in rows:
            if kinds is not None and kind not in kinds:
                continue
            why = abandoned_because(host, pid, heartbeat, now)
            if why is None:
                continue
            if kind in ALL_OR_NOTHING:
                report = revert_run(self, run_id, f"abandoned: {why}")
                marked.append(
                    f"{kind} run {run_id} failed and was reverted: {why}; {report.describe()}"
                )
                continue
            self.backend.execute(
                "UPDATE runs SET status = 'failed', finished_at = :t, error = :e "
                "WHERE id = :id AND status = 'running'",
                {"id": run_id, "t": now, "e": f"abandoned: {why}"},
            )
            marked.append(f"{kind} run {run_id} marked failed: {why}")
        return marked

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """A transaction that no other process runs under the same name at the same time
        (PostgreSQL: an advisory lock; DuckDB has one writer process anyway)."""
        with self.backend.transaction():
            if self.kind == "postgresql":
                self.backend.execute("SELECT pg_advisory_xact_lock(hashtext(:n))", {"n": name})
            yield

    def finish_run(
        self,
        run_id: str,
        status: str,
        stats: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        with self.backend.transaction():
            self.backend.execute(
                "UPDATE runs SET status = :s, finished_at = :t, stats = :st, error = :e "
                "WHERE id = :id",
                {
                    "id": run_id,
                    "s": status,
                    "t": utcnow(),
                    "st": json.dumps(dict(stats or {}), default=str),
                    "e": error,
                },
            )
            if status in ("succeeded", "dry-run"):  # what it wrote stands: no copy to put back
                from memvault.store.revert import drop_prior

                drop_prior(self, run_id)

    def run(self, run_id: str) -> dict[str, Any] | None:
        row = self.get_row("runs", run_id)
        if row:
            for col in JSON_COLUMNS["runs"]:
                row[col] = json.loads(row[col] or "{}")
        return row

    def last_run(self, kind: str, status: str = "succeeded") -> dict[str, Any] | None:
        rows = self.fetch(
            "SELECT id FROM runs WHERE kind = :k AND status = :s ORDER BY started_at DESC, id DESC LIMIT 1",
            {"k": kind, "s": status},
        )
        return self.run(rows[0][0]) if rows else None


def as_utc(value: dt.datetime | None) -> dt.datetime | None:
    """Times come out of the store naive (UTC by convention); this marks them as UTC."""
    return value.replace(tzinfo=dt.UTC) if value is not None and value.tzinfo is None else value
