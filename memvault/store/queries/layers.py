"""The layers family (``attitudes``, ``skills``, ``skill_uses``): what the owner holds and
can do, as the layers track keeps it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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


def skill_uses_of(store: Store, skill_ids: Sequence[str]) -> pl.DataFrame:
    """Every recorded use (all columns) of the skills of ``skill_ids``."""
    return store.fetch_df(
        "SELECT * FROM skill_uses WHERE skill_id = ANY(:ids)", {"ids": list(skill_ids)}
    )


def existing_skills(store: Store, skill_ids: Sequence[str]) -> set[str]:
    """The ids among ``skill_ids`` that have a ``skills`` row."""
    rows = store.fetch("SELECT id FROM skills WHERE id = ANY(:ids)", {"ids": list(skill_ids)})
    return {r[0] for r in rows}


def skill_standing(store: Store, skill_id: str) -> tuple[str, float] | None:
    """(level, xp) of the skill; None when it has no ``skills`` row."""
    rows = store.fetch("SELECT level, xp FROM skills WHERE id = :id", {"id": skill_id})
    return (str(rows[0][0]), float(rows[0][1])) if rows else None


def attitude_statements(store: Store) -> list[tuple[Any, ...]]:
    """(id, statement) of every attitude, any status."""
    return store.fetch("SELECT id, statement FROM attitudes")


def attitude_spans(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """id, statement, created_at, superseded_at of the attitudes among ``ids``: when each
    version was held."""
    return store.fetch_df(
        "SELECT id, statement, created_at, superseded_at FROM attitudes "
        "WHERE id = ANY(CAST(:ids AS TEXT[]))",
        {"ids": list(ids)},
    )


def attitude_rows(store: Store, *, current_only: bool) -> pl.DataFrame:
    """Every column of the attitudes (only the current versions, not superseded, if
    ``current_only``), by id, typed as the table is."""
    return store.read_table("attitudes", "superseded_at IS NULL" if current_only else "")


def attitude_chain_rows(store: Store, category: str, topic_key: str) -> pl.DataFrame:
    """Every column of each version of one (category, topic) (``topic_key``: the topic lower
    case, the category when empty), by id, typed as the table is."""
    return store.read_table(
        "attitudes",
        "category = :c AND lower(coalesce(topic, category)) = :t",
        {"c": category, "t": topic_key},
    )
