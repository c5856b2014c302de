"""The ``runs`` family: which runs the store has had, and what a run continues from."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from memvault.store.store import Store


def has_run_of_kind(store: Store, kind: str) -> bool:
    """Whether any run of ``kind`` was ever recorded (the demo knows its own store by this)."""
    return bool(store.fetch("SELECT 1 FROM runs WHERE kind = :k LIMIT 1", {"k": kind}))


def latest_runs(store: Store, limit: int, kind: str | None = None) -> pl.DataFrame:
    """The ``limit`` newest runs (of ``kind`` if given): id, kind, status, started_at,
    finished_at, error, newest first."""
    where = "WHERE kind = :kind" if kind else ""
    return store.fetch_df(
        f"SELECT id, kind, status, started_at, finished_at, error FROM runs {where} "
        f"ORDER BY started_at DESC, id DESC LIMIT {int(limit)}",
        {"kind": kind} if kind else None,
    )


def save_run_cursor(store: Store, run_id: str, cursor: dict[str, Any]) -> None:
    """Replace the run's cursor (what a resumed or later run continues from) with ``cursor``."""
    store.backend.execute(
        "UPDATE runs SET cursor = :c WHERE id = :id",
        {"id": run_id, "c": json.dumps(cursor, default=str, sort_keys=True)},
    )


def last_run_with_stage(store: Store, kind: str, stage: str) -> dict[str, Any] | None:
    """The newest succeeded run of ``kind`` that ran ``stage`` (its cursor holds the stage's
    figures): a run that ran only some of its stages is not the mark the others count from."""
    rows = store.fetch(
        "SELECT id FROM runs WHERE kind = :k AND status = 'succeeded' AND cursor LIKE :s "
        "ORDER BY started_at DESC, id DESC",
        {"k": kind, "s": f'%"{stage}"%'},
    )
    for (run_id,) in rows:
        run = store.run(run_id)
        if run is not None and stage in run["cursor"].get("stages", {}):
            return run
    return None
