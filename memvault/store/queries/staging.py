"""The SQL over an ingest's staging tables (:mod:`memvault.ingest_staging`): made like the
memory table they feed, checked, resolved and read back. Each function takes the database the
staging lives in (the store's backend, or the ingesting process's in-memory DuckDB), so the
same checks run on both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from memvault.store.backends import Backend, ident

#: The input line of each staged row (for the problems found later); not a store column.
LINE = "_line"
#: Each staged row's place in the input (unique; the order rows are written in).
SEQ = "_seq"
#: A table of ids that holds none (what a lookup of nothing found is checked against).
NO_IDS = "(SELECT CAST(NULL AS VARCHAR) AS id LIMIT 0)"


# -- making and filling ----------------------------------------------------------------------


def create_like(db: Backend, table: str, target: str, *, unlogged: bool = False) -> None:
    """``table`` made empty, typed like ``target`` plus ``_line`` and ``_seq``, without its
    constraints (the checks are the ingest's)."""
    kind = "UNLOGGED TABLE" if unlogged else "TABLE"
    db.execute(
        f"CREATE {kind} {table} AS SELECT *, CAST(NULL AS BIGINT) AS {LINE}, "
        f"CAST(NULL AS BIGINT) AS {SEQ} FROM {ident(target)} WHERE false"
    )


def index_order(db: Backend, table: str) -> None:
    """Index ``table``'s read-back order and refresh its statistics (PostgreSQL)."""
    db.execute(f"CREATE INDEX ON {table} ({SEQ})")
    db.execute(f"ANALYZE {table}")


def create_temp_from(db: Backend, table: str, view: str) -> None:
    """A temporary ``table`` holding the rows of ``view``."""
    db.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {view}")


def append_from(db: Backend, table: str, view: str) -> None:
    """The rows of ``view`` appended to ``table``, column by name."""
    db.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {view}")


def create_ids(db: Backend, table: str) -> None:
    """A temporary table of ids."""
    db.execute(f"CREATE TEMP TABLE {table} (id VARCHAR)")


def append_ids(db: Backend, table: str, ids: list[str]) -> None:
    db.execute(f"INSERT INTO {table} SELECT unnest(CAST(:ids AS VARCHAR[]))", {"ids": ids})


def drop(db: Backend, table: str) -> None:
    db.execute(f"DROP TABLE IF EXISTS {table}")


# -- checking --------------------------------------------------------------------------------


def clashes_sql(table: str, columns: list[str]) -> str:
    """SQL of the rows that repeat an earlier row's id with other content in ``columns``
    (``_line``, ``id``, ``first``: the earlier row's line)."""
    differs = " OR ".join(f"s.{ident(c)} IS DISTINCT FROM f.{ident(c)}" for c in columns)
    return (
        f"SELECT s.{LINE}, s.id, f.{LINE} AS first FROM {table} s "
        f"JOIN (SELECT id, min({SEQ}) AS seq FROM {table} GROUP BY id HAVING count(*) > 1) d "
        f"ON s.id = d.id JOIN {table} f ON f.{SEQ} = d.seq "
        f"WHERE s.{SEQ} <> d.seq AND ({differs})"
    )


def drop_repeats(db: Backend, table: str) -> int:
    """All but the first row of each id deleted; returns how many went."""
    [(repeats,)] = db.fetch(f"SELECT count(*) - count(DISTINCT id) FROM {table}")
    if repeats:
        db.execute(
            f"DELETE FROM {table} WHERE {SEQ} NOT IN (SELECT min({SEQ}) FROM {table} GROUP BY id)"
        )
    return int(repeats)


def _not_in(table: str | None, value: str) -> str:
    """A condition that ``value`` is no id of ``table`` (none when there is no table)."""
    if table is None:
        return ""
    return f" AND NOT EXISTS (SELECT 1 FROM {table} k WHERE k.id = {value})"


def unknown_references_sql(table: str, column: str, in_input: str | None, stored: str) -> str:
    """SQL of the rows whose ``column`` names an id neither of the staged ``in_input`` (when
    staged) nor of ``stored`` (``_line`` and ``ref``)."""
    value = f"s.{ident(column)}"
    return (
        f"SELECT s.{LINE}, {value} AS ref FROM {table} s "
        f"WHERE {value} IS NOT NULL AND {value} <> ''{_not_in(in_input, value)}"
        f"{_not_in(stored, value)}"
    )


def named_refs(db: Backend, table: str, column: str, in_input: str | None) -> list[str]:
    """The distinct non-empty values of ``column`` that are no id of the staged
    ``in_input``."""
    value = f"s.{ident(column)}"
    rows = db.fetch(
        f"SELECT DISTINCT {value} FROM {table} s "
        f"WHERE {value} IS NOT NULL AND {value} <> ''{_not_in(in_input, value)}"
    )
    return [str(r[0]) for r in rows]


def naming_sql(table: str, column: str) -> str:
    """SQL of the rows whose ``column`` is one of the values bound as ``:refs``."""
    return f"SELECT {LINE}, {ident(column)} AS ref FROM {table} WHERE {ident(column)} = ANY(:refs)"


def count_found(db: Backend, sql: str, params: Mapping[str, Any] | None = None) -> int:
    """How many rows the query ``sql`` finds."""
    [(total,)] = db.fetch(f"SELECT count(*) FROM ({sql}) x", params)
    return int(total)


def first_found(
    db: Backend, sql: str, limit: int, params: Mapping[str, Any] | None = None
) -> pl.DataFrame:
    """The first ``limit`` rows the query ``sql`` finds, by input line."""
    return db.fetch_df(f"SELECT * FROM ({sql}) x ORDER BY {LINE} LIMIT {int(limit)}", params)


# -- before the write ------------------------------------------------------------------------


def rename(db: Backend, table: str, column: str, names: dict[str, str]) -> None:
    """The values of ``column`` that are keys of ``names`` replaced by their values."""
    col = ident(column)
    pairs = "(SELECT unnest(CAST(:refs AS TEXT[])) AS ref, unnest(CAST(:ids AS TEXT[])) AS id)"
    db.execute(
        f"UPDATE {table} SET {col} = n.id FROM {pairs} n WHERE {table}.{col} = n.ref",
        {"refs": list(names), "ids": list(names.values())},
    )


def new_values(db: Backend, table: str, target: str, columns: list[str]) -> set[str]:
    """The distinct values of ``columns`` in the staged rows whose id ``target`` does not
    hold yet."""
    new = f"FROM {table} s WHERE NOT EXISTS (SELECT 1 FROM {ident(target)} t WHERE t.id = s.id)"
    union = " UNION ".join(f"SELECT s.{ident(c)} AS v {new}" for c in columns)
    return {str(v) for (v,) in db.fetch(f"SELECT v FROM ({union}) x WHERE v IS NOT NULL")}


def later_ends(db: Backend, table: str, target: str) -> pl.DataFrame:
    """Staged rows whose id ``target`` holds with an earlier (or no) ``ended_at``: ``id`` and
    the staged ``ended_at``, by id."""
    return db.fetch_df(
        f"SELECT s.id, s.ended_at FROM {table} s "
        f"JOIN {ident(target)} t ON t.id = s.id WHERE s.ended_at IS NOT NULL "
        "AND (t.ended_at IS NULL OR s.ended_at > t.ended_at) ORDER BY s.id"
    )


def page(db: Backend, table: str, columns: list[str], after: int, size: int) -> pl.DataFrame:
    """Up to ``size`` staged rows after place ``after``, in input order: ``columns`` and
    ``_seq``."""
    cols = ", ".join(ident(c) for c in columns)
    return db.fetch_df(
        f"SELECT {cols}, {SEQ} FROM {table} WHERE {SEQ} > :after ORDER BY {SEQ} LIMIT {int(size)}",
        {"after": after},
    )
