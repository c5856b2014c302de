"""Skill levels derived from skill uses (A4): exposure → competent → generative.

Each use adds experience (0.5 for a bare exposure up to 1.5 for a proficient
use); experience halves every ``HALF_LIFE_DAYS`` without use, so "heard of",
"have done" and "can teach" stay distinguishable and fade when unused.
"""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from memvault.store import Mutation, Store

HALF_LIFE_DAYS = 90.0
#: (minimum experience, level), highest first.
LEVELS: tuple[tuple[float, str], ...] = ((10.0, "L3"), (3.0, "L2"), (0.0, "L1"))
EVIDENCE_KEPT = 5


def compute_skills(uses: pl.DataFrame, now: dt.datetime) -> pl.DataFrame:
    """One row per skill from its uses (columns of table ``skill_uses``)."""
    if uses.is_empty():
        return pl.DataFrame()
    age_days = (pl.lit(now) - pl.col("used_at")).dt.total_seconds() / 86_400.0
    decayed = (0.5 + pl.col("proficiency")) * (
        0.5 ** (age_days.clip(lower_bound=0) / HALF_LIFE_DAYS)
    )
    level = pl.lit("L1")
    for threshold, name in reversed(LEVELS):
        level = pl.when(pl.col("xp") >= threshold).then(pl.lit(name)).otherwise(level)
    return (
        uses.sort("used_at")
        .group_by("skill_id")
        .agg(
            pl.col("skill").last().alias("name"),
            decayed.sum().alias("xp"),
            pl.len().alias("uses"),
            pl.col("used_at").max().alias("last_used_at"),
            pl.col("session_id")
            .drop_nulls()
            .unique(maintain_order=True)
            .tail(EVIDENCE_KEPT)
            .alias("ev"),
        )
        .with_columns(
            level.alias("level"),
            pl.lit(HALF_LIFE_DAYS).alias("half_life_days"),
            pl.col("ev")
            .map_elements(lambda s: json.dumps(list(s)), return_dtype=pl.Utf8)
            .alias("evidence"),
            pl.lit(now).alias("updated_at"),
        )
        .rename({"skill_id": "id"})
        .select(
            "id",
            "name",
            "level",
            "xp",
            "half_life_days",
            "uses",
            "last_used_at",
            "evidence",
            "updated_at",
        )
        .sort("id")
    )


def recompute_skills(
    store: Store, mutation: Mutation, skill_ids: list[str], now: dt.datetime
) -> int:
    """Refresh the ``skills`` rows of the given skills inside ``mutation``; returns rows written."""
    if not skill_ids:
        return 0
    uses = store.fetch_df("SELECT * FROM skill_uses WHERE skill_id = ANY(:ids)", {"ids": skill_ids})
    fresh = compute_skills(uses, now)
    if fresh.is_empty():
        return 0
    existing = {
        r[0] for r in store.fetch("SELECT id FROM skills WHERE id = ANY(:ids)", {"ids": skill_ids})
    }
    is_old = pl.col("id").is_in(list(existing))
    written = len(mutation.insert("skills", fresh.filter(~is_old), action="derive"))
    written += mutation.update_many("skills", fresh.filter(is_old), action="derive")
    return written
