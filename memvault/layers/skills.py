"""Skill levels derived from skill uses: exposure → competent → generative.

Each use adds experience (0.5 for a bare exposure up to 1.5 for a proficient
use); experience halves every ``HALF_LIFE_DAYS`` without use, so "heard of"
(L1), "have done" (L2, 3 points) and "can teach" (L3, 10 points) stay
distinguishable, and a skill left unused moves down again: L3 → L2 → L1.
``record_use`` adds a use (audited) and refreshes that skill; ``decay_skills``
recomputes every skill at a given time and writes only what changed.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.config import env_number
from memvault.errors import MemvaultError
from memvault.normalize import canonical_name, normalize_text, to_utc_naive, utcnow
from memvault.records import stable_id
from memvault.store import Mutation, Store
from memvault.store.queries.layers import existing_skills, skill_standing, skill_uses_of
from memvault.store.tracked import own_or_callers_run

HALF_LIFE_DAYS = 90.0
#: (minimum experience, level), highest first.
LEVELS: tuple[tuple[float, str], ...] = ((10.0, "L3"), (3.0, "L2"), (0.0, "L1"))
#: What a level means, as the CLI shows it.
LEVEL_LABELS: dict[str, str] = {"L1": "heard of", "L2": "have done", "L3": "can teach"}
EVIDENCE_KEPT = 5
PHASE = "skills"
_XP_DIGITS = 4  # experience is compared at this precision (a re-run at the same time is equal)
#: A recomputation leaves alone experience that moved less than this (minutes of decay).
XP_MIN_CHANGE = 0.01


def half_life_days() -> float:
    """``MEMVAULT_SKILL_HALF_LIFE_DAYS`` (default 90)."""
    return env_number("MEMVAULT_SKILL_HALF_LIFE_DAYS", HALF_LIFE_DAYS)


def compute_skills(
    uses: pl.DataFrame, now: dt.datetime, half_life: float = HALF_LIFE_DAYS
) -> pl.DataFrame:
    """One row per skill from its uses (columns of table ``skill_uses``)."""
    if uses.is_empty():
        return pl.DataFrame()
    age_days = (pl.lit(now) - pl.col("used_at")).dt.total_seconds() / 86_400.0
    decayed = (0.5 + pl.col("proficiency")) * (0.5 ** (age_days.clip(lower_bound=0) / half_life))
    level = pl.lit("L1")
    for threshold, name in reversed(LEVELS):
        level = pl.when(pl.col("xp") >= threshold).then(pl.lit(name)).otherwise(level)
    return (
        uses.sort("used_at")
        .group_by("skill_id")
        .agg(
            pl.col("skill").last().alias("name"),
            decayed.sum().round(_XP_DIGITS).alias("xp"),
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
            pl.lit(half_life).alias("half_life_days"),
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
    store: Store,
    mutation: Mutation,
    skill_ids: list[str],
    now: dt.datetime,
    half_life: float | None = None,
) -> int:
    """Refresh the ``skills`` rows of the given skills inside ``mutation`` (half-life: the
    setting unless given); returns rows written."""
    if not skill_ids:
        return 0
    half_life = half_life or half_life_days()
    uses = skill_uses_of(store, skill_ids)
    fresh = compute_skills(uses, now, half_life)
    if fresh.is_empty():
        return 0
    existing = existing_skills(store, skill_ids)
    is_old = pl.col("id").is_in(list(existing))
    written = len(mutation.insert("skills", fresh.filter(~is_old), action="derive"))
    written += mutation.update_many("skills", fresh.filter(is_old), action="derive")
    return written


class SkillError(MemvaultError):
    """A skill use that cannot be recorded as given."""


_RANK = pl.col("level").str.slice(1).cast(pl.Int32)


@dataclass
class UseResult:
    """A recorded use: its id, the skill's id and its level before and after."""

    use_id: str
    skill_id: str
    level: str
    previous_level: str | None
    xp: float
    run_id: str


@dataclass
class SkillDecayReport:
    """What one recomputation of every skill found and wrote."""

    written: int = 0
    up: list[str] = field(default_factory=list)
    down: list[str] = field(default_factory=list)
    per_level: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "level_up": len(self.up),
            "level_down": len(self.down),
            **{f"skills_{level}": self.per_level.get(level, 0) for _, level in reversed(LEVELS)},
        }

    def metadata(self) -> dict[str, Any]:
        """The counts, and the first 30 skills whose level moved (up or down)."""
        moved = [{"skill": n, "change": "up"} for n in self.up] + [
            {"skill": n, "change": "down"} for n in self.down
        ]
        return {**self.as_dict(), "level_changes": moved[:30]}


def _level_of(store: Store, skill_id: str) -> str | None:
    found = skill_standing(store, skill_id)
    return found[0] if found is not None else None


