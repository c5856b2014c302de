"""The audited write path and its inverse, ``undo``.

Every change to a memory table goes through ``Mutation``: the change and an
``audit_log`` row holding the before- and after-image are written in the same
transaction, so the log never misses a change and never records one that did
not happen. ``undo_run`` replays the before-images of a run in reverse order,
itself through a ``Mutation``, so an undo can be undone too.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from memvault.errors import StoreError, UndoError
from memvault.normalize import utcnow
from memvault.store.backends import ident
from memvault.store.tables import AUDITED_TABLES

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


def _images(df: pl.DataFrame) -> pl.Series:
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
        action: str,
        ids: list[str],
        before: list[str | None] | pl.Series,
        after: list[str | None] | pl.Series,
        reason: str | None,
    ) -> None:
        if not ids:
            return
        now = utcnow()
        log = pl.DataFrame(
            {
                "run_id": [self.run_id] * len(ids),
                "phase": [self.phase] * len(ids),
                "action": [action] * len(ids),
                "target_table": [table] * len(ids),
                "target_id": ids,
                "before_image": pl.Series(before, dtype=pl.Utf8),
                "after_image": pl.Series(after, dtype=pl.Utf8),
                "reason": pl.Series([reason] * len(ids), dtype=pl.Utf8),
                "created_at": [now] * len(ids),
            }
        )
        self.store.backend.insert_df("audit_log", log, on_conflict="error")
        self.actions[action] += len(ids)

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
            self._log(table, action, df["id"].to_list(), [None] * df.height, _images(df), reason)
        return [str(i) for i in inserted]

    def update_many(
        self, table: str, changes: pl.DataFrame, *, action: str, reason: str | None = None
    ) -> int:
        """Apply per-row changes (an ``id`` column plus the columns to set). Returns rows changed."""
        self._check(table)
        if changes.is_empty():
            return 0
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
        self._log(table, action, before["id"].to_list(), _images(before), _images(after), reason)
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

    def restore(
        self, table: str, row_id: str, image: dict[str, Any] | None, *, reason: str
    ) -> None:
        """Make the row equal ``image`` again (absent when ``image`` is None). Used by undo only."""
        self._check(table)
        current = self.store.get_row(table, row_id)
        if image is None:
            if current is not None:
                self.store.backend.execute(
                    f"DELETE FROM {ident(table)} WHERE id = :id", {"id": row_id}
                )
                self._log(table, "undo-remove", [row_id], [encode_image(current)], [None], reason)
            return
        frame = self.store.conform(table, _decode_image(self.store, table, image))
        if current is None:
            self.store.backend.insert_df(table, frame, on_conflict="error")
        else:
            backend = self.store.backend
            with backend.staged(table, frame) as staging:
                backend.execute(_update_from_sql(table, frame.columns, staging))
        self._log(
            table, "undo-restore", [row_id], [encode_image(current)], [encode_image(image)], reason
        )


def _update_from_sql(table: str, columns: list[str], staging: str) -> str:
    """Set the staged columns on the rows with the staged ids."""
    sets = ", ".join(f"{ident(c)} = s.{ident(c)}" for c in columns if c != "id")
    return f"UPDATE {ident(table)} SET {sets} FROM {staging} s WHERE {ident(table)}.id = s.id"


def _decode_image(store: Store, table: str, image: dict[str, Any]) -> pl.DataFrame:
    schema = store.table_schema(table)
    row: dict[str, Any] = {}
    for name, dtype in schema.items():
        value = image.get(name)
        if value is not None and dtype == pl.Datetime("us"):
            value = dt.datetime.fromisoformat(value)
        elif value is not None and dtype == pl.Date():
            value = dt.date.fromisoformat(value)
        row[name] = value
    return pl.DataFrame([row], schema=schema)


@dataclass
class UndoReport:
    run_id: str
    undo_run_id: str
    restored: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.restored.values())


def undo_run(store: Store, run_id: str, *, force: bool = False) -> UndoReport:
    """Restore the before-image of every change ``run_id`` made, newest first.

    Refuses when a later run changed the same rows (undo that run first, or
    ``force``), and when the run was already undone.
    """
    run = store.run(run_id)
    if run is None:
        raise UndoError(f"no run with id {run_id!r}; `memvault runs` lists them")
    if run["status"] == "undone":
        raise UndoError(f"run {run_id} was already undone")
    log = store.fetch_df(
        "SELECT id, target_table, target_id, before_image FROM audit_log WHERE run_id = :r ORDER BY id DESC",
        {"r": run_id},
    )
    if log.is_empty():
        raise UndoError(f"run {run_id} changed nothing, so there is nothing to undo")
    if not force:
        later = store.fetch(
            # Later changes that still stand: runs neither undone nor themselves undos
            # (an undo and the run it undid cancel out).
            "SELECT DISTINCT a.run_id FROM audit_log a JOIN audit_log mine "
            "ON a.target_table = mine.target_table AND a.target_id = mine.target_id "
            "JOIN runs r ON r.id = a.run_id "
            "WHERE mine.run_id = :r AND a.run_id <> :r AND a.id > mine.id "
            "AND r.status <> 'undone' AND r.kind <> 'undo' ORDER BY 1",
            {"r": run_id},
        )
        if later:
            names = ", ".join(r[0] for r in later[:5])
            raise UndoError(
                f"rows changed by {run_id} were changed again later by {names}; undo those first (or use --force)"
            )
    from memvault.store.store import new_run_id

    report = UndoReport(run_id=run_id, undo_run_id=new_run_id("undo"))
    store.begin_run("undo", {"undoes": run_id}, run_id=report.undo_run_id)
    # The oldest before-image of each row is its state before the run.
    seen: dict[tuple[str, str], str | None] = {}
    for _, table, target, before in log.iter_rows():
        seen[(table, target)] = before
    with store.mutation(report.undo_run_id, "undo") as m:
        for (table, target), before in seen.items():
            m.restore(
                table, target, json.loads(before) if before else None, reason=f"undo of {run_id}"
            )
            report.restored[table] += 1
        store.backend.execute("UPDATE runs SET status = 'undone' WHERE id = :id", {"id": run_id})
        if run["kind"] == "undo" and run["params"].get("undoes"):  # undoing an undo revives the run
            store.backend.execute(
                "UPDATE runs SET status = 'succeeded' WHERE id = :id",
                {"id": run["params"]["undoes"]},
            )
    store.finish_run(report.undo_run_id, "succeeded", {"restored": dict(report.restored)})
    return report
