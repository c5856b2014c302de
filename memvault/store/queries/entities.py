"""The ``entities`` family: the names and types entities go by, for the modules that label ids."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from memvault.store.store import Store


def entity_labels(store: Store) -> dict[str, tuple[str, str]]:
    """Every entity, whatever its status: id → (name, type) (an id in an old fact or mention
    keeps its label after the entity is merged or archived)."""
    rows = store.fetch("SELECT id, name, entity_type FROM entities")
    return {str(i): (str(n), str(t)) for i, n, t in rows}


def entity_labels_of(
    store: Store, ids: Sequence[str], *, active_only: bool = False
) -> dict[str, tuple[str, str]]:
    """The entities among ``ids`` (only active ones if ``active_only``): id → (name, type);
    an id that names no such entity is absent."""
    active = " AND status = 'active'" if active_only else ""
    rows = store.fetch(
        f"SELECT id, name, entity_type FROM entities WHERE id = ANY(:ids){active}",
        {"ids": list(ids)},
    )
    return {str(i): (str(n), str(t)) for i, n, t in rows}


def active_entities(store: Store) -> pl.DataFrame:
    """The active entities: id, name, entity_type."""
    return store.fetch_df("SELECT id, name, entity_type FROM entities WHERE status = 'active'")
