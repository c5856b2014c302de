"""Snapshots of a whole store, restorable into a new one.

DuckDB: ``EXPORT DATABASE`` to a directory (parquet). PostgreSQL: every table copied into a
snapshot schema beside the store's, in one REPEATABLE READ transaction. A snapshot is named
by a *location*: ``duckdb-export:<directory>`` or ``postgresql-schema:<schema>``.
:func:`restore_snapshot` restores one into a new, empty store, never over a live one.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from memvault.errors import StoreError
from memvault.store.backends import Backend, PostgresBackend, ident, sql_literal
from memvault.store.connection import connect
from memvault.store.store import Store


def _pg_schema(backend: Backend) -> str:
    if not isinstance(backend, PostgresBackend):
        raise StoreError("a schema snapshot needs a PostgreSQL store")
    return backend.schema


def schema_tables(store: Store, schema: str) -> list[str]:
    """The base tables of a PostgreSQL schema, by name."""
    return [str(r[0]) for r in store.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = :s "
        "AND table_type = 'BASE TABLE' ORDER BY 1", {"s": schema})]  # fmt: skip


def take_snapshot(
    store: Store, label: str, at: dt.datetime, directory: str | Path | None = None
) -> str:
    """Snapshot ``store`` now; returns its location. ``label`` and ``at`` name it; a DuckDB
    export goes under ``directory`` (default: ``<store file>.backups`` beside the store)."""
    stamp = f"{at:%Y%m%dT%H%M%S%f}"
    backend = store.backend
    if backend.name == "duckdb":
        base = Path(directory) if directory else None
        path = getattr(backend, "path", ":memory:")
        if base is None:
            if path == ":memory:":
                raise StoreError("an in-memory DuckDB store has no place for a backup")
            base = Path(path).with_name(Path(path).name + ".backups")
        target = base / f"{label}-{stamp}"
        target.parent.mkdir(parents=True, exist_ok=True)
        # No parameters here: the path is quoted, never spliced in as it is.
        backend.execute_script(f"EXPORT DATABASE {sql_literal(target.as_posix())} (FORMAT parquet)")
        return f"duckdb-export:{target}"
    schema = _pg_schema(backend)
    snapshot = ident(f"{schema[:36]}_bk_{stamp.replace('T', '')}")  # ≤ 63 chars
    tables = schema_tables(store, schema)
    with backend.transaction():
        backend.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        backend.execute(f"CREATE SCHEMA {snapshot}")
        for table in tables:
            backend.execute(
                f"CREATE TABLE {snapshot}.{ident(table)} AS TABLE {ident(schema)}.{ident(table)}"
            )
    return f"postgresql-schema:{snapshot}"


def restore_snapshot(location: str, target_url: str) -> Store:
    """Restore the snapshot at ``location`` into a new, empty store at ``target_url``."""
    import memvault

    kind, _, where = location.partition(":")
    if kind == "duckdb-export":
        if not target_url.startswith("duckdb:"):
            raise StoreError("a DuckDB export restores into a duckdb:// store")
        backend = connect(target_url)
        try:
            if backend.fetch(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
            )[0][0]:
                raise StoreError(f"{target_url} is not empty; restore into a new store")
            backend.execute_script(f"IMPORT DATABASE {sql_literal(Path(where).as_posix())}")
        finally:
            backend.close()
        return memvault.open(target_url)
    if kind == "postgresql-schema":
        snapshot = ident(where)
        target = memvault.open(target_url)
        backend = target.backend
        schema = _pg_schema(backend)
        if schema == snapshot:
            raise StoreError("restore into another schema than the snapshot's")
        tables = schema_tables(target, snapshot)
        with backend.transaction():
            for table in tables:
                if table == "schema_version":
                    continue
                cols = [c for c, _ in backend.columns(table)]
                backend.execute(
                    f"INSERT INTO {ident(schema)}.{ident(table)} ({', '.join(map(ident, cols))}) "
                    f"SELECT {', '.join(map(ident, cols))} FROM {snapshot}.{ident(table)}"
                )
            # Audit ids come from a sequence: continue after the restored rows.
            backend.execute(
                "SELECT setval('audit_log_seq', GREATEST((SELECT max(id) FROM audit_log), 1))"
            )
        return target
    raise StoreError(f"unknown backup location {location!r}")


def drop_snapshot(store: Store, location: str) -> None:
    """Remove a PostgreSQL snapshot schema (a DuckDB export is a directory: left as it is)."""
    kind, _, where = location.partition(":")
    if kind == "postgresql-schema":
        store.backend.execute(f"DROP SCHEMA IF EXISTS {ident(where)} CASCADE")
