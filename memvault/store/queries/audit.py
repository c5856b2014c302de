"""The ``audit_log`` family: what the audited write path recorded, read back."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from memvault.store.store import Store


def changes_by_run(store: Store) -> dict[str, int]:
    """How many audited changes each run made (run id → count; runs without changes absent)."""
    return {
        str(run_id): int(n)
        for run_id, n in store.fetch("SELECT run_id, count(*) FROM audit_log GROUP BY run_id")
    }


def audit_count(store: Store, run_id: str, phase: str | None = None) -> int:
    """How many audited changes ``run_id`` made (in ``phase`` only, if given)."""
    if phase is None:
        rows = store.fetch("SELECT count(*) FROM audit_log WHERE run_id = :r", {"r": run_id})
    else:
        rows = store.fetch(
            "SELECT count(*) FROM audit_log WHERE run_id = :r AND phase = :p",
            {"r": run_id, "p": phase},
        )
    return int(rows[0][0])


def audited_targets(store: Store, run_id: str) -> set[str]:
    """The ids of every row ``run_id`` changed (of any table)."""
    rows = store.fetch("SELECT DISTINCT target_id FROM audit_log WHERE run_id = :r", {"r": run_id})
    return {str(r[0]) for r in rows if r[0] is not None}


def last_audit_id(store: Store, table: str | None = None, after: int | None = None) -> int | None:
    """The newest audit row's id (of changes to ``table`` only, if given); None when there is
    none. Audit ids only grow, so a reader keeps it as a high-water mark: a different value
    later means something was written since. With ``after`` (a mark read before), only the
    rows written since are looked at, and None means none was: the audit log grows with
    every write, and a reader asking before each recall must not read all of it."""
    where: list[str] = []
    params: dict[str, object] = {}
    if table is not None:
        where.append("target_table = :t")
        params["t"] = table
    if after is not None:
        where.append("id > :after")
        params["after"] = after
    sql = "SELECT max(id) FROM audit_log" + (" WHERE " + " AND ".join(where) if where else "")
    rows = store.fetch(sql, params or None)
    return None if rows[0][0] is None else int(rows[0][0])


def demoted_by_run(store: Store, run_id: str) -> list[str]:
    """The blocks ``run_id`` demoted, each once, in a deterministic spread order (by the md5
    of the id)."""
    rows = store.fetch(
        "SELECT DISTINCT target_id AS id, md5(target_id) AS spread FROM audit_log "
        "WHERE run_id = :r AND target_table = 'blocks' AND action = 'demote' ORDER BY spread, id",
        {"r": run_id},
    )
    return [str(r[0]) for r in rows]


def inserted_per_table(
    store: Store, tables: Sequence[str], since: dt.datetime | None
) -> dict[str, int]:
    """How many rows of each of ``tables`` were inserted (or ingested) after ``since`` (ever,
    when None), per the audit log; tables without one absent."""
    params: dict[str, object] = {"tables": list(tables)}
    where = ""
    if since is not None:
        where, params["since"] = "AND created_at > :since", since
    rows = store.fetch(
        "SELECT target_table, count(DISTINCT target_id) FROM audit_log "
        f"WHERE action IN ('insert', 'ingest') AND target_table = ANY(:tables) {where} "
        "GROUP BY target_table",
        params,
    )
    return {str(table): int(n) for table, n in rows}


def inserted_ids(store: Store, table: str, since: dt.datetime | None) -> set[str]:
    """Ids of the rows of ``table`` inserted (or ingested) after ``since`` (ever, when None),
    per the audit log."""
    params: dict[str, object] = {"t": table}
    where = ""
    if since is not None:
        where, params["since"] = "AND created_at > :since", since
    rows = store.fetch(
        "SELECT DISTINCT target_id FROM audit_log "
        f"WHERE action IN ('insert', 'ingest') AND target_table = :t {where}",
        params,
    )
    return {str(r[0]) for r in rows}


def last_run_that_did(
    store: Store,
    kind: str,
    target_table: str,
    target_id: str,
    actions: Sequence[str],
    other_than: str,
    since: dt.datetime | None = None,
) -> str | None:
    """The newest run of ``kind`` other than ``other_than``, not undone, whose audit rows
    did one of ``actions`` to this target (at or after ``since``, if given); None if none."""
    sql = (
        "SELECT a.run_id FROM audit_log a JOIN runs r ON r.id = a.run_id "
        "WHERE a.target_table = :t AND a.target_id = :id AND a.run_id <> :me AND r.kind = :k "
        "AND r.status <> 'undone' AND a.action IN (SELECT unnest(CAST(:acts AS TEXT[])))"
    )
    params: dict[str, Any] = {
        "t": target_table, "id": target_id, "me": other_than, "k": kind, "acts": list(actions)
    }  # fmt: skip
    if since is not None:
        sql += " AND a.created_at >= :since"
        params["since"] = since
    rows = store.fetch(sql + " ORDER BY a.id DESC LIMIT 1", params)
    return rows[0][0] if rows else None


def rows_written_by(
    store: Store, table: str, columns: Sequence[str], run_id: str | None = None
) -> pl.DataFrame:
    """``columns`` of ``table``'s rows by id: those the audit rows of ``run_id`` name when
    given (what that run wrote), else every row."""
    where, params = "", None
    if run_id is not None:
        where = (
            "WHERE id IN (SELECT target_id FROM audit_log WHERE run_id = :run "
            "AND target_table = :table)"
        )
        params = {"run": run_id, "table": table}
    return store.fetch_df(f"SELECT {', '.join(columns)} FROM {table} {where} ORDER BY id", params)


def latest_audit_id(store: Store) -> int:
    """The id of the newest audit row (0 when there is none): a mark later changes follow."""
    return int(store.fetch("SELECT COALESCE(max(id), 0) FROM audit_log")[0][0])


def _images_differ(kind: str, columns: Sequence[str]) -> str:
    """SQL true when the before and after images disagree on one of ``columns``. DuckDB reads
    every column of an image in one parse (a block's image holds its whole text: parsing it
    once per column made the lint's read of a first tiering pass's 99k demotions 5.7 times
    slower); PostgreSQL compares column by column."""
    if kind == "duckdb":
        paths = ", ".join(f"'$.{c}'" for c in columns)
        return (
            f"json_extract_string(before_image, [{paths}]) IS DISTINCT FROM "
            f"json_extract_string(after_image, [{paths}])"
        )
    return " OR ".join(
        f"(CAST(before_image AS JSON) ->> '{c}') IS DISTINCT FROM "
        f"(CAST(after_image AS JSON) ->> '{c}')"
        for c in columns
    )


def changes_in(
    store: Store,
    lo: int,
    hi: int,
    watched: Mapping[str, Sequence[str] | None],
    images: Sequence[str] = (),
) -> pl.DataFrame:
    """The audit rows in ``(lo, hi]`` that changed what a reader of ``watched`` reads:
    target_table, target_id, and before_image for the tables in ``images`` (else null).

    ``watched`` maps a table to the columns its reader reads (None: every change counts).
    An update whose images agree on those columns is left out, compared in the database (a
    first tiering pass writes a million block images a reader of sessions never needs)."""
    if not watched:
        return pl.DataFrame(
            schema={"target_table": pl.Utf8, "target_id": pl.Utf8, "before_image": pl.Utf8}
        )

    kept = [
        f"(target_table = '{table}'"
        + (
            ""
            if columns is None
            else " AND (before_image IS NULL OR after_image IS NULL OR "
            + _images_differ(store.kind, columns)
            + ")"
        )
        + ")"
        for table, columns in watched.items()
    ]
    with_image = ", ".join(f"'{table}'" for table in images) or "NULL"
    return store.fetch_df(
        "SELECT target_table, target_id, "
        f"CASE WHEN target_table IN ({with_image}) THEN before_image END AS before_image "
        f"FROM audit_log WHERE id > :lo AND id <= :hi AND ({' OR '.join(kept)})",
        {"lo": lo, "hi": hi},
    )
