"""The layers family (``attitudes``, ``skills``, ``skill_uses``): what the owner holds and
can do, as the layers track keeps it."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from memvault.store.store import Store


def attitude_versions(store: Store) -> pl.DataFrame:
    """Every attitude (any status) with its version chain: id, statement, evidence,
    previous_id."""
    return store.fetch_df("SELECT id, statement, evidence, previous_id FROM attitudes")


def attitudes_as_shown(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """What a reviewer is shown of the attitudes of ``ids``: id, category, statement,
    confidence, created_at, superseded_at."""
    return store.fetch_df(
        "SELECT id, category, statement, confidence, created_at, superseded_at FROM attitudes "
        "WHERE id = ANY(CAST(:ids AS TEXT[]))",
        {"ids": list(ids)},
    )
