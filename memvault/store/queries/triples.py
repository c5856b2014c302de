"""The ``triples`` family: facts read by id, whatever module weighs them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from memvault.store.store import Store


def triples_by_id(store: Store, ids: Sequence[str], columns: str | Iterable[str]) -> pl.DataFrame:
    """The triples among ``ids``, of any status, with ``columns`` (a list, or one SQL column
    list such as ``"id, subject_id"``), in no particular order."""
    listed = columns if isinstance(columns, str) else ", ".join(columns)
    return store.fetch_df(
        f"SELECT {listed} FROM triples WHERE id = ANY(CAST(:ids AS TEXT[]))", {"ids": list(ids)}
    )


def active_triple_ids(store: Store, ids: Sequence[str]) -> set[str]:
    """The ids among ``ids`` whose triple is active (believed now)."""
    rows = store.fetch(
        "SELECT id FROM triples WHERE status = 'active' AND id = ANY(CAST(:ids AS TEXT[]))",
        {"ids": list(ids)},
    )
    return {str(r[0]) for r in rows}
