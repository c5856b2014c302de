"""Guarantees of the dream, as asset checks on ``dream_consolidate``.

The checks are the core's (:mod:`memvault.dream.guarantees`): this module declares them on
the asset and runs them in one step (one process, one connection to the store), each
shown as an evaluation whether it passed or not. Blocking checks stop ``dream_prune`` (and
so the dream never counts as successful, which keeps the dual gate open for a retry). A
blocking check cannot undo what the stages before it wrote, so when one fails the dream
reverts itself here: the store is left as it was before the dream
(:mod:`memvault.dream.atomic`).
"""

from collections.abc import Iterator

import dagster as dg

from assets.common import STORE_POOL
from assets.dream.stages import dream_consolidate, dream_run_id, end_failed_dream
from assets.stage_adapter import check_result, evaluate_checks
from memvault.dream.atomic import ensure_going_on
from memvault.dream.guarantees import CHECKS, DreamChecks
from memvault.judge.store_cache import StoreJudgeCache
from resources import DreamResource, JudgeResource, ReviewResource, StoreResource


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
        checks = DreamChecks.scoped(
            opened,
            run_id,
            llm.build(cache=StoreJudgeCache(opened)),
            dream.conflict_config(),
            review.policy(),
            dry_run=dream.dry_run,
            full=dream.full,
            full_every_days=dream.config().full_every_days,
        )
        context.log.info(checks.describe())
        verdicts = evaluate_checks(context, checks.checks())
        blocked = checks.settle(verdicts)
    if blocked:
        # The checked stage's writes are in the store already: the dream reverts them itself
        # (a dry run wrote nothing: it is closed as failed).
        end_failed_dream(context, store, run_id, f"blocking check(s) failed: {', '.join(blocked)}")
    asset = dream_consolidate.key.to_user_string()
    yield from (check_result(name, verdict, asset) for name, verdict in verdicts.items())
