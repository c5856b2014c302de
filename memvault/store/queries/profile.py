"""The profile family (``profile_daily``, ``interest_window``, ``diary``): a day's snapshot,
its interest windows and its diary page, as stored."""

from __future__ import annotations

import datetime as dt

import polars as pl

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
