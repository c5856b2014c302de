"""Tiering: each active block is hot, warm, cold or frozen by its effective age.

The effective age is the block's age divided by what its use earned it (recalls, the
owner's +/−, recall verdicts; see :mod:`memvault.lifecycle.weights`), so a block the owner
keeps coming back to stays warm while an untouched twin of the same age cools down. Pinned
blocks stay hot.

Hot and warm keep the full text. Demotion to cold replaces the text with a digest of at
most 400 characters (``summary`` holds it too), demotion to frozen with a one-line headline
(:mod:`memvault.lifecycle.digest`). Digests are one-way: a promotion changes the tier only,
and a block demoted again keeps the digest it has. Tiers decide what is shown, never what
can be found: the full text a digest replaces goes to ``block_originals`` in the same
transaction (the first original wins), and recall searches it (:mod:`memvault.lifecycle.originals`).
Every change is audited in phase ``tiering`` in batches, so ``memvault undo RUN_ID`` brings
the full text back (and drops the originals the run kept). The plan is computed from the data
alone, so a re-run right after plans nothing and asks nothing.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.config import env_number
from memvault.errors import MemvaultError
from memvault.judge.base import Judge
from memvault.lifecycle.digest import (
    BLOCKS_PER_CALL,
    DIGEST_MAX_CHARS,
    DIGEST_REFUSALS,
    HEADLINE_MAX_CHARS,
    DigestStats,
    digest_blocks,
)
from memvault.lifecycle.originals import originals_frame
from memvault.lifecycle.weights import block_weights, effective_age_days
from memvault.normalize import utcnow
from memvault.stage import Verdict
from memvault.store import Store
from memvault.store.queries.blocks import (
    active_blocks_to_tier,
    block_texts_and_summaries,
    digested_block_count,
    digested_blocks_with_tiering_audit,
)
from memvault.store.tracked import tracked_run

TIERS: tuple[str, ...] = ("hot", "warm", "cold", "frozen")
RANK = {t: i for i, t in enumerate(TIERS)}
PHASE = "tiering"


@dataclass(frozen=True)
class TierConfig:
    """Effective-age thresholds (days): hot below ``hot_days``, warm below ``warm_days``, cold
    below ``cold_days``, frozen beyond. The defaults fit a history of a few months: the last
    week hot, the last month warm, the last quarter cold."""

    hot_days: float = 7.0
    warm_days: float = 30.0
    cold_days: float = 90.0
    batch_size: int = 20_000
    blocks_per_call: int = BLOCKS_PER_CALL

    def __post_init__(self) -> None:
        if not 0 < self.hot_days <= self.warm_days <= self.cold_days:
            raise MemvaultError(
                f"tier thresholds must grow: hot {self.hot_days} ≤ warm {self.warm_days} ≤ "
                f"cold {self.cold_days} days"
            )

    @classmethod
    def from_env(cls) -> TierConfig:
        """``MEMVAULT_TIER_HOT_DAYS`` (7), ``MEMVAULT_TIER_WARM_DAYS`` (30),
        ``MEMVAULT_TIER_COLD_DAYS`` (90)."""
        return cls(
            hot_days=env_number("MEMVAULT_TIER_HOT_DAYS", 7.0),
            warm_days=env_number("MEMVAULT_TIER_WARM_DAYS", 30.0),
            cold_days=env_number("MEMVAULT_TIER_COLD_DAYS", 90.0),
        )

    def tier_of(self, column: str) -> pl.Expr:
        """The tier for an age column."""
        age = pl.col(column)
        return (
            pl.when(age < self.hot_days)
            .then(pl.lit("hot"))
            .when(age < self.warm_days)
            .then(pl.lit("warm"))
            .when(age < self.cold_days)
            .then(pl.lit("cold"))
            .otherwise(pl.lit("frozen"))
        )


def _rank(column: str) -> pl.Expr:
    return pl.col(column).replace_strict(RANK, default=0, return_dtype=pl.Int8)


@dataclass
class TierPlan:
    """Every active block with its current tier, the tier its effective age asks for, and the
    tier its age alone would give."""

    now: dt.datetime
    config: TierConfig
    blocks: pl.DataFrame

    @property
    def changes(self) -> pl.DataFrame:
        return self.blocks.filter(pl.col("tier") != pl.col("target"))

    def tiers(self, column: str) -> dict[str, int]:
        counts = dict(self.blocks[column].value_counts().iter_rows()) if self.blocks.height else {}
        return {t: int(counts.get(t, 0)) for t in TIERS}

    def edges(self) -> dict[str, int]:
        changes = self.changes
        if changes.is_empty():
            return {}
        rows = changes.group_by("tier", "target").len().sort("tier", "target").iter_rows()
        return {f"{a}→{b}": int(n) for a, b, n in rows}

    @property
    def demotions(self) -> int:
        return self.changes.filter(_rank("target") > _rank("tier")).height

    @property
    def promotions(self) -> int:
        return self.changes.filter(_rank("target") < _rank("tier")).height

    @property
    def kept_by_use(self) -> int:
        """Blocks whose age alone would put them in a colder tier than their use does."""
        return self.blocks.filter(_rank("age_tier") > _rank("target")).height


def plan_tiering(
    store: Store, now: dt.datetime | None = None, config: TierConfig | None = None
) -> TierPlan:
    """The tier every active block should be in as of ``now``; reads only, asks nothing."""
    now = now or utcnow()
    config = config or TierConfig()
    blocks = active_blocks_to_tier(store)
    schema = {
        "id": pl.Utf8,
        "tier": pl.Utf8,
        "pinned": pl.Boolean,
        "digest_kind": pl.Utf8,
        "created_at": pl.Datetime("us"),
    }
    blocks = pl.DataFrame(schema=schema) if blocks.is_empty() else blocks.cast(schema)  # type: ignore[arg-type]
    weights = block_weights(store, now).drop("last_access_at")
    frame = blocks.join(weights, left_on="id", right_on="block_id", how="left").with_columns(
        tier=pl.col("tier")
        .fill_null("hot")
        .replace_strict({t: t for t in TIERS}, default="hot", return_dtype=pl.Utf8),
        age_days=(
            (pl.lit(now, dtype=pl.Datetime("us")) - pl.col("created_at")).dt.total_microseconds()
            / 86_400_000_000
        ).clip(0.0, None),
    )
    frame = frame.with_columns(
        effective_age_days=pl.Series(
            effective_age_days(frame["age_days"].to_numpy(), frame), dtype=pl.Float64
        )
    )
    frame = frame.with_columns(
        target=pl.when(pl.col("pinned"))
        .then(pl.lit("hot"))
        .otherwise(config.tier_of("effective_age_days")),
        age_tier=pl.when(pl.col("pinned"))
        .then(pl.lit("hot"))
        .otherwise(config.tier_of("age_days")),
    ).sort("id")
    return TierPlan(now=now, config=config, blocks=frame)


@dataclass
class TieringResult:
    """What a tiering pass found and did."""

    plan: TierPlan
    run_id: str | None = None
    dry_run: bool = False
    written: int = 0
    originals: int = 0  # full texts kept for search beside their new digest
    digests: Counter[str] = field(default_factory=Counter)
    digest_stats: DigestStats = field(default_factory=DigestStats)
    duration_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "blocks": plan.blocks.height,
            "tiers_before": plan.tiers("tier"),
            "tiers_after": plan.tiers("target"),
            "demotions": plan.demotions,
            "promotions": plan.promotions,
            "by_edge": plan.edges(),
            "digests": dict(self.digests),
            "rejected_replies": self.digest_stats.rejected,
            "rejected_digests": dict(sorted(self.digest_stats.rejected_by.items())),
            "judge_failures": self.digest_stats.failed,
            "kept_by_use": plan.kept_by_use,
            "written": self.written,
            "originals_kept": self.originals,
            "duration_s": round(self.duration_s, 3),
        }

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows: flat counts per tier, digest kind and refusal reason."""
        summary, digests = self.summary(), self.digests
        return {
            "tiering_run_id": summary["run_id"] or "nothing to change",
            "dry_run": summary["dry_run"],
            "blocks": summary["blocks"],
            **{f"{t}_before": n for t, n in summary["tiers_before"].items()},
            **{f"{t}_after": n for t, n in summary["tiers_after"].items()},
            "demotions": summary["demotions"],
            "promotions": summary["promotions"],
            "by_edge": [{"edge": e, "blocks": n} for e, n in summary["by_edge"].items()],
            "digests_llm": int(digests.get("llm", 0)),
            "digests_extractive": int(digests.get("extractive", 0)),
            "headlines": int(
                digests.get("headline_llm", 0) + digests.get("headline_extractive", 0)
            ),
            "headlines_extractive": int(digests.get("headline_extractive", 0)),
            "rejected_replies": summary["rejected_replies"],
            **{
                f"rejected_digests_{reason}": int(summary["rejected_digests"].get(reason, 0))
                for reason in DIGEST_REFUSALS
            },
            "judge_failures": summary["judge_failures"],
            "kept_by_use": summary["kept_by_use"],
            "rows_written": summary["written"],
            "originals_kept": summary["originals_kept"],
            "duration_s": summary["duration_s"],
        }