def record_use(
    store: Store,
    name: str,
    proficiency: float = 0.5,
    evidence: str | None = None,
    *,
    session_id: str | None = None,
    now: dt.datetime | None = None,
    run_id: str | None = None,
    half_life: float | None = None,
) -> UseResult:
    """Record one use of a skill (audited, phase ``skills``) and refresh that skill's level.

    ``proficiency`` 0..1 (how well it was done); ``evidence`` a short note; ``now`` when it
    was used (default now, UTC). Opens a run of kind ``skills`` unless ``run_id`` is given.
    """
    from memvault.interchange import skill_id as skill_id_of

    name = normalize_text(name)
    if not canonical_name(name):
        raise SkillError("a skill use needs the skill's name")
    if not 0.0 <= proficiency <= 1.0:
        raise SkillError(f"proficiency {proficiency} is not between 0 and 1")
    now = to_utc_naive(now) if now else utcnow()
    half_life = half_life or half_life_days()
    sid = skill_id_of(name)
    use_id = stable_id("sku", canonical_name(name), session_id, now)
    before = _level_of(store, sid)
    with own_or_callers_run(store, PHASE, {"skill": name}, run_id) as run:
        with store.mutation(run.id, PHASE) as m:
            row = {"id": use_id, "skill_id": sid, "skill": name, "proficiency": proficiency,
                   "session_id": session_id, "evidence": evidence, "used_at": now}  # fmt: skip
            if not m.insert("skill_uses", pl.DataFrame([row]), reason="a use of the skill"):
                raise SkillError(f"this use of {name!r} at {now:%Y-%m-%d %H:%M:%S} is recorded")
            recompute_skills(store, m, [sid], now, half_life)
        standing = skill_standing(store, sid)
        if standing is None:  # recompute_skills wrote it in this run
            raise SkillError(f"the skill {name!r} has no level after its use")
        level, xp = standing
        run.stats = {"skill": name, "level": level}
    return UseResult(use_id, sid, str(level), before, float(xp), run.id)


def decay_skills(
    store: Store, now: dt.datetime, run_id: str, half_life: float | None = None
) -> SkillDecayReport:
    """Recompute every skill's experience and level at ``now`` (unused skills move down:
    L3 → L2 → L1), writing only the skills whose level, uses or evidence changed or whose
    experience moved by ``XP_MIN_CHANGE`` or more."""
    now = to_utc_naive(now)
    half_life = half_life or half_life_days()
    fresh = compute_skills(store.read_table("skill_uses"), now, half_life)
    report = SkillDecayReport()
    if fresh.is_empty():
        return report
    report.per_level = dict(fresh.group_by("level").len().iter_rows())
    old = store.read_table("skills").select(
        "id",
        pl.col("level").alias("old_level"),
        pl.col("xp").round(_XP_DIGITS).alias("old_xp"),
        pl.col("uses").alias("old_uses"),
        pl.col("evidence").alias("old_evidence"),
        pl.col("half_life_days").alias("old_half_life"),
    )
    joined = fresh.join(old, on="id", how="left")
    changed = joined.filter(
        pl.col("old_level").is_null()
        | (pl.col("level") != pl.col("old_level"))
        | ((pl.col("xp") - pl.col("old_xp")).abs() >= XP_MIN_CHANGE)
        | (pl.col("uses") != pl.col("old_uses"))
        | (pl.col("evidence") != pl.col("old_evidence"))
        | (pl.col("half_life_days") != pl.col("old_half_life"))
    )
    moved = changed.filter(pl.col("old_level").is_not_null()).with_columns(
        (_RANK - pl.col("old_level").str.slice(1).cast(pl.Int32)).alias("step")
    )
    report.up = moved.filter(pl.col("step") > 0)["name"].to_list()
    report.down = moved.filter(pl.col("step") < 0)["name"].to_list()
    if changed.height:
        rows = changed.select(fresh.columns)
        is_new = changed["old_level"].is_null()
        with store.mutation(run_id, PHASE) as m:
            report.written = len(m.insert("skills", rows.filter(is_new), action="derive"))
            report.written += m.update_many(
                "skills", rows.filter(~is_new), action="decay",
                reason=f"experience recomputed at {now:%Y-%m-%d %H:%M} "
                f"(half-life {half_life:g} days)",
            )  # fmt: skip
    return report


def skill_table(store: Store) -> pl.DataFrame:
    """The skills as stored, with the meaning of their level (``label``), highest level first."""
    frame = store.read_table("skills")
    return frame.with_columns(
        pl.col("level").replace_strict(LEVEL_LABELS, default="").alias("label")
    ).sort(["level", "xp", "name"], descending=[True, True, False])
