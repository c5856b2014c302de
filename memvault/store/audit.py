"""The audited write path and its inverse, ``undo``.

Every change to a memory table goes through ``Mutation``: the change and an
``audit_log`` row holding the before- and after-image are written in the same
transaction, so the log never misses a change and never records one that did
not happen. ``undo_run`` replays the before-images of a run in reverse order,
itself through a ``Mutation``, so an undo can be undone too.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from memvault.errors import StoreError, UndoError
from memvault.ids import new_run_id
from memvault.normalize import utcnow
from memvault.store.backends import ident
from memvault.store.tables import AUDITED_TABLES
from memvault.store.tracked import tracked_run
from memvault.testing_hooks import pause_point

if TYPE_CHECKING:
    from memvault.store.store import Store


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot encode {type(value).__name__} in an audit image")


def encode_image(row: dict[str, Any] | None) -> str | None:
    return None if row is None else json.dumps(row, default=_json_default, sort_keys=True)


def images(df: pl.DataFrame) -> pl.Series:
    """One JSON image per row (times spelled ISO 8601, as ``encode_image`` does)."""
    return df.select(pl.struct(pl.all()).struct.json_encode()).to_series()


class Mutation:
    """Writes inside one transaction, each logged with run id, phase and images."""

    def __init__(self, store: Store, run_id: str, phase: str) -> None:
        self.store = store
        self.run_id = run_id
        self.phase = phase
        self.actions: Counter[str] = Counter()

    # -- logging -----------------------------------------------------------------------------

    def _log(
        self,
        table: str,
        action: str | pl.Series,
        ids: list[str],
        before: list[str | None] | pl.Series,
        after: list[str | None] | pl.Series,
        reason: str | pl.Series | None,
    ) -> None:
        """Audit rows for one table's changes, in one append; ``action`` and ``reason`` are
        one for all, or one per row."""
        if not ids:
            return
        actions = action if isinstance(action, pl.Series) else pl.Series([action] * len(ids))
        reasons = reason if isinstance(reason, pl.Series) else pl.Series([reason] * len(ids))
        log = pl.DataFrame(
            {
                "run_id": [self.run_id] * len(ids),
                "phase": [self.phase] * len(ids),
                "action": actions.cast(pl.Utf8),
                "target_table": [table] * len(ids),
                "target_id": ids,
                "before_image": pl.Series(before, dtype=pl.Utf8),
                "after_image": pl.Series(after, dtype=pl.Utf8),
                "reason": reasons.cast(pl.Utf8),
            }
        )
        append_audit(self.store, log)
        self.actions.update(actions.to_list())

    @staticmethod
    def _check(table: str) -> None:
        if table not in AUDITED_TABLES:
            raise StoreError(
                f"{table} is not a memory table; it is not written through the audited path"
            )

    # -- writes ------------------------------------------------------------------------------

    def insert(
        self, table: str, df: pl.DataFrame, *, action: str = "insert", reason: str | None = None
    ) -> list[str]:
        """Insert rows whose id is new; rows whose id exists are left alone. Returns inserted ids."""
        self._check(table)
        if df.is_empty():
            return []
        df = self.store.conform(table, df)
        inserted = self.store.backend.insert_df(table, df, on_conflict="ignore")
        if inserted:
            if len(inserted) < df.height:
                df = df.filter(pl.col("id").is_in(inserted))
            self._log(table, action, df["id"].to_list(), [None] * df.height, images(df), reason)
        return [str(i) for i in inserted]

    def insert_new(
        self,
        table: str,
        source: str,
        columns: list[str],
        *,
        action: str = "insert",
        reason: str | None = None,
    ) -> int:
        """Insert the rows of the table ``source`` whose id is not in ``table`` yet (its
        ``columns``), with their audit rows: one statement each, inside the database. So a
        large write passes no row through this process, and DuckDB writes both to its file
        before the transaction commits (an INSERT writes each full row group, 122,880 rows,
        as it fills, instead of holding the rows in memory). No ORDER BY: sorting would hold
        every row at once; DuckDB keeps the source's order anyway (preserve_insertion_order).
        Returns the rows inserted."""
        self._check(table)
        backend = self.store.backend
        target = ident(table)
        cols = ", ".join(f"s.{ident(c)}" for c in columns)
        new = f"FROM {source} s WHERE NOT EXISTS (SELECT 1 FROM {target} t WHERE t.id = s.id)"
        # The audit rows first: once the rows are in, they are no longer new.
        logged = backend.execute_count(
            "INSERT INTO audit_log (run_id, phase, action, target_table, target_id, "
            "before_image, after_image, reason, created_at) "
            f"SELECT :run, :phase, :action, :table, s.id, NULL, "
            f"{_image_sql(self.store.kind, columns)}, :reason, :now {new}",
            {
                "run": self.run_id,
                "phase": self.phase,
                "action": action,
                "table": table,
                "reason": reason,
                "now": utcnow(),
            },
        )
        inserted = backend.execute_count(
            f"INSERT INTO {target} ({', '.join(ident(c) for c in columns)}) SELECT {cols} {new}"
        )
        if inserted != logged:  # another writer between the two: the transaction must not stand
            raise StoreError(
                f"{table}: {inserted} rows inserted but {logged} audited; nothing was written"
            )
        self.actions[action] += inserted
        return inserted

    def update_many(
        self,
        table: str,
        changes: pl.DataFrame,
        *,
        action: str | pl.Series,
        reason: str | pl.Series | None = None,
    ) -> int:
        """Apply per-row changes (an ``id`` column plus the columns to set) in one statement,
        audited in one append. ``action`` and ``reason``: one for every row, or a series in the
        rows' order (a batch of differently labelled changes is still one write). Returns rows
        changed."""
        self._check(table)
        if changes.is_empty():
            return 0
        labels = None
        if isinstance(action, pl.Series) or isinstance(reason, pl.Series):
            labels = pl.DataFrame(
                {
                    "id": changes["id"].cast(pl.Utf8),
                    "_action": action
                    if isinstance(action, pl.Series)
                    else [action] * changes.height,
                    "_reason": pl.Series(
                        reason if isinstance(reason, pl.Series) else [reason] * changes.height,
                        dtype=pl.Utf8,
                    ),
                }
            )
        changes = self.store.conform(table, changes)
        backend = self.store.backend
        with backend.staged(table, changes) as staging:
            before = backend.fetch_df(
                f"SELECT t.* FROM {ident(table)} t JOIN {staging} s ON t.id = s.id ORDER BY t.id"
            )
            if before.is_empty():
                return 0
            backend.execute(_update_from_sql(table, changes.columns, staging))
        before = self.store.conform(table, before)
        after = before.update(changes, on="id")
        if labels is not None:
            aligned = before.select("id").join(labels, on="id", how="left", maintain_order="left")
            action, reason = aligned["_action"], aligned["_reason"]
        self._log(table, action, before["id"].to_list(), images(before), images(after), reason)
        return before.height

    def update(
        self,
        table: str,
        row_id: str,
        changes: dict[str, Any],
        *,
        action: str,
        reason: str | None = None,
    ) -> bool:
        """Change one row; False when no row has that id."""
        frame = pl.DataFrame([{"id": row_id, **changes}])
        return self.update_many(table, frame, action=action, reason=reason) == 1

    def restore_many(self, table: str, source: str, *, reason: str) -> int:
        """Make the rows of ``table`` equal their images again (used by undo and revert only).

        ``source`` names a relation of ``target_table``, ``target_id`` and ``image`` (a JSON
        before-image, or null: the row did not exist, so it is removed); its rows of ``table``
        are restored. The audit rows (each with the row as it is now) and the removal are
        statements inside the database, so an undo of millions of inserted rows passes none
        of them through this process; only the images to write back are decoded here.
        Returns the rows restored or removed.
        """
        self._check(table)
        backend = self.store.backend
        target = ident(table)
        mine = f"FROM {source} f WHERE f.target_table = :table"
        counts = dict(
            backend.fetch(f"SELECT f.image IS NULL, count(*) {mine} GROUP BY 1", {"table": table})
        )
        gone, back = int(counts.get(True, 0)), int(counts.get(False, 0))
        image = _image_sql(self.store.kind, list(self.store.table_schema(table)))
        params = {
            "run": self.run_id,
            "phase": self.phase,
            "table": table,
            "reason": reason,
            "now": utcnow(),
        }
        if gone:
            removed = f"SELECT f.target_id {mine} AND f.image IS NULL"
            logged = backend.execute_count(
                f"{_AUDIT_INSERT} SELECT :run, :phase, 'undo-remove', :table, s.id, {image}, "
                f"NULL, :reason, :now FROM {target} s WHERE s.id IN ({removed})",
                params,
            )
            deleted = _remove_rows(self.store, table, removed, {"table": table}, logged)
            if deleted != logged:
                raise StoreError(f"{table}: {deleted} rows removed but {logged} audited")
            self.actions["undo-remove"] += logged
        if back:
            logged = backend.execute_count(
                f"{_AUDIT_INSERT} SELECT :run, :phase, 'undo-restore', :table, f.target_id, "
                f"CASE WHEN s.id IS NULL THEN NULL ELSE {image} END, f.image, :reason, :now "
                f"FROM {source} f LEFT JOIN {target} s ON s.id = f.target_id "
                "WHERE f.target_table = :table AND f.image IS NOT NULL",
                params,
            )
            saved = backend.fetch_df(
                f"SELECT f.image {mine} AND f.image IS NOT NULL", {"table": table}
            )
            frame = decode_images(self.store, table, saved["image"])
            backend.insert_df(table, frame, on_conflict="replace")
            self.actions["undo-restore"] += logged
        return gone + back


#: A DuckDB table losing at least this share of its rows is rewritten without them instead of
#: deleted from: DuckDB takes each deleted row out of the table's indexes at commit, reading it
#: back from compressed storage (about 35 µs a row: 28 of the 40 s CPU of undoing a 100k-block
#: ingest), while a rewrite costs only the rows it keeps.
REWRITE_SHARE = 0.5


def _remove_rows(store: Store, table: str, removed: str, params: dict[str, Any], going: int) -> int:
    """Remove the rows of ``table`` whose id the query ``removed`` yields; returns how many."""
    backend, target = store.backend, ident(table)
    if store.kind == "duckdb" and going:
        total = int(backend.fetch(f"SELECT count(*) FROM {target}")[0][0])
        if going >= REWRITE_SHARE * total:
            return _rewrite_without(store, table, removed, params, total)
    return backend.execute_count(f"DELETE FROM {target} WHERE id IN ({removed})", params)


def _rewrite_without(
    store: Store, table: str, removed: str, params: dict[str, Any], total: int
) -> int:
    """DuckDB: the table made again from its own definition and indexes, holding the rows it
    keeps, in the caller's transaction (a kill leaves it as it was)."""
    backend, target, keep = store.backend, ident(table), ident(f"_undo_keep_{table}")
    where = {"t": table}
    [(ddl,)] = backend.fetch(
        "SELECT sql FROM duckdb_tables() WHERE table_name = :t AND schema_name = current_schema()",
        where,
    )
    indexes = backend.fetch(
        "SELECT sql FROM duckdb_indexes() WHERE table_name = :t "
        "AND schema_name = current_schema() ORDER BY index_name",
        where,
    )
    backend.execute(f"DROP TABLE IF EXISTS {keep}")
    backend.execute(
        f"CREATE TEMPORARY TABLE {keep} AS SELECT * FROM {target} WHERE id NOT IN ({removed})",
        params,
    )
    backend.execute(f"DROP TABLE {target}")
    backend.execute_script(ddl)
    kept = backend.execute_count(f"INSERT INTO {target} SELECT * FROM {keep}")
    for (index,) in indexes:
        backend.execute_script(index)
    backend.execute(f"DROP TABLE {keep}")
    return total - kept


