"""What an ingest asks of the store besides its staging tables (:mod:`.staging`): the registry
of ingests in progress (``ingest_staging``), the sources already ingested, and the stored
records an input names."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import polars as pl

from memvault.store.backends import ident

if TYPE_CHECKING:  # the store imports the ingest's staging clean-up, which asks this family
    from memvault.store.store import Store

#: The registry of ingests in progress.
REGISTRY = "ingest_staging"


def register(store: Store, ingest_id: str, source: str, host: str, pid: int, now: Any) -> None:
    """Register an ingest in progress, carried by process ``pid`` on ``host``."""
    store.backend.execute(
        f"INSERT INTO {REGISTRY} (id, source, host, pid, started_at, heartbeat_at) "
        "VALUES (:id, :s, :h, :p, :t, :t)",
        {"id": ingest_id, "s": source, "h": host, "p": pid, "t": now},
    )


def heartbeat(store: Store, ingest_id: str, now: Any) -> None:
    """The ingest is still alive at ``now``."""
    store.backend.execute(
        f"UPDATE {REGISTRY} SET heartbeat_at = :t WHERE id = :id", {"t": now, "id": ingest_id}
    )


def unregister(store: Store, ingest_id: str) -> None:
    store.backend.execute(f"DELETE FROM {REGISTRY} WHERE id = :id", {"id": ingest_id})


def registered(store: Store) -> list[tuple[Any, ...]]:
    """Every ingest in progress: id, host, pid, heartbeat_at."""
    return store.fetch(f"SELECT id, host, pid, heartbeat_at FROM {REGISTRY}")


def is_ingested(store: Store, source_hash: str) -> bool:
    """Whether a source of this content hash was ingested already."""
    return bool(store.fetch("SELECT 1 FROM ingested_sources WHERE id = :h", {"h": source_hash}))


def record_source(
    store: Store,
    source_hash: str,
    location: str,
    size_bytes: int,
    records: int,
    run_id: str,
    now: dt.datetime,
) -> None:
    """Remember an ingested source by its content hash (so the same file is skipped)."""
    row = {
        "id": source_hash,
        "location": location,
        "size_bytes": size_bytes,
        "records": records,
        "run_id": run_id,
        "ingested_at": now,
    }
    store.backend.insert_df("ingested_sources", pl.DataFrame([row]))


def entities_named(store: Store, ids: list[str], names: list[str]) -> list[tuple[Any, ...]]:
    """(id, canonical_name) of the stored entities with one of these ids or canonical
    names."""
    return store.fetch(
        "SELECT id, canonical_name FROM entities "
        "WHERE id = ANY(:ids) OR canonical_name = ANY(:names)",
        {"ids": ids, "names": names},
    )


def session_ends(store: Store, ids: list[str]) -> pl.DataFrame:
    """``id`` and ``stored_end`` (their ``ended_at``) of the stored sessions of these ids."""
    return store.fetch_df(
        "SELECT id, ended_at AS stored_end FROM sessions WHERE id = ANY(:ids)", {"ids": ids}
    )


def stored_ids(store: Store, table: str, ids: list[str]) -> list[str]:
    """Of these ids, those ``table`` holds."""
    rows = store.fetch(f"SELECT id FROM {ident(table)} WHERE id = ANY(:ids)", {"ids": ids})
    return [str(r[0]) for r in rows]


def memory_limit(store: Store) -> str:
    """DuckDB's memory limit as set now."""
    [(limit,)] = store.fetch("SELECT current_setting('memory_limit')")
    return str(limit)


def set_memory_limit(store: Store, size: str) -> None:
    """DuckDB's memory limit set to ``size`` (a size already checked safe to splice)."""
    store.backend.execute(f"SET memory_limit = '{size}'")
