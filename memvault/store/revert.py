"""Putting back everything a failed run changed: how a dream stays all or nothing.

A dream writes in many transactions (a stage, a batch of decisions at a time), and its
blocking checks run after those writes: a check that fails stops the stages after it, not
what was already written. So a dream that fails is reverted: every row it changed gets the
before-image its first audit row holds (the undo machinery), and the tables it rewrites whole
without auditing each row (communities, centrality) get the copy it kept before rewriting
them (:func:`keep_prior`). One transaction, itself a run of kind ``revert`` whose changes are
audited; the failed run is marked ``reverted`` in it, with the reason.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from memvault.ids import new_run_id
from memvault.normalize import utcnow
from memvault.store.audit import decode_images, first_images, images
from memvault.store.backends import ident

if TYPE_CHECKING:
    from memvault.store.store import Store

#: Run kinds whose writes stand only when the run succeeds: one that fails is reverted.
ALL_OR_NOTHING: tuple[str, ...] = ("dream",)
#: Tables a dream rewrites whole (derived data, not audited row by row).
DERIVED_TABLES: tuple[str, ...] = ("communities", "centrality")


@dataclass
class RevertReport:
    """What reverting a failed run put back."""

    run_id: str
    revert_run_id: str
    restored: Counter[str] = field(default_factory=Counter)
    derived: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.restored.values())

    def describe(self) -> str:
        tables = ", ".join(f"{n:,} {t}" for t, n in sorted(self.restored.items())) or "none"
        return f"reverted by {self.revert_run_id}: {self.total:,} rows put back ({tables})"


def keep_prior(store: Store, table: str, run_id: str) -> None:
    """Keep ``table``'s rows as they are before ``run_id`` rewrites it, once per run (a resumed
    stage keeps the first copy). Call it inside the transaction that rewrites the table; a run
    of a kind that is not all or nothing keeps nothing."""
    if table not in DERIVED_TABLES:
        raise ValueError(f"{table} is not a derived table a run rewrites whole")
    kind = store.fetch("SELECT kind FROM runs WHERE id = :r", {"r": run_id})
    if not kind or kind[0][0] not in ALL_OR_NOTHING:
        return
    taken = store.fetch(
        "SELECT 1 FROM derived_prior WHERE run_id = :r AND table_name = :t AND image IS NULL",
        {"r": run_id, "t": table},
    )
    if taken:
        return
    rows = store.fetch_df(f"SELECT * FROM {ident(table)}")
    saved = images(store.conform(table, rows)).to_list() if rows.height else []
    frame = pl.DataFrame(
        {
            "run_id": run_id,
            "table_name": table,
            "image": pl.Series([None, *saved], dtype=pl.Utf8),
            "saved_at": pl.Series([utcnow()] * (len(saved) + 1), dtype=pl.Datetime("us")),
        }
    )
    store.backend.insert_df("derived_prior", frame, on_conflict="error")


def drop_prior(store: Store, run_id: str) -> None:
    """Forget the copies ``run_id`` kept (it ended: what it wrote stands, or was put back)."""
    store.backend.execute("DELETE FROM derived_prior WHERE run_id = :r", {"r": run_id})


def _restore_prior(store: Store, run_id: str) -> dict[str, int]:
    restored: dict[str, int] = {}
    kept = store.fetch(
        "SELECT DISTINCT table_name FROM derived_prior WHERE run_id = :r AND image IS NULL",
        {"r": run_id},
    )
    for (table,) in sorted(kept):
        if table not in DERIVED_TABLES:
            continue
        saved = store.fetch_df(
            "SELECT image FROM derived_prior WHERE run_id = :r AND table_name = :t "
            "AND image IS NOT NULL",
            {"r": run_id, "t": table},
        )
        store.backend.execute(f"DELETE FROM {ident(table)}")
        if saved.height:
            frame = decode_images(store, table, saved["image"])
            store.backend.insert_df(table, frame, key=("entity_id",), on_conflict="error")
        restored[table] = saved.height
    drop_prior(store, run_id)
    return restored


def revert_run(store: Store, run_id: str, why: str) -> RevertReport:
    """Put back every row ``run_id`` changed and the derived tables it rewrote, and mark it
    ``reverted`` (with ``why``), in one transaction: a kill part-way changes nothing.

    Rows a later run changed again are put back too: the failed run's writes must not stand,
    and the runs that may overlap with a dream (a recall's log) do not touch what it writes.
    """
    started = time.perf_counter()
    report = RevertReport(run_id=run_id, revert_run_id=new_run_id("revert"))
    with first_images(store, run_id) as (first, tables), store.transaction():
        now = utcnow()
        store.record_run(report.revert_run_id, "revert", now, {"reverts": run_id, "why": why})
        if tables:
            with store.mutation(report.revert_run_id, "revert") as m:
                for table in tables:
                    report.restored[table] += m.restore_many(
                        table, first, reason=f"revert of failed run {run_id}"
                    )
        report.derived = _restore_prior(store, run_id)
        store.backend.execute(
            "UPDATE runs SET status = 'reverted', finished_at = :t, error = :e WHERE id = :id",
            {"id": run_id, "t": now, "e": f"{why}; {report.describe()}"},
        )
        store.finish_run(
            report.revert_run_id,
            "succeeded",
            {
                "reverts": run_id,
                "restored": dict(report.restored),
                "derived": report.derived,
            },
        )
    report.seconds = round(time.perf_counter() - started, 3)
    return report