_AUDIT_INSERT = (
    "INSERT INTO audit_log (run_id, phase, action, target_table, target_id, before_image, "
    "after_image, reason, created_at)"
)


def append_audit(store: Store, rows: pl.DataFrame) -> None:
    """Append audit rows (run_id, phase, action, target_table, target_id, before_image,
    after_image, reason), in their order, stamped now. Inside the transaction of the changes
    they record: :class:`Mutation` for one run, or a set-based writer of several runs (the
    recall log) that gives each row its run and images."""
    if rows.is_empty():
        return
    rows = rows.with_columns(created_at=pl.lit(utcnow(), dtype=pl.Datetime("us")))
    store.backend.insert_df("audit_log", rows, on_conflict="error")


def _image_sql(kind: str, columns: list[str]) -> str:
    """SQL of the JSON image of a row of ``s`` (its ``columns``), as :func:`images` writes
    it: DuckDB's text is the same; PostgreSQL's spells times with a ``T``, which
    :func:`decode_images` reads too."""
    if kind == "postgresql":
        picked = ", ".join(f"s.{ident(c)}" for c in columns)
        return f"row_to_json((SELECT r FROM (SELECT {picked}) r))::text"
    fields = ", ".join(f"{ident(c)} := s.{ident(c)}" for c in columns)
    return f"CAST(to_json(struct_pack({fields})) AS VARCHAR)"