def _digest_updates(
    store: Store, rows: pl.DataFrame, judge: Judge, config: TierConfig, result: TieringResult
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The new text, summary and digest_kind of the demoted rows that need a digest, and the
    full text (id, text) of those whose text becomes a digest for the first time."""
    current = block_texts_and_summaries(store, rows["id"].to_list())
    texts = dict(zip(current["id"].to_list(), current["text"].to_list(), strict=True))
    summaries = dict(zip(current["id"].to_list(), current["summary"].to_list(), strict=True))
    digests = digest_blocks(
        judge,
        [(i, str(texts.get(i) or "")) for i in rows["id"].to_list()],
        result.digest_stats,
        per_call=config.blocks_per_call,
    )
    out, originals = [], []
    for row in rows.iter_rows(named=True):
        digest = digests[row["id"]]
        full_text = row["digest_kind"] is None
        if full_text:
            originals.append({"id": row["id"], "text": str(texts.get(row["id"]) or "")})
        if row["target"] == "frozen":
            summary = digest.summary if full_text else summaries.get(row["id"])
            text, kind = digest.headline, "headline"
            if full_text:
                result.digests[digest.summary_kind] += 1
            result.digests[f"headline_{digest.headline_kind}"] += 1
        else:
            summary, text, kind = digest.summary, digest.summary, digest.summary_kind
            result.digests[kind] += 1
        out.append({"id": row["id"], "text": text, "summary": summary, "digest_kind": kind})
    return pl.DataFrame(
        out, schema={"id": pl.Utf8, "text": pl.Utf8, "summary": pl.Utf8, "digest_kind": pl.Utf8}
    ), pl.DataFrame(originals, schema={"id": pl.Utf8, "text": pl.Utf8})


def apply_tiering(
    store: Store, plan: TierPlan, judge: Judge, run_id: str, result: TieringResult | None = None
) -> TieringResult:
    """Write the plan's changes in audited batches (phase ``tiering``)."""
    result = result or TieringResult(plan=plan, run_id=run_id)
    changes = plan.changes.with_columns(
        demote=_rank("target") > _rank("tier"),
        needs_digest=((pl.col("target") == "cold") & pl.col("digest_kind").is_null())
        | ((pl.col("target") == "frozen") & (pl.col("digest_kind").fill_null("") != "headline")),
    )
    size = max(1, plan.config.batch_size)
    for start in range(0, changes.height, size):
        batch = changes.slice(start, size)
        with_digest = batch.filter(pl.col("demote") & pl.col("needs_digest"))
        digests, originals = (
            _digest_updates(store, with_digest, judge, plan.config, result)
            if with_digest.height
            else (None, None)
        )
        with store.mutation(run_id, PHASE) as m:
            if originals is not None and originals.height:
                # Before the text becomes a digest, in the same transaction: what recall
                # searches the block by (an original kept earlier is left as it is).
                result.originals += len(
                    m.insert(
                        "block_originals",
                        originals_frame(originals, run_id, plan.now),
                        action="keep-original",
                        reason="the full text a digest replaces, kept for search",
                    )
                )
            for (edge_from, edge_to), group in batch.group_by(
                "tier", "target", maintain_order=True
            ):
                action = "demote" if RANK[str(edge_to)] > RANK[str(edge_from)] else "promote"
                reason = (
                    f"{edge_from} → {edge_to}: effective age (age ÷ usage) against the tiers "
                    f"hot < {plan.config.hot_days:g} d, warm < {plan.config.warm_days:g} d, "
                    f"cold < {plan.config.cold_days:g} d"
                )
                frame = (
                    group.select("id", "target")
                    .rename({"target": "tier"})
                    .with_columns(tiered_at=pl.lit(plan.now, dtype=pl.Datetime("us")))
                )
                if digests is not None and action == "demote":
                    frame = frame.join(digests, on="id", how="left")
                    plain = frame.filter(pl.col("digest_kind").is_null()).select(
                        "id", "tier", "tiered_at"
                    )
                    digested = frame.filter(pl.col("digest_kind").is_not_null())
                    result.written += m.update_many("blocks", plain, action=action, reason=reason)
                    result.written += m.update_many(
                        "blocks", digested, action=action, reason=reason + "; text now its digest"
                    )
                else:
                    result.written += m.update_many("blocks", frame, action=action, reason=reason)
    return result


def run_tiering(
    store: Store,
    judge: Judge,
    *,
    now: dt.datetime | None = None,
    config: TierConfig | None = None,
    dry_run: bool = False,
) -> TieringResult:
    """Plan, then (unless ``dry_run``) apply under a run of kind ``tiering``. A pass with
    nothing to change opens no run, writes nothing and asks nothing."""
    started = time.monotonic()
    plan = plan_tiering(store, now, config)
    result = TieringResult(plan=plan, dry_run=dry_run)
    if not dry_run and plan.changes.height:
        params = {"now": plan.now.isoformat(), "changes": plan.changes.height}
        with tracked_run(store, PHASE, params) as run:
            result.run_id = run.id
            apply_tiering(store, plan, judge, run.id, result)
            result.duration_s = time.monotonic() - started
            run.stats = result.summary()
    result.duration_s = time.monotonic() - started
    return result


def digest_violations(store: Store) -> pl.DataFrame:
    """Blocks whose digest breaks the one-way promise: a digest with no tiering row in the audit
    log (the full text would be gone), a summary over the limit, or a headline over one line.
    Columns id, tier, digest_kind, problem; empty when every digest is sound."""
    rows = digested_blocks_with_tiering_audit(store)
    if rows.is_empty():
        return pl.DataFrame(
            schema={"id": pl.Utf8, "tier": pl.Utf8, "digest_kind": pl.Utf8, "problem": pl.Utf8}
        )
    problem = (
        pl.when(pl.col("audited").is_null())
        .then(pl.lit("no before-image in the audit log"))
        .when(pl.col("summary").fill_null("").str.len_chars() > DIGEST_MAX_CHARS)
        .then(pl.lit(f"summary over {DIGEST_MAX_CHARS} characters"))
        .when(
            (pl.col("digest_kind") == "headline")
            & (
                pl.col("text").str.contains("\n")
                | (pl.col("text").str.len_chars() > HEADLINE_MAX_CHARS)
            )
        )
        .then(pl.lit("headline longer than one line"))
    )
    return (
        rows.with_columns(problem.alias("problem"))
        .filter(pl.col("problem").is_not_null())
        .select("id", "tier", "digest_kind", "problem")
        .sort("id")
    )


def digests_kept(store: Store) -> Verdict:
    """Every digest keeps the one-way promise (:func:`digest_violations`), with how many
    blocks carry one."""
    broken = digest_violations(store)
    return Verdict(
        broken.is_empty(),
        {
            "blocks_with_a_digest": int(digested_block_count(store)),
            "violations": broken.height,
            "sample": broken.head(20).to_dicts(),
        },
    )
