"""The dream's stages around its graph: orient before it; reflect, consolidate, prune after.

Every stage of one dream shares a run id derived from the Dagster run's root,
so a run re-executed from failure continues the same dream: its audit rows,
its stage figures and its report stay together, and actions already applied
are not applied again — while the dream has not ended. A dream is all or
nothing: a stage that fails for good (no retry left) ends it, and everything it
wrote is reverted (:mod:`memvault.dream.atomic`); a re-execution of a reverted
dream stops with a message, and the next dream starts from the store as it was.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import dagster as dg

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    as_metadata,
    kinds,
    retried_on_llm_trouble,
)
from assets.stage_adapter import materialize, track_run_id
from memvault.dream import orient
from memvault.dream.atomic import ensure_going_on, fail_dream
from memvault.dream.exclusive import DreamInProgress, begin_dream
from memvault.dream.report import (
    record_stage,
)
from memvault.dream.stages import consolidate, prune_and_report, reflect_stage
from memvault.judge.store_cache import StoreJudgeCache
from memvault.stage import Figures, Stage, judge_figures
from memvault.store import Store
from resources import DreamResource, JudgeResource, ReviewResource, StoreResource

DREAM_GROUP = "dream"


#: What a stage or a check of the dream runs with.
StageContext = dg.AssetExecutionContext | dg.AssetCheckExecutionContext


def dream_run_id(context: StageContext, dry_run: bool) -> str:
    """One id per dream, stable across re-execution from failure (the root run's id)."""
    return track_run_id(context, "dream-dry" if dry_run else "dream")


def _will_retry(context: dg.AssetExecutionContext, exc: Exception, retries: int) -> bool:
    """Whether Dagster runs the failed step again (under its retry policy of ``retries``)."""
    if isinstance(exc, dg.Failure) and not exc.allow_retries:
        return False
    if isinstance(exc, dg.RetryRequested):
        return context.retry_number < exc.max_retries
    return context.retry_number < retries


def end_failed_dream(context: StageContext, store: StoreResource, run_id: str, why: str) -> None:
    """Revert a dream that failed (logged); if the store cannot be opened now, the next run
    that begins finds the dream abandoned and reverts it then."""
    try:
        with store.open() as opened:
            report = fail_dream(opened, run_id, why)
    except Exception as exc:
        context.log.error(
            f"dream {run_id} failed, and the store could not be opened to revert what it wrote "
            f"({type(exc).__name__}: {exc}); the next run that begins on the store reverts it"
        )
        return
    if report is not None:
        context.log.warning(f"dream {run_id} failed ({why}): {report.describe()}")


@contextmanager
def all_or_nothing(
    context: dg.AssetExecutionContext, store: StoreResource, dream: DreamResource, retries: int = 0
) -> Iterator[str]:
    """Run a stage of the dream (yields its run id); a stage that fails for good ends the
    dream, and what the dream wrote is reverted before the failure is reported."""
    run_id = dream_run_id(context, dream.dry_run)
    try:
        yield run_id
    except Exception as exc:
        if not _will_retry(context, exc, retries):
            cause = (
                exc.description if isinstance(exc, dg.Failure) else f"{type(exc).__name__}: {exc}"
            )
            end_failed_dream(
                context, store, run_id, f"{context.op_execution_context.op.name} failed: {cause}"
            )
        raise


def carry_on(store: Store, run_id: str) -> None:
    """This process carries the dream on now; a dream already reverted stops here."""
    store.heartbeat(run_id)
    ensure_going_on(store, run_id)


def _ensure_run(
    context: dg.AssetExecutionContext, store: Store, run_id: str, dream: DreamResource
) -> None:
    """Begin the dream, or stop with a clear message when another one runs on the store."""
    try:
        notes = begin_dream(
            store,
            run_id,
            "dream-dry-run" if dream.dry_run else "dream",
            {"dry_run": dream.dry_run, "gate_hours": dream.gate_hours},
        )
    except DreamInProgress as busy:
        raise dg.Failure(description=str(busy), allow_retries=False) from None
    for note in notes:
        context.log.warning(note)


def _judged_stage(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    dream: DreamResource,
    stage: Callable[..., Any],
    **options: Any,
) -> dg.MaterializeResult:
    """Run a stage that may ask the judge (``stage(store, judge, run_id, dry_run=, log=, warn=,
    **options)``): on the dream's run, with the store's reply cache, retried on LLM trouble;
    its result's figures, the judge's and the time taken."""
    with (
        all_or_nothing(context, store, dream, LLM_RETRY.max_retries or 0) as run_id,
        retried_on_llm_trouble(),
        store.open() as opened,
    ):
        carry_on(opened, run_id)
        judge = llm.build(cache=StoreJudgeCache(opened))

        def work() -> Figures:
            result = stage(
                opened,
                judge,
                run_id,
                dry_run=dream.dry_run,
                log=context.log.info,
                warn=context.log.warning,
                **options,
            )
            return Figures(result.metadata() | judge_figures(judge))

        return materialize(Stage(context.asset_key.to_user_string(), work))


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dg.AssetKey("memory_embeddings")],
    kinds=kinds(),
    owners=OWNERS,
    pool=STORE_POOL,
    description="What is new since the last successful dream: sessions, memories, entities and "
    "facts the store learned since then (read from the audit log, so an old history imported "
    "today counts as new).",
)
def dream_orient(
    context: dg.AssetExecutionContext, store: StoreResource, dream: DreamResource
) -> dg.MaterializeResult:
    with all_or_nothing(context, store, dream) as run_id, store.open() as opened:
        _ensure_run(context, opened, run_id, dream)
        stats = orient(opened)
        record_stage(opened, run_id, "orient", stats.as_dict())
    return dg.MaterializeResult(
        metadata={"dream_run_id": run_id, "dry_run": dream.dry_run, **as_metadata(stats.metadata())}
    )


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dg.AssetKey("dream_discoveries")],
    kinds=kinds(llm=True),
    owners=OWNERS,
    pool=STORE_POOL,
    retry_policy=LLM_RETRY,
    description="Insights and knowledge gaps, read off a statistics snapshot of the store (never "
    "the raw memories) and a few memory blocks about the central entities. Without an LLM, an "
    "honest statistical reflection labelled as such. An LLM's insight is stored (as a block of "
    "kind insight) only when it cites source blocks it was given that support every name, "
    "number and date in it and it holds no instruction-like text; the others are refused and "
    "counted. An insight already written is not written again.",
)
def dream_reflect(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    dream: DreamResource,
) -> dg.MaterializeResult:
    return _judged_stage(
        context, store, llm, dream, reflect_stage, max_insights=dream.config().max_insights
    )


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dream_reflect],
    kinds=kinds("polars", llm=True),
    owners=OWNERS,
    pool=STORE_POOL,
    retry_policy=LLM_RETRY,
    description="Content normalization first (broken encodings repaired, whitespace collapsed, "
    "over-long memories split into parts; the original text stays in the audit log), then "
    "temporal conflict resolution in audited batches: rules settle the clear cases "
    "(restatements merged, one value at a time ordered by when it became true), the judge only "
    "the ambiguous ones, and an unsure verdict goes to the review queue instead of the store.",
)
def dream_consolidate(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    dream: DreamResource,
    review: ReviewResource,
) -> dg.MaterializeResult:
    return _judged_stage(
        context,
        store,
        llm,
        dream,
        consolidate,
        config=dream.conflict_config(),
        policy=review.policy(),
    )


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dream_consolidate],
    kinds=kinds(),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Revives archived entities that are referred to again, archives orphan entities "
    "(never deletes them), writes the dream report and marks the dream done; the dream sensor "
    "reads its time from here.",
)
def dream_prune(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    dream: DreamResource,
) -> dg.MaterializeResult:
    with all_or_nothing(context, store, dream) as run_id, store.open() as opened:
        carry_on(opened, run_id)
        end = prune_and_report(
            opened, run_id, dream.config(), judge_kind=llm.build().kind, dry_run=dream.dry_run
        )
    context.log.info(end.report.render())
    report = {"report": dg.MetadataValue.md(end.report.render())}
    return dg.MaterializeResult(metadata=as_metadata(end.metadata()) | report)
