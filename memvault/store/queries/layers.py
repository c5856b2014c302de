"""The layers family (``attitudes``, ``skills``, ``skill_uses``): what the owner holds and
can do, as the layers track keeps it."""

from __future__ import annotations

import polars as pl

from memvault.store.store import Store


def attitude_versions(store: Store) -> pl.DataFrame:
    """Every attitude (any status) with its version chain: id, statement, evidence,
    previous_id."""
    return store.fetch_df("SELECT id, statement, evidence, previous_id FROM attitudes")
