"""Guarantees of the dream, as asset checks on ``dream_consolidate`` (O3).

Blocking checks stop ``dream_prune`` (and so the dream never counts as
successful, which keeps the dual gate open for a retry) when consolidation
lost a fact or left two functional facts overlapping. Each check returns
``passed=False`` with the offending rows rather than raising, so the UI shows
an evaluation either way.
"""

import dagster as dg
import polars as pl

from assets.dream import dream_consolidate
from memvault.judge.store_cache import StoreJudgeCache
from memvault.quality import validate_triples
from memvault.temporal import (
    Grounding,
    bitemporal_overlaps,
    data_loss_violations,
    grounding_violations,
    plan_conflicts,
)
from resources import DreamResource, JudgeResource, StoreResource


def _result(
    offending: pl.DataFrame, *, dry_run: bool = False, **metadata: object
) -> dg.AssetCheckResult:
    """Offending rows → a check result. After a dry run the store is as it was before the
    dream, so a failure there is a warning about the store, not a fault of this run."""
    sample = offending.head(20).to_dicts()
    return dg.AssetCheckResult(
        passed=offending.is_empty(),
        severity=dg.AssetCheckSeverity.WARN if dry_run else dg.AssetCheckSeverity.ERROR,
        metadata={
            "violations": offending.height,
            "sample": dg.MetadataValue.json(sample),
            **metadata,
        },
    )


@dg.asset_check(
    asset=dream_consolidate,
    description="L2 grounding: every active triple conforms to its predicate's definition "
    "(unknown predicates are reported, not guessed).",
)
def grounding(store: StoreResource) -> dg.AssetCheckResult:
    with store.open() as opened:
        offending = grounding_violations(opened, Grounding.load())
    by_problem = dict(offending.group_by("problem").len().iter_rows()) if offending.height else {}
    return _result(offending, by_problem=dg.MetadataValue.json(by_problem))


@dg.asset_check(
    asset=dream_consolidate,
    blocking=True,
    description="No data loss: every ingested fact is active, superseded with invalid_at, "
    "or merged into a surviving fact that carries its content.",
)
def no_data_loss(store: StoreResource, dream: DreamResource) -> dg.AssetCheckResult:
    with store.open() as opened:
        return _result(data_loss_violations(opened), dry_run=dream.dry_run)


@dg.asset_check(
    asset=dream_consolidate,
    blocking=True,
    description="Bi-temporal consistency: no two active facts of a functional predicate "
    "overlap in valid time for the same subject.",
)
def bitemporal_consistency(store: StoreResource, dream: DreamResource) -> dg.AssetCheckResult:
    with store.open() as opened:
        return _result(bitemporal_overlaps(opened, Grounding.load()), dry_run=dream.dry_run)


@dg.asset_check(
    asset=dream_consolidate,
    blocking=True,
    description="Idempotency (GD-S3): planning again right after applying yields an empty plan "
    "and asks the judge nothing.",
)
def idempotency(
    store: StoreResource, llm: JudgeResource, dream: DreamResource
) -> dg.AssetCheckResult:
    if dream.dry_run:
        return dg.AssetCheckResult(
            passed=True, metadata={"skipped": "dry run: nothing was applied"}
        )
    with store.open() as opened:
        judge = llm.build(cache=StoreJudgeCache(opened))
        before = judge.stats.as_dict()
        plan = plan_conflicts(opened, judge, config=dream.conflict_config())
    asked = {k: v - before[k] for k, v in judge.stats.as_dict().items()}
    questions = asked["calls"] + asked["heuristic_answers"] + asked["cache_hits"]
    return dg.AssetCheckResult(
        passed=plan.is_empty() and questions == 0,
        metadata={
            "planned_again": dg.MetadataValue.json(dict(plan.counts())),
            "judge_questions": questions,
            "llm_calls": asked["calls"],
            "sample": dg.MetadataValue.json([a.describe() for a in plan.actions[:20]]),
        },
    )


@dg.asset_check(
    asset=dream_consolidate,
    description="Great Expectations (GX 1.x) suite on triples: ids unique, required columns, "
    "statuses, confidence in [0, 1], retired facts dated, invalid_at >= valid_at.",
)
def triples_expectations(store: StoreResource) -> dg.AssetCheckResult:
    with store.open() as opened:
        result = validate_triples(opened)
    return dg.AssetCheckResult(
        passed=result.success,
        metadata={
            "expectations": result.evaluated,
            "failed": dg.MetadataValue.json(result.failed),
            "rows": result.rows,
        },
    )