def _update_from_sql(table: str, columns: list[str], staging: str) -> str:
    """Set the staged columns on the rows with the staged ids."""
    sets = ", ".join(f"{ident(c)} = s.{ident(c)}" for c in columns if c != "id")
    return f"UPDATE {ident(table)} SET {sets} FROM {staging} s WHERE {ident(table)}.id = s.id"


def decode_images(store: Store, table: str, images: pl.Series) -> pl.DataFrame:
    """JSON row images (as the audit log holds them) back into a frame typed like ``table``.

    Times were written as ``2026-01-01 10:00:00.123`` (polars) or ``2026-01-01T10:00:00``
    (Python); both are read. A column an old image lacks comes back null.
    """
    schema = store.table_schema(table)
    as_text = {
        c: pl.Utf8() if t in (pl.Datetime("us"), pl.Date()) else t for c, t in schema.items()
    }
    frame = (
        pl.DataFrame({"image": images.cast(pl.Utf8)})
        .select(pl.col("image").str.json_decode(pl.Struct(as_text)))
        .unnest("image")
    )
    parsed = []
    for name, dtype in schema.items():
        if dtype == pl.Datetime("us"):
            parsed.append(
                pl.col(name)
                .str.replace("T", " ")
                .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us")
            )
        elif dtype == pl.Date():
            parsed.append(pl.col(name).str.to_date("%Y-%m-%d"))
    return frame.with_columns(parsed) if parsed else frame


