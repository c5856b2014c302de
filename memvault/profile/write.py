"""Idempotent, audited writes of derived rows keyed by day: a re-run rewrites the same rows.

A row whose content is unchanged is left alone (no audit row, no new
``updated_at``), a changed one is updated through the audited path, a new one
inserted. So re-materializing a partition changes nothing unless the store
changed, and every change that does happen can be undone like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.profile import stored_rows


@dataclass
class Written:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    #: What happened to each row, by its id: so a day of a batch can say what happened to it.
    by_id: dict[str, str] = field(default_factory=dict)

    def __iadd__(self, other: Written) -> Written:
        self.inserted += other.inserted
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.by_id |= other.by_id
        return self

    def of(self, row_id: str) -> str:
        """``inserted``, ``updated`` or ``unchanged`` for one row (``not written`` if absent)."""
        return self.by_id.get(row_id, "not written")


def upsert_rows(
    store: Store, table: str, rows: pl.DataFrame, content: list[str], run_id: str, phase: str
) -> Written:
    """Write ``rows`` (with ``id``); ``content`` columns decide whether a row changed."""
    if rows.is_empty():
        return Written()
    rows = store.conform(table, rows)
    existing = stored_rows(store, table, ["id", *content], rows["id"].to_list())
    existing = (
        store.conform(table, existing)
        if existing.height
        else pl.DataFrame(schema={c: rows.schema[c] for c in ["id", *content]})
    )
    joined = rows.join(existing, on="id", how="left", suffix="__old")
    is_new = pl.col("id").is_in(existing["id"].implode()).not_()
    changed_expr = pl.any_horizontal([pl.col(c).ne_missing(pl.col(f"{c}__old")) for c in content])
    new = joined.filter(is_new).select(rows.columns)
    changed = joined.filter(is_new.not_() & changed_expr).select(
        ["id", *content, *(c for c in ("run_id",) if c in rows.columns)]
    )
    if "updated_at" in store.table_schema(table) and changed.height:
        changed = changed.with_columns(updated_at=pl.lit(utcnow()))
    with store.mutation(run_id, phase) as m:
        inserted = len(m.insert(table, new, reason=phase)) if new.height else 0
        updated = (
            m.update_many(table, changed, action="update", reason=f"{phase}: recomputed")
            if changed.height
            else 0
        )
    by_id = dict.fromkeys(rows["id"].to_list(), "unchanged")
    by_id |= dict.fromkeys(new["id"].to_list(), "inserted")
    by_id |= dict.fromkeys(changed["id"].to_list(), "updated")
    return Written(inserted, updated, rows.height - inserted - updated, by_id)
