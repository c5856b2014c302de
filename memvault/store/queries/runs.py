"""The ``runs`` family (``runs``, ``artifacts``): which runs the store has had, what a run
continues from, and the documents runs leave."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from memvault.store.backends import in_list
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


def last_succeeded_cursor(store: Store, kind: str, other_than: str) -> tuple[bool, Any]:
    """(whether there is one, its cursor as stored) of the newest succeeded run of ``kind``
    other than ``other_than``."""
    rows = store.fetch(
        "SELECT started_at, cursor FROM runs WHERE kind = :k AND status = 'succeeded' "
        "AND id <> :run ORDER BY started_at DESC, id DESC LIMIT 1",
        {"k": kind, "run": other_than},
    )
    return (True, rows[0][1]) if rows else (False, None)


def succeeded_cursors_since(
    store: Store, kind: str, other_than: str, since: dt.datetime
) -> list[Any]:
    """The cursors (as stored) of the succeeded runs of ``kind`` other than ``other_than``
    started at or after ``since``."""
    rows = store.fetch(
        "SELECT cursor FROM runs WHERE kind = :k AND status = 'succeeded' "
        "AND id <> :run AND started_at >= :cut",
        {"k": kind, "run": other_than, "cut": since},
    )
    return [r[0] for r in rows]


def last_succeeded(store: Store, kind: str) -> tuple[str, dt.datetime | None] | None:
    """(id, finished_at) of the run of ``kind`` that succeeded last (by finish time); None
    when none did."""
    rows = store.fetch(
        "SELECT id, finished_at FROM runs WHERE kind = :k AND status = 'succeeded' "
        "ORDER BY finished_at DESC, id DESC LIMIT 1",
        {"k": kind},
    )
    return (rows[0][0], rows[0][1]) if rows else None


def runs_held(store: Store, run_ids: Sequence[str]) -> set[str]:
    """Those of ``run_ids`` the store has a run row of."""
    if not run_ids:
        return set()
    where, params = in_list("id", "r", run_ids)
    return {str(r[0]) for r in store.fetch(f"SELECT id FROM runs WHERE {where}", params)}


# -- a run driven from outside (the gardener's ledger: memvault.gardener.ledger) -------------


def run_of_dagster_run(store: Store, kind: str, dagster_run_id: str) -> str | None:
    """The newest run of ``kind`` tagged with Dagster's run ``dagster_run_id``; None if none."""
    rows = store.fetch(
        "SELECT id FROM runs WHERE kind = :k AND dagster_run_id = :d "
        "ORDER BY started_at DESC LIMIT 1",
        {"k": kind, "d": dagster_run_id},
    )
    return rows[0][0] if rows else None


def tag_dagster_run(store: Store, run_id: str, dagster_run_id: str) -> None:
    """Note on the run which Dagster run carries it."""
    store.backend.execute(
        "UPDATE runs SET dagster_run_id = :d WHERE id = :id", {"d": dagster_run_id, "id": run_id}
    )


def save_run_state(
    store: Store, run_id: str, stats: Mapping[str, Any], cursor: Mapping[str, Any]
) -> None:
    """Replace the run's ``stats`` (its full state) and ``cursor`` (what the next run starts
    from)."""
    store.backend.execute(
        "UPDATE runs SET stats = :s, cursor = :c WHERE id = :id",
        {
            "id": run_id,
            "s": json.dumps(stats, default=str, sort_keys=True),
            "c": json.dumps(cursor, default=str, sort_keys=True),
        },
    )


def close_run(store: Store, run_id: str, status: str, error: str | None, at: dt.datetime) -> None:
    """Mark the run ``status`` (with ``error``) at ``at``, its stats left as saved."""
    store.backend.execute(
        "UPDATE runs SET status = :s, finished_at = :t, error = :e WHERE id = :id",
        {"id": run_id, "s": status, "t": at, "e": error},
    )


def finished_runs(
    store: Store, kind: str, other_than: str, limit: int
) -> list[tuple[str, dt.datetime, Any]]:
    """(id, started_at, cursor as stored) of the ``limit`` newest succeeded or failed runs of
    ``kind`` other than ``other_than``, newest first."""
    rows = store.fetch(
        "SELECT id, started_at, cursor FROM runs WHERE kind = :k AND status IN "
        "('succeeded', 'failed') AND id <> :me ORDER BY started_at DESC, id DESC "
        f"LIMIT {int(limit)}",
        {"k": kind, "me": other_than},
    )
    return [(r[0], r[1], r[2]) for r in rows]


def latest_artifact_id(store: Store, kind: str) -> str | None:
    """The id of the newest stored document of ``kind`` (ties: the greatest id), or None."""
    rows = store.fetch(
        "SELECT id FROM artifacts WHERE kind = :k ORDER BY created_at DESC, id DESC LIMIT 1",
        {"k": kind},
    )
    return str(rows[0][0]) if rows else None


def succeeded_run_ids_since(store: Store, kind: str, since: dt.datetime) -> list[str]:
    """The ids of the runs of ``kind`` that succeeded and started at or after ``since``."""
    rows = store.fetch(
        "SELECT id FROM runs WHERE kind = :k AND status = 'succeeded' AND started_at >= :cut",
        {"k": kind, "cut": since},
    )
    return [str(r[0]) for r in rows]


def other_running_runs(
    store: Store, kinds: Sequence[str], other_than: str
) -> list[tuple[Any, ...]]:
    """The runs of ``kinds`` still running besides ``other_than``, oldest first: (id, host,
    pid, started_at)."""
    return store.fetch(
        "SELECT id, host, pid, started_at FROM runs WHERE kind = ANY(CAST(:kinds AS TEXT[])) "
        "AND status = 'running' AND id <> :id ORDER BY started_at",
        {"kinds": list(kinds), "id": other_than},
    )


#: A run whose writes still stand (neither undone nor reverted) and whose cursor holds a key.
_STANDING_WITH_KEY = "status NOT IN ('undone', 'reverted') AND cursor LIKE :pattern"


def other_standing_run_with(store: Store, key: str, other_than: str) -> bool:
    """Whether a run besides ``other_than``, not undone nor reverted, has ``key`` in its
    cursor (so what that key records is still in the store)."""
    rows = store.fetch(
        f"SELECT count(*) FROM runs WHERE id <> :r AND {_STANDING_WITH_KEY}",
        {"r": other_than, "pattern": f'%"{key}"%'},
    )
    return int(rows[0][0]) > 0


def newest_standing_cursor(store: Store, key: str) -> tuple[str, str | None] | None:
    """The newest run, neither undone nor reverted, whose cursor holds ``key``: its id and
    cursor text (None when there is none)."""
    rows = store.fetch(
        f"SELECT id, cursor FROM runs WHERE {_STANDING_WITH_KEY} "
        "ORDER BY started_at DESC, id DESC LIMIT 1",
        {"pattern": f'%"{key}"%'},
    )
    return (str(rows[0][0]), rows[0][1]) if rows else None


def last_success_finished_at(store: Store, kind: str) -> Any:
    """When the last run of ``kind`` that succeeded finished (as stored; None when none did)."""
    return store.fetch(
        "SELECT max(finished_at) FROM runs WHERE kind = :k AND status = 'succeeded'", {"k": kind}
    )[0][0]