@dataclass
class UndoReport:
    run_id: str
    undo_run_id: str
    restored: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.restored.values())


#: Where :func:`first_images` keeps a run's first images (a temporary table, this session's).
FIRST_IMAGES = "_undo_first"

#: Each changed row's state before a run: the before-image of its first audit row in the run.
_FIRST_IMAGES_SQL = f"""
INSERT INTO {FIRST_IMAGES} (target_table, target_id, first_id, image)
SELECT a.target_table, a.target_id, a.id, a.before_image
FROM audit_log a
JOIN (SELECT min(id) AS first_change
      FROM audit_log WHERE run_id = :r GROUP BY target_table, target_id) f
  ON a.id = f.first_change
"""

# Later changes that still stand: runs neither undone nor reverted, nor themselves undos or
# reverts (an undo and the run it undid cancel out; so do a failed dream and its revert).
_LATER_RUNS_SQL = f"""
SELECT DISTINCT a.run_id FROM {FIRST_IMAGES} f
JOIN audit_log a ON a.target_table = f.target_table AND a.target_id = f.target_id
  AND a.id > f.first_id
JOIN runs r ON r.id = a.run_id
WHERE a.run_id <> :r AND r.status NOT IN ('undone', 'reverted') AND r.kind NOT IN ('undo', 'revert')
ORDER BY 1
"""


