"""The recall family (``prefetch_cache``, ``recall_log``, ...): what recall keeps between
questions and what it was asked."""

from __future__ import annotations

import datetime as dt

import polars as pl

from memvault.store.store import Store


def live_prefetch_count(store: Store, now: dt.datetime) -> int:
    """How many prefetched answers have not expired at ``now``."""
    return int(
        store.fetch("SELECT count(*) FROM prefetch_cache WHERE expires_at > :now", {"now": now})[0][
            0
        ]
    )


def entity_lists_recalled_between(
    store: Store, since: dt.datetime, until: dt.datetime
) -> pl.DataFrame:
    """The ``entities`` (JSON list text) of each recall logged from ``since`` to ``until``."""
    return store.fetch_df(
        "SELECT entities FROM recall_log WHERE created_at >= :since AND created_at <= :now",
        {"since": since, "now": until},
    )
