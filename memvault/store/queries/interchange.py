"""What export reads of every record table (:mod:`memvault.export`): the rows of one table a
page at a time, in id order, so an export streams in flat memory whatever the store's size."""

from __future__ import annotations

import polars as pl

from memvault.store.backends import ident
from memvault.store.store import Store


def rows_after(store: Store, table: str, last: str, limit: int) -> pl.DataFrame:
    """Up to ``limit`` whole rows of ``table`` whose id sorts after ``last``, by id."""
    return store.fetch_df(
        f"SELECT * FROM {ident(table)} WHERE id > :last ORDER BY id LIMIT {int(limit)}",
        {"last": last},
    )