@contextmanager
def first_images(store: Store, run_id: str) -> Iterator[tuple[str, list[str]]]:
    """The first image of every row ``run_id`` changed, kept in the database for the block
    (a temporary table: nothing is written to the store), with the tables it covers."""
    backend = store.backend
    backend.execute(f"DROP TABLE IF EXISTS {FIRST_IMAGES}")
    backend.execute(
        f"CREATE TEMPORARY TABLE {FIRST_IMAGES} (target_table TEXT NOT NULL, "
        "target_id TEXT NOT NULL, first_id BIGINT NOT NULL, image TEXT)"
    )
    try:
        backend.execute(_FIRST_IMAGES_SQL, {"r": run_id})
        if store.kind == "postgresql":  # a temporary table has no statistics until analysed
            backend.execute(f"ANALYZE {FIRST_IMAGES}")
        tables = [
            str(r[0])
            for r in backend.fetch(f"SELECT DISTINCT target_table FROM {FIRST_IMAGES} ORDER BY 1")
        ]
        yield FIRST_IMAGES, tables
    except BaseException:
        # Inside a transaction that failed, the drop may fail too; the rollback drops it then.
        with contextlib.suppress(Exception):
            backend.execute(f"DROP TABLE IF EXISTS {FIRST_IMAGES}")
        raise
    backend.execute(f"DROP TABLE IF EXISTS {FIRST_IMAGES}")


def undo_run(store: Store, run_id: str, *, force: bool = False) -> UndoReport:
    """Restore the state every row a run changed had before it, set-based, in one transaction.

    Refuses when a later run changed the same rows (undo that run first, or ``force``), and
    when the run was already undone. A killed undo changes nothing (the transaction rolls
    back) and can simply be run again. Undoing an ingest also forgets that its input was
    ingested, so the collector imports that file again; undoing the undo remembers it again.
    """
    run = store.run(run_id)
    if run is None:
        raise UndoError(f"no run with id {run_id!r}; `memvault runs` lists them")
    if run["status"] == "undone":
        raise UndoError(f"run {run_id} was already undone")
    if run["status"] == "reverted":
        raise UndoError(f"run {run_id} failed and was reverted already: none of it stands")
    with first_images(store, run_id) as (first, tables):
        if not tables:
            raise UndoError(f"run {run_id} changed nothing, so there is nothing to undo")
        if not force:
            later = store.fetch(_LATER_RUNS_SQL, {"r": run_id})
            if later:
                names = ", ".join(r[0] for r in later[:5])
                raise UndoError(
                    f"rows changed by {run_id} were changed again later by {names}; undo those first (or use --force)"
                )
        return _undo(store, run, first, tables)


def _undo(store: Store, run: dict[str, Any], first: str, tables: list[str]) -> UndoReport:
    run_id = str(run["id"])
    report = UndoReport(run_id=run_id, undo_run_id=new_run_id("undo"))
    sources: list[dict[str, Any]] = []
    with (
        tracked_run(store, "undo", {"undoes": run_id}, run_id=report.undo_run_id) as undo,
        store.mutation(undo.id, "undo") as m,
    ):
        for table in tables:
            report.restored[table] += m.restore_many(table, first, reason=f"undo of {run_id}")
        pause_point("undo-restored")
        store.backend.execute("UPDATE runs SET status = 'undone' WHERE id = :id", {"id": run_id})
        sources = _forget_sources(store, run_id)
        if run["kind"] == "undo" and run["params"].get("undoes"):  # undoing an undo revives the run
            undone = run["params"]["undoes"]
            store.backend.execute(
                "UPDATE runs SET status = 'succeeded' WHERE id = :id", {"id": undone}
            )
            _remember_sources(store, run["stats"].get("forgotten_sources", []))
        undo.stats = {"restored": dict(report.restored), "forgotten_sources": sources}
    return report


def _forget_sources(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Forget the input files an undone ingest had recorded, so they can be ingested again."""
    rows = store.fetch_df("SELECT * FROM ingested_sources WHERE run_id = :r", {"r": run_id})
    if rows.is_empty():
        return []
    store.backend.execute("DELETE FROM ingested_sources WHERE run_id = :r", {"r": run_id})
    return [
        {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in row.items()}
        for row in rows.to_dicts()
    ]


def _remember_sources(store: Store, rows: list[dict[str, Any]]) -> None:
    if rows:
        frame = pl.DataFrame(rows).with_columns(
            pl.col("ingested_at").str.to_datetime(time_unit="us")
        )
        store.backend.insert_df("ingested_sources", frame)
