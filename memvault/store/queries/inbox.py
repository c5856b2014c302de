"""The ``discovery_inbox`` family: what the graph's discoveries left waiting for the user."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from memvault.store.store import Store


def new_discoveries_by_kind(store: Store) -> dict[str, int]:
    """How many new (unread) discoveries of each kind wait in the inbox."""
    rows = store.fetch(
        "SELECT kind, count(*) FROM discovery_inbox WHERE status = 'new' GROUP BY kind"
    )
    return {str(kind): int(n) for kind, n in rows}


def new_discovery_count(store: Store) -> int:
    """How many discoveries wait unread."""
    return int(store.fetch("SELECT count(*) FROM discovery_inbox WHERE status = 'new'")[0][0])


_COLUMNS = "id, kind, entity_ids, score, explanation, status, run_id, created_at, shown_at, detail"


def discoveries_in(store: Store, statuses: Sequence[str], limit: int) -> pl.DataFrame:
    """The ``limit`` best discoveries whose status is one of ``statuses`` (highest score,
    then newest, then by id): id, kind, entity_ids, score, explanation, status, run_id,
    created_at, shown_at, detail."""
    return store.fetch_df(
        f"SELECT {_COLUMNS} FROM discovery_inbox WHERE status = ANY(:s) "
        "ORDER BY score DESC, created_at DESC, id LIMIT :n",
        {"s": list(statuses), "n": int(limit)},
    )


def known_signatures(store: Store, signatures: Sequence[str]) -> set[str]:
    """The ``signatures`` some discovery in the inbox already has, whatever its status."""
    rows = store.fetch(
        "SELECT signature FROM discovery_inbox WHERE signature = ANY(:s)", {"s": list(signatures)}
    )
    return {str(r[0]) for r in rows}
