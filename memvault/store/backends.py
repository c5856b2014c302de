"""The two database backends behind one small interface.

Everything above this module speaks portable SQL with ``:name`` parameters
and polars DataFrames; the differences (parameter style, bulk loading,
connection handling) stay here.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import polars as pl

from memvault.errors import StoreError

_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
T = TypeVar("T")


def sql_literal(text: str) -> str:
    """``text`` as a quoted SQL string literal, for the few statements that take no parameters
    (DuckDB's ``EXPORT`` / ``IMPORT DATABASE``): single quotes doubled, NUL refused."""
    if "\x00" in text:
        raise StoreError(f"a NUL character cannot be part of an SQL string: {text!r}")
    return "'" + text.replace("'", "''") + "'"


#: Past this many values, :func:`in_list` binds one list (``= ANY``) instead.
MAX_IN_LIST = 1000


def in_list(column: str, name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """``column IN (:name0, :name1, ...)`` with its parameters: for the few dozen blocks a
    recall reads, DuckDB answers it two to three times faster than ``column = ANY(:name)``
    (same rows on every backend); a long list is bound as one value."""
    if len(values) > MAX_IN_LIST:
        return f"{column} = ANY(:{name})", {name: list(values)}
    params = {f"{name}{k}": v for k, v in enumerate(values)}
    return f"{column} IN ({', '.join(':' + p for p in params)})", params


def lock_timeout() -> float:
    """Seconds to wait for a DuckDB file another process holds (``MEMVAULT_LOCK_TIMEOUT``)."""
    value = os.environ.get("MEMVAULT_LOCK_TIMEOUT") or "30"
    try:
        return max(0.0, float(value))
    except ValueError:
        raise StoreError(f"MEMVAULT_LOCK_TIMEOUT={value!r} is not a number of seconds") from None


#: Seconds between two requests to a running ``memvault serve`` to let go of a DuckDB file.
RELEASE_ASK_EVERY = 1.0


def is_lock_conflict(exc: BaseException) -> bool:
    """Whether a DuckDB error says another process holds the file's lock."""
    return "lock" in str(exc).lower()


def while_locked(url: str, path: str, attempt: Callable[[], T]) -> T:
    """``attempt()`` (an open of the DuckDB file at ``path``), tried again while another
    process holds the file, for at most ``MEMVAULT_LOCK_TIMEOUT`` seconds (default 30), then
    a :class:`StoreError` that says who holds it.

    A running ``memvault serve`` holds the file between its calls; it lets go when asked
    (it answers from memory meanwhile), so each conflict asks it to, at most once a second.
    Every process that opens the store goes through here: each nightly job's step, the
    collector, and the owner's ``status``, ``export``, ``runs`` or ``undo``."""
    import duckdb

    timeout = lock_timeout()
    deadline = time.monotonic() + timeout
    pause, asked = 0.02, float("-inf")
    while True:
        try:
            return attempt()
        except duckdb.IOException as exc:
            if not is_lock_conflict(exc):
                raise StoreError(f"cannot open {path}: {exc}") from exc
            holder = re.search(r"\(PID (\d+)\)", str(exc))
            now = time.monotonic()
            if now - asked >= RELEASE_ASK_EVERY and (holder is None or int(holder.group(1)) != os.getpid()):  # fmt: skip
                asked = now
                _ask_server_to_let_go(url)
            if time.monotonic() + pause > deadline:
                who = f" (PID {holder.group(1)})" if holder else ""
                raise StoreError(
                    f"{path} is locked by another process{who} (a DuckDB file has one "
                    f"writer at a time); waited {timeout:g} s (MEMVAULT_LOCK_TIMEOUT): "
                    "let it finish, or stop it"
                ) from exc
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def _ask_server_to_let_go(url: str) -> None:
    """Ask the ``memvault serve`` of ``url``, if one runs, to let go of the file (best effort:
    no server, or one that does not answer, changes nothing here)."""
    try:
        from memvault.serve.client import request_release

        request_release(url)
    except Exception:  # the open is tried again either way
        return


def ident(name: str) -> str:
    """A table or column name that is safe to splice into SQL (ours only, never user text)."""
    if not _IDENT.match(name):
        raise StoreError(f"not a valid SQL identifier: {name!r}")
    return name


class Backend(Protocol):
    """What the store needs from a database."""

    name: str
    url: str

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> None: ...
    def execute_count(self, sql: str, params: Mapping[str, Any] | None = None) -> int: ...
    def execute_script(self, sql: str) -> None: ...
    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]: ...
    def fetch_df(self, sql: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame: ...
    def insert_df(
        self,
        table: str,
        df: pl.DataFrame,
        *,
        key: Sequence[str] = ("id",),
        on_conflict: str = "ignore",
    ) -> list[Any]: ...
    def columns(self, table: str) -> list[tuple[str, str]]: ...
    def staged(self, table: str, df: pl.DataFrame) -> Any: ...
    def transaction(self) -> Any: ...
    def twin(self) -> Backend: ...
    def close(self) -> None: ...


def _conflict_clause(df: pl.DataFrame, key: Sequence[str], on_conflict: str) -> str:
    keys = ", ".join(ident(k) for k in key)
    if on_conflict == "ignore":
        return f"ON CONFLICT ({keys}) DO NOTHING"
    if on_conflict == "replace":
        updates = ", ".join(f"{ident(c)} = excluded.{ident(c)}" for c in df.columns if c not in key)
        return f"ON CONFLICT ({keys}) DO UPDATE SET {updates}"
    if on_conflict == "error":
        return ""
    raise StoreError(f"unknown on_conflict policy {on_conflict!r}")


class _BulkInsert:
    """Bulk insert shared by both backends: filter out existing keys, then append in bulk."""

    def staged(self, table: str, df: pl.DataFrame) -> Any:
        raise NotImplementedError

    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def append_df(self, table: str, df: pl.DataFrame) -> None:
        """Append rows known to be new (the fastest path each backend has)."""
        raise NotImplementedError

    def insert_df(
        self,
        table: str,
        df: pl.DataFrame,
        *,
        key: Sequence[str] = ("id",),
        on_conflict: str = "ignore",
    ) -> list[Any]:
        """Insert the rows of ``df``; returns the keys of the rows actually inserted.

        ``ignore`` leaves rows whose key exists alone, ``replace`` overwrites them,
        ``error`` appends and lets the database reject duplicates.
        """
        if df.is_empty():
            return []
        if on_conflict == "replace" or len(key) != 1:
            with self.staged(table, df) as staging:
                rows = self.fetch(_insert_sql(table, df, staging, key, on_conflict))
            return [r[0] if len(key) == 1 else r for r in rows]
        column = key[0]
        if on_conflict == "ignore":
            existing = self.fetch(
                f"SELECT {ident(column)} FROM {ident(table)} "
                f"WHERE {ident(column)} IN (SELECT unnest(CAST(:keys AS TEXT[])))",
                {"keys": df[column].cast(pl.Utf8).to_list()},
            )
            if existing:
                df = df.filter(~pl.col(column).is_in([r[0] for r in existing]))
            if df.is_empty():
                return []
        elif on_conflict != "error":
            raise StoreError(f"unknown on_conflict policy {on_conflict!r}")
        self.append_df(table, df)
        return df[column].to_list() if column in df.columns else []


class DuckDBBackend(_BulkInsert):
    """The embedded default: one file, one writer process at a time."""

    name = "duckdb"

    def __init__(self, url: str, path: str, *, read_only: bool = False) -> None:

        self.url = url
        self.path = path
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.con = self._connect(url, path, read_only)
        self._depth = 0

    @staticmethod
    def _connect(url: str, path: str, read_only: bool) -> Any:
        """Open the file, waiting while another process holds it (see :func:`while_locked`)."""
        import duckdb

        return while_locked(url, path, lambda: duckdb.connect(path, read_only=read_only))

    @staticmethod
    def _sql(sql: str) -> str:
        return _PARAM.sub(r"$\1", sql)

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        self.con.execute(self._sql(sql), dict(params) if params else None)

    def execute_count(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run an INSERT, UPDATE or DELETE; returns the rows it changed."""
        rows = self.con.execute(self._sql(sql), dict(params) if params else None).fetchall()
        return int(rows[0][0]) if rows else 0

    def execute_script(self, sql: str) -> None:
        self.con.execute(sql)

    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self.con.execute(self._sql(sql), dict(params) if params else None).fetchall()

    def fetch_df(self, sql: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame:
        relation = self.con.sql(self._sql(sql), params=dict(params) if params else None)
        if relation is None:  # not a query
            return pl.DataFrame()
        table = relation.to_arrow_table()
        return pl.from_arrow(table)  # type: ignore[return-value]

    @contextmanager
    def staged(self, table: str, df: pl.DataFrame) -> Iterator[str]:
        """``df`` visible to SQL under the returned name for the duration of the block."""
        view = f"_staging_{ident(table)}"
        self.con.register(view, df.to_arrow())
        try:
            yield view
        finally:
            self.con.unregister(view)

    def append_df(self, table: str, df: pl.DataFrame) -> None:
        cols = ", ".join(ident(c) for c in df.columns)
        with self.staged(table, df) as view:
            self.con.execute(f"INSERT INTO {ident(table)} ({cols}) SELECT {cols} FROM {view}")

    def columns(self, table: str) -> list[tuple[str, str]]:
        rows = self.con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = ? AND table_schema = current_schema() ORDER BY ordinal_position",
            [table],
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.con.execute("BEGIN TRANSACTION")
        self._depth = 1
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        else:
            try:
                self.con.execute("COMMIT")
            except BaseException:
                # A failed COMMIT leaves the transaction open (aborted): end it, or every
                # later statement on this connection fails too.
                with contextlib.suppress(Exception):
                    self.con.execute("ROLLBACK")
                raise
        finally:
            self._depth = 0

    def twin(self) -> DuckDBBackend:
        """A second connection to the same open database (its own transactions), for another
        thread of this process: DuckDB lets one process open a file once, not twice."""
        other = DuckDBBackend.__new__(DuckDBBackend)
        other.url, other.path, other._depth = self.url, self.path, 0
        other.con = self.con.cursor()
        return other

    def close(self) -> None:
        self.con.close()


class PostgresBackend(_BulkInsert):
    """The shared deployment: PostgreSQL, one schema per store (``?schema=``, default memvault)."""

    name = "postgresql"

    def __init__(self, url: str) -> None:
        from memvault.config import masked_url

        # The store's URL as shown everywhere keeps its password masked (it is in the env).
        self.url = masked_url(url)
        self.con, self.schema = _pg_connect(url)
        self.con.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
        self.con.execute(f"SET search_path TO {self.schema}")
        self._tx: Any = None

    @staticmethod
    def _sql(sql: str) -> str:
        return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        if params:
            self.con.execute(self._sql(sql), dict(params))
        else:
            self.con.execute(sql)

    def execute_count(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run an INSERT, UPDATE or DELETE; returns the rows it changed."""
        cur = self.con.execute(self._sql(sql), dict(params)) if params else self.con.execute(sql)
        return max(int(cur.rowcount), 0)

    def execute_script(self, sql: str) -> None:
        self.con.execute(sql)

    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        cur = self.con.execute(self._sql(sql), dict(params)) if params else self.con.execute(sql)
        return cur.fetchall()

    def fetch_df(self, sql: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame:
        cur = self.con.execute(self._sql(sql), dict(params)) if params else self.con.execute(sql)
        names = [d.name for d in cur.description or []]
        rows = cur.fetchall()
        if not rows:
            return pl.DataFrame({n: [] for n in names})
        return pl.DataFrame(rows, schema=names, orient="row", infer_schema_length=None)

    @contextmanager
    def staged(self, table: str, df: pl.DataFrame) -> Iterator[str]:
        """``df`` copied into a temporary table typed like ``table``; its name is yielded."""
        staging = f"_staging_{ident(table)}"
        cols = ", ".join(ident(c) for c in df.columns)
        with self.transaction():
            # Only the frame's columns, typed like the table's, without its constraints.
            self.con.execute(f"DROP TABLE IF EXISTS {staging}")
            self.con.execute(
                f"CREATE TEMP TABLE {staging} AS SELECT {cols} FROM {ident(table)} WITH NO DATA"
            )
            with self.con.cursor().copy(f"COPY {staging} ({cols}) FROM STDIN (FORMAT csv)") as copy:
                copy.write(_csv_for_copy(df))
            yield staging

    def append_df(self, table: str, df: pl.DataFrame) -> None:
        # COPY straight into the table: no staging table, no second pass over the rows.
        cols = ", ".join(ident(c) for c in df.columns)
        with self.con.cursor().copy(
            f"COPY {ident(table)} ({cols}) FROM STDIN (FORMAT csv)"
        ) as copy:
            copy.write(_csv_for_copy(df))

    def columns(self, table: str) -> list[tuple[str, str]]:
        rows = self.con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = %s AND table_schema = %s ORDER BY ordinal_position",
            [table, self.schema],
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._tx is not None:
            yield
            return
        with self.con.transaction() as tx:
            self._tx = tx
            try:
                yield
            finally:
                self._tx = None

    def twin(self) -> PostgresBackend:
        """A second connection to the same schema, for another thread of this process."""
        return PostgresBackend(self.url)

    def close(self) -> None:
        self.con.close()


def _insert_sql(
    table: str, df: pl.DataFrame, staging: str, key: Sequence[str], on_conflict: str
) -> str:
    cols = ", ".join(ident(c) for c in df.columns)
    returning = ", ".join(ident(k) for k in key)
    return (
        f"INSERT INTO {ident(table)} ({cols}) SELECT {cols} FROM {staging} "
        f"{_conflict_clause(df, key, on_conflict)} RETURNING {returning}"
    )


def _csv_for_copy(df: pl.DataFrame) -> bytes:
    """CSV that COPY reads back exactly: nulls unquoted-empty, bytes as bytea hex."""
    binary = [c for c, t in df.schema.items() if t == pl.Binary]
    if binary:
        df = df.with_columns(
            pl.when(pl.col(c).is_null())
            .then(None)
            .otherwise(pl.lit("\\x") + pl.col(c).bin.encode("hex"))
            .alias(c)
            for c in binary
        )
    buf = io.BytesIO()
    df.write_csv(buf, include_header=False, datetime_format="%Y-%m-%dT%H:%M:%S%.6f", null_value="")
    return buf.getvalue()


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    return url


def _pg_connect(url: str) -> tuple[Any, str]:
    """A connection (autocommit) to the PostgreSQL server a store URL names, and the store's
    schema (``?schema=``, default memvault)."""
    import psycopg

    from memvault.config import unmasked_url

    url = unmasked_url(url)
    parts = urlsplit(url)
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    schema = ident(query.pop("schema", "memvault"))
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(query), ""))
    try:
        return psycopg.connect(conninfo, autocommit=True), schema
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(f"cannot connect to PostgreSQL at {_redact(url)}: {reason}") from exc


def store_exists(url: str) -> bool:
    """Whether the store a URL names has been made (``memvault init``), found without
    creating anything: the DuckDB file exists, or the PostgreSQL schema has memvault's
    tables. An in-memory store always exists."""
    scheme = url.split(":", 1)[0].lower()
    if scheme == "duckdb":
        path = url[len("duckdb://") :] if url.startswith("duckdb://") else url[len("duckdb:") :]
        return path in ("", "/:memory:", ":memory:") or Path(path).expanduser().is_file()
    if scheme in ("postgresql", "postgres"):
        con, schema = _pg_connect(url)
        try:
            row = con.execute("SELECT to_regclass(%s)", [f"{schema}.schema_version"]).fetchone()
        finally:
            con.close()
        return bool(row and row[0])
    return True  # an unknown scheme: opening it says what is wrong
