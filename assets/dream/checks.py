"""Guarantees of the dream, as asset checks on ``dream_consolidate``.

Blocking checks stop ``dream_prune`` (and so the dream never counts as
successful, which keeps the dual gate open for a retry) when consolidation
lost a fact, left two one-at-a-time facts overlapping, or would act again.
A blocking check cannot undo what the stages before it wrote, so when one
fails the dream reverts itself here: the store is left as it was before the
dream (:mod:`memvault.dream.atomic`).
The five checks run in one step (one process, one connection to the store)
and each returns ``passed=False`` with the offending rows rather than
raising, so the UI shows an evaluation either way.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg
import polars as pl

from assets.common import STORE_POOL, md_table
from assets.dream.stages import dream_consolidate, dream_run_id, end_failed_dream
from assets.stage_adapter import evaluate_checks
from memvault.dream.atomic import ensure_going_on
from memvault.dream.check_scope import STAGE as SCOPE_STAGE
from memvault.dream.check_scope import CheckScope, check_scope
from memvault.dream.orient import last_dream, new_ids_since
from memvault.dream.report import record_stage
from memvault.judge.base import Judge
from memvault.judge.store_cache import StoreJudgeCache
from memvault.lint.findings import open_findings
from memvault.review.policy import ReviewPolicy
from memvault.store import Store
from memvault.temporal import (
    ConflictConfig,
    Grounding,
    bitemporal_overlaps,
    data_loss_violations,
    grounding_violations,
    plan_conflicts,
)
from resources import DreamResource, JudgeResource, ReviewResource, StoreResource

CHECKS: dict[str, tuple[bool, str]] = {
    "no_data_loss": (
        True,
        "No data loss: every fact ever stored is still active, superseded with the date it "
        "stopped holding, or merged into a surviving fact that carries its content.",
    ),
    "bitemporal_consistency": (
        True,
        "Bi-temporal consistency: for a predicate with one value at a time, no two current facts "
        "about the same subject overlap in the time they held (pairs waiting for a human's "
        "decision excepted).",
    ),
    "idempotency": (
        True,
        "Idempotency: planning again right after applying finds nothing to do and asks the "
        "judge nothing.",
    ),
    "grounding": (
        True,
        "Every active fact conforms to its predicate's definition (subject and object types, "
        "allowed values); a predicate without a definition is reported, never guessed. A fact "
        "learned since the last dream that does not conform stops the dream; older ones are "
        "reported as a warning (the lint's grounding layer proposes what to do with them).",
    ),
    "triples_expectations": (
        False,
        "Great Expectations suite on the facts table: ids unique, required columns set, known "
        "statuses, confidence between 0 and 1, retired facts dated, no fact ending before it "
        "began.",
    ),
}


def _result(
    name: str, offending: pl.DataFrame, *, warn_only: bool = False, **metadata: Any
) -> dg.AssetCheckResult:
    """Offending rows → a check result; a failure that is ``warn_only`` does not block (after
    a dry run the store is as it was before the dream: a warning about it, not this run's
    fault)."""
    return dg.AssetCheckResult(
        check_name=name,
        passed=offending.is_empty(),
        severity=dg.AssetCheckSeverity.WARN if warn_only else dg.AssetCheckSeverity.ERROR,
        metadata={
            "violations": offending.height,
            "sample": md_table(offending.head(20).to_dicts()),
            **metadata,
        },
    )


def grounding(store: Store, scope: CheckScope | None = None) -> dg.AssetCheckResult:
    """The lint's grounding rule on the consolidated store (or the facts in ``scope``), beside
    what the last ``lint_grounding`` left open (its stable-but-changing predicates, its archive
    proposals)."""
    offending = grounding_violations(store, Grounding.load(), _ids(scope))
    by_problem = dict(offending.group_by("problem").len().iter_rows()) if offending.height else {}
    new = offending.filter(
        pl.col("triple_id").is_in(list(new_ids_since(store, "triples", last_dream(store)[1])))
    )
    return _result(
        "grounding",
        offending,
        # Only a new ungrounded fact blocks the dream: an old one is the lint's to settle.
        warn_only=new.is_empty(),
        new_violations=new.height,
        new_sample=md_table(new.head(20).to_dicts()),
        by_problem=md_table(by_problem, ("problem", "facts")),
        last_lint=md_table(open_findings(store, "L2"), ("rule", "open findings")),
        **_scoped(scope),
    )


def _ids(scope: CheckScope | None) -> list[str] | None:
    return None if scope is None else scope.triple_ids


def _scoped(scope: CheckScope | None) -> dict[str, Any]:
    return {} if scope is None else scope.metadata()


def no_data_loss(
    store: Store, dry_run: bool = False, scope: CheckScope | None = None
) -> dg.AssetCheckResult:
    return _result(
        "no_data_loss",
        data_loss_violations(store, _ids(scope)),
        warn_only=dry_run,
        **_scoped(scope),
    )


def bitemporal_consistency(
    store: Store, dry_run: bool = False, scope: CheckScope | None = None
) -> dg.AssetCheckResult:
    return _result(
        "bitemporal_consistency",
        bitemporal_overlaps(store, Grounding.load(), _ids(scope)),
        warn_only=dry_run,
        **_scoped(scope),
    )


def idempotency(
    store: Store,
    judge: Judge,
    config: ConflictConfig,
    dry_run: bool = False,
    policy: ReviewPolicy | None = None,
    scope: CheckScope | None = None,
) -> dg.AssetCheckResult:
    if dry_run:
        return dg.AssetCheckResult(
            check_name="idempotency", passed=True, metadata={"skipped": "dry run: nothing applied"}
        )
    before = judge.stats.as_dict()
    plan = plan_conflicts(store, judge, config=config, policy=policy, triple_ids=_ids(scope))
    asked = {k: v - before[k] for k, v in judge.stats.as_dict().items()}
    questions = asked["calls"] + asked["heuristic_answers"] + asked["cache_hits"]
    return dg.AssetCheckResult(
        check_name="idempotency",
        passed=plan.is_empty() and questions == 0,
        metadata={
            "planned_again": sum(plan.counts().values()),
            "judge_questions": questions,
            "llm_calls": asked["calls"],
            "sample": md_table([{"decision": a.describe()} for a in plan.actions[:20]]),
            **_scoped(scope),
        },
    )


def triples_expectations(store: Store, scope: CheckScope | None = None) -> dg.AssetCheckResult:
    """The facts table's suite, on every row or (``scope``) on the facts that changed."""
    from memvault.quality import validate_triples

    result = validate_triples(store, _ids(scope))
    return dg.AssetCheckResult(
        asset_key=dream_consolidate.key.to_user_string(),
        check_name="triples_expectations",
        passed=result.success,
        metadata={
            "expectations": result.evaluated,
            "failed_expectations": len(result.failed),
            "failed": md_table([{"expectation": f} for f in result.failed]),
            "rows": result.rows,
            "scope": "every row",
            **_scoped(scope),
        },
    )


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(name, asset=dream_consolidate, blocking=blocking, description=text)
        for name, (blocking, text) in CHECKS.items()
    ],
    pool=STORE_POOL,
    can_subset=True,
    description="The dream's guarantees on the consolidated store, in one step.",
)
def dream_guarantees(
    context: dg.AssetCheckExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    dream: DreamResource,
    review: ReviewResource,
) -> Iterator[dg.AssetCheckResult]:
    run_id = dream_run_id(context, dream.dry_run)
    with store.open() as opened:
        ensure_going_on(opened, run_id)
        judge = llm.build(cache=StoreJudgeCache(opened))
        # An incremental night checks the facts changed since the last dream's checks; the
        # first dream, a requested one and one a week check every fact.
        scope = check_scope(
            opened, run_id, full=dream.full, full_every_days=dream.config().full_every_days
        )
        context.log.info(f"checks' scope: {scope.reason} ({scope.figures()['triples']} facts)")
        results = evaluate_checks(
            context,
            {
                "no_data_loss": lambda: no_data_loss(opened, dream.dry_run, scope),
                "bitemporal_consistency": lambda: bitemporal_consistency(
                    opened, dream.dry_run, scope
                ),
                "idempotency": lambda: idempotency(
                    opened, judge, dream.conflict_config(), dream.dry_run, review.policy(), scope
                ),
                "grounding": lambda: grounding(opened, scope),
                "triples_expectations": lambda: triples_expectations(opened, scope),
            },
        )
    blocked = [str(r.check_name) for r in results if _blocks(r)]
    selected = {key.name for key in context.selected_asset_check_keys}
    if not blocked and not dream.dry_run and selected == set(CHECKS):
        with store.open() as opened:  # the next dream's checks start where these read up to
            record_stage(opened, run_id, SCOPE_STAGE, scope.figures())
    if blocked:
        # The checked stage's writes are in the store already: the dream reverts them itself
        # (a dry run wrote nothing: it is closed as failed).
        end_failed_dream(
            context, store, run_id, f"blocking check(s) failed: {', '.join(sorted(blocked))}"
        )
    yield from results


def _blocks(result: dg.AssetCheckResult) -> bool:
    """A failed blocking check of error severity: it stops the stages after it."""
    blocking = CHECKS.get(result.check_name or "", (False, ""))[0]
    return blocking and not result.passed and result.severity == dg.AssetCheckSeverity.ERROR
