"""The profile family (``profile_daily``, ``interest_window``, ``diary``, ``knowledge_gap``): a
day's snapshot, its interest windows, its diary page and the gaps recorded, as stored; what a
snapshot reads of the history as the store knew it at a day's end, and what the gap rules read of
the recall log, the owner's mentions and the communities."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import polars as pl

from memvault.paths import sql_text
from memvault.store.backends import ident
from memvault.store.store import Store


def _latest(store: Store, table: str) -> dt.date | None:
    day = store.fetch(f"SELECT max(day) FROM {table}")[0][0]
    if day is None:
        return None
    return day if isinstance(day, dt.date) else dt.date.fromisoformat(str(day))


def latest_profile_day(store: Store) -> dt.date | None:
    """The latest day with a daily snapshot (None when no day has one yet)."""
    return _latest(store, "profile_daily")


def latest_diary_day(store: Store) -> dt.date | None:
    """The latest day with a diary page (None when no day has one yet)."""
    return _latest(store, "diary")


def daily_snapshot(store: Store, day: dt.date) -> pl.DataFrame:
    """The stored daily snapshot of ``day`` (every column, JSON still as text; empty if none)."""
    return store.fetch_df("SELECT * FROM profile_daily WHERE day = :d", {"d": day})


def interest_windows(store: Store, day: dt.date) -> pl.DataFrame:
    """The interest windows of ``day``, shortest first: window_days, days_covered, attention,
    rising, cooling (JSON as text)."""
    return store.fetch_df(
        "SELECT window_days, days_covered, attention, rising, cooling FROM interest_window "
        "WHERE day = :d ORDER BY window_days",
        {"d": day},
    )


def latest_top_entities(store: Store, day: dt.date) -> str | None:
    """The top entities (JSON text) of the newest daily snapshot on or before ``day``; None
    without one."""
    rows = store.fetch(
        "SELECT top_entities FROM profile_daily WHERE day <= :d ORDER BY day DESC LIMIT 1",
        {"d": day},
    )
    return rows[0][0] if rows else None


def latest_rising(store: Store, day: dt.date, window_days: int) -> str | None:
    """The rising entities (JSON text) of the newest ``window_days`` interest window on or
    before ``day``; None without one."""
    rows = store.fetch(
        "SELECT rising FROM interest_window WHERE day <= :d AND window_days = :w "
        "ORDER BY day DESC LIMIT 1",
        {"d": day, "w": window_days},
    )
    return rows[0][0] if rows else None


def diary_page(store: Store, day: dt.date) -> pl.DataFrame:
    """The diary page of ``day``: day, kind, model, text (empty if none)."""
    return store.fetch_df("SELECT day, kind, model, text FROM diary WHERE day = :d", {"d": day})


def snapshots_between(store: Store, first: dt.date, last: dt.date) -> pl.DataFrame:
    """The stored daily snapshots of [first, last] (every column), oldest first."""
    return store.fetch_df(
        "SELECT * FROM profile_daily WHERE day >= :a AND day <= :b ORDER BY day",
        {"a": first, "b": last},
    )


def daily_attention(store: Store, first: dt.date, last: dt.date) -> list[tuple[Any, ...]]:
    """(day, attention JSON text) of each stored snapshot of [first, last], in no order."""
    return store.fetch(
        "SELECT day, attention FROM profile_daily WHERE day >= :a AND day <= :b",
        {"a": first, "b": last},
    )


def snapshot_cuts(store: Store, first: dt.date, last: dt.date) -> list[tuple[Any, ...]]:
    """(day, known_at) of each stored snapshot of [first, last]: the instant it read the store
    at, in no order."""
    return store.fetch(
        "SELECT day, known_at FROM profile_daily WHERE day >= :a AND day <= :b",
        {"a": first, "b": last},
    )


def stored_rows(
    store: Store, table: str, columns: Sequence[str], ids: Sequence[str]
) -> pl.DataFrame:
    """The ``columns`` of the rows of ``table`` (a day-keyed table of the profile) among ``ids``:
    what a re-materialization compares its rows with."""
    cols = ", ".join(ident(c) for c in columns)
    return store.fetch_df(
        f"SELECT {cols} FROM {ident(table)} WHERE id = ANY(:ids)", {"ids": list(ids)}
    )


def diary_sources(store: Store, ids: Sequence[str]) -> dict[str, tuple[Any, Any, Any]]:
    """id → (source, kind, text) of the stored diary pages among ``ids``: a page whose source
    and kind are unchanged stands."""
    rows = store.fetch(
        "SELECT id, source, kind, text FROM diary WHERE id = ANY(:ids)",
        {"ids": list(ids) or [""]},
    )
    return {str(r[0]): (r[1], r[2], r[3]) for r in rows}


def latest_diary_entry(store: Store, id_prefix: str) -> pl.DataFrame:
    """The newest diary entry whose id starts with ``id_prefix``: id, text, created_at (empty if
    none)."""
    return store.fetch_df(
        "SELECT id, text, created_at FROM diary WHERE substr(id, 1, :n) = :prefix "
        "ORDER BY created_at DESC, id DESC LIMIT 1",
        {"n": len(id_prefix), "prefix": id_prefix},
    )


# -- knowledge gaps (memvault.profile.gaps) --------------------------------------------------

_GAP_COLUMNS = (
    "id, kind, query_signature, fail_count, first_fail_at, last_fail_at, status, "
    "answered_at, detail"
)


def recall_outcomes(store: Store) -> pl.DataFrame:
    """Every recall logged: intent_label, entities (JSON list text), verdict, created_at (the
    recall rule reads which signatures failed and were answered since)."""
    return store.fetch_df("SELECT intent_label, entities, verdict, created_at FROM recall_log")


def owner_visits(store: Store) -> dict[Any, Any]:
    """Entity id → the distinct sessions in which the owner named it (their own turns, their
    recalls); entities the owner never named are absent."""
    return dict(store.fetch(sql_text("queries/owner_visits.sql")))


def community_neighbours(store: Store) -> pl.DataFrame:
    """The connected edges whose two ends are active and in the same Leiden community:
    source_id, target_id, weight (composite), community."""
    return store.fetch_df(sql_text("queries/community_neighbours.sql"))


def gap_states(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """id, fail_count, status of the gaps recorded among ``ids``."""
    return store.fetch_df(
        "SELECT id, fail_count, status FROM knowledge_gap WHERE id = ANY(:ids)",
        {"ids": list(ids) or [""]},
    )


def open_structural_gaps(store: Store) -> pl.DataFrame:
    """id, detail (JSON text) of the structural gaps still open."""
    return store.fetch_df(
        "SELECT id, detail FROM knowledge_gap WHERE kind = 'structural' AND status = 'open'"
    )


def gaps_recorded(store: Store, status: str | None = None) -> pl.DataFrame:
    """Every gap (or those with ``status``), open first, then by kind, fail count (most first)
    and id; detail as JSON text."""
    return store.fetch_df(
        f"SELECT {_GAP_COLUMNS} FROM knowledge_gap"
        + (" WHERE status = :s" if status else "")
        + " ORDER BY CASE status WHEN 'open' THEN 0 ELSE 1 END, kind, fail_count DESC, id",
        {"s": status} if status else None,
    )


def gap_of_signature(store: Store, signature: str) -> pl.DataFrame:
    """The gap recorded for a query signature, an open one first (at most one row; detail as
    JSON text)."""
    return store.fetch_df(
        f"SELECT {_GAP_COLUMNS} FROM knowledge_gap WHERE query_signature = :s "
        "ORDER BY CASE status WHEN 'open' THEN 0 ELSE 1 END, id LIMIT 1",
        {"s": signature},
    )


# -- the history a snapshot reads (memvault.profile.snapshot) ---------------------------------


def mentions_known_before(store: Store, cut: dt.datetime) -> pl.DataFrame:
    """Every mention the store knew before ``cut`` (by its memory's creation, else when it was
    said): entity_id, block_id, session_id, known_at."""
    return store.fetch_df(sql_text("queries/mentions_known_before.sql"), {"cut": cut})


def facts_linking_before(store: Store, cut: dt.datetime) -> pl.DataFrame:
    """The facts linking two distinct entities learned before ``cut`` (the entity graph's
    pairs), with when the store learned and retired each: subject_id, object_id, created_at,
    expired_at."""
    return store.fetch_df(
        "SELECT t.subject_id, t.object_id, t.created_at, t.expired_at FROM triples t "
        "WHERE t.created_at < :cut AND t.object_id IS NOT NULL AND t.object_id <> t.subject_id",
        {"cut": cut},
    )


def facts_learned_between(store: Store, start: dt.datetime, cut: dt.datetime) -> pl.DataFrame:
    """The facts the store learned in [start, cut): id, subject_id, predicate, object,
    created_at."""
    return store.fetch_df(
        "SELECT t.id, t.subject_id, t.predicate, t.object, t.created_at "
        "FROM triples t WHERE t.created_at >= :start AND t.created_at < :cut",
        {"start": start, "cut": cut},
    )


def facts_known_at(store: Store, end: dt.datetime) -> int:
    """How many facts the store held at ``end`` (learned before it, not retired by then)."""
    rows = store.fetch(
        "SELECT count(*) FROM triples t "
        "WHERE t.created_at < :end AND (t.expired_at IS NULL OR t.expired_at >= :end)",
        {"end": end},
    )
    return int(rows[0][0])


def recalls_between(store: Store, start: dt.datetime, cut: dt.datetime) -> pl.DataFrame:
    """The recalls logged in [start, cut): intent_label, verdict, created_at."""
    return store.fetch_df(
        "SELECT intent_label, verdict, created_at FROM recall_log "
        "WHERE created_at >= :start AND created_at < :cut",
        {"start": start, "cut": cut},
    )


def sessions_started_between(store: Store, start: dt.datetime, cut: dt.datetime) -> pl.DataFrame:
    """started_at of the sessions started in [start, cut)."""
    return store.fetch_df(
        "SELECT started_at FROM sessions WHERE started_at >= :start AND started_at < :cut",
        {"start": start, "cut": cut},
    )


def memories_created_between(store: Store, start: dt.datetime, cut: dt.datetime) -> pl.DataFrame:
    """created_at of the memory blocks created in [start, cut)."""
    return store.fetch_df(
        "SELECT created_at FROM blocks WHERE created_at >= :start AND created_at < :cut",
        {"start": start, "cut": cut},
    )
