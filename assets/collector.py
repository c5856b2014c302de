"""The collector track: new sessions in, vectors for what came in."""

import datetime as dt

import dagster as dg

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    as_metadata,
    judge_metadata,
    kinds,
    retried_on_llm_trouble,
)
from assets.stage_adapter import check_result, shown
from memvault.collector import collect
from memvault.judge.store_cache import StoreJudgeCache
from memvault.references import references_resolve
from memvault.stage import Timer
from memvault.store import Store
from memvault.store.tables import COUNTED_TABLES
from memvault.vectors import embed_missing
from resources import CollectorSourcesResource, EmbedderResource, JudgeResource, StoreResource

#: The collector runs daily; a day and two hours without a new collection is late.
DAILY = dg.FreshnessPolicy.time_window(
    fail_window=dt.timedelta(hours=26), warn_window=dt.timedelta(hours=25)
)


REFERENCES = dg.AssetCheckSpec(
    "references_resolve",
    asset="collected_sessions",
    blocking=True,
    description="Every reference (a memory's session, a mention's entity, a fact's subject) "
    "points at a stored row.",
)


@dg.asset(
    group_name="collector",
    kinds=kinds(llm=True),
    owners=OWNERS,
    pool=STORE_POOL,
    freshness_policy=DAILY,
    retry_policy=LLM_RETRY,
    check_specs=[REFERENCES],  # run in this step, on its store connection
    description="Sessions, memories, entities and facts collected from the JSONL inbox and from "
    "Claude Code transcripts; a file already collected (same content) is skipped.",
)
def collected_sessions(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    sources: CollectorSourcesResource,
    llm: JudgeResource,
) -> dg.MaterializeResult:
    timer = Timer()
    with retried_on_llm_trouble(), store.open() as opened:
        judge = llm.build(cache=StoreJudgeCache(opened))
        report = collect(
            opened,
            inbox=sources.inbox_path(),
            claude_projects=sources.claude_path(),
            judge=judge,
            include_subagents=sources.include_subagents,
            on_file=lambda path: context.log.debug(f"collecting {path}"),
        )
        counts, checked = opened.counts(COUNTED_TABLES), _references_resolve(opened)
    for _, error in report.failures:
        context.log.error(f"not ingested: {error}")
    for warning in report.warnings:
        context.log.warning(warning)
    seconds = {"duration_s": timer.seconds}
    return dg.MaterializeResult(
        check_results=[checked],
        # The dream sensor reads sessions_total (never the store file).
        metadata=as_metadata(
            report.metadata()
            | judge_metadata(judge)
            | seconds
            | {
                "sessions_total": counts["sessions"],
                "store_rows": [{"table": t, "rows": n} for t, n in counts.items()],
            }
        ),
    )


def _references_resolve(store: Store) -> dg.AssetCheckResult:
    return check_result(REFERENCES.name, references_resolve(store))


@dg.asset(
    group_name="collector",
    deps=[collected_sessions],
    kinds=kinds("onnx"),
    owners=OWNERS,
    pool=STORE_POOL,
    freshness_policy=DAILY,
    description="An embedding vector per active memory and entity for the configured model "
    "(offline MiniLM by default); only what is new or changed is embedded.",
)
def memory_embeddings(
    context: dg.AssetExecutionContext, store: StoreResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    timer = Timer()
    model = embedder.build()
    with store.open() as opened:
        report = embed_missing(
            opened,
            model,
            on_progress=lambda done, total: context.log.debug(f"embedded {done}/{total}"),
        )
    return dg.MaterializeResult(metadata=shown(report, timer.seconds))


collect_job = dg.define_asset_job(
    "collect_job",
    selection=dg.AssetSelection.groups("collector"),
    description="Collect new sessions (JSONL inbox, Claude Code transcripts) and embed what came "
    "in.",
)

collector_schedule = dg.ScheduleDefinition(
    name="collector_daily",
    job=collect_job,
    cron_schedule="15 2 * * *",
    # On from the start: the night's other tracks follow the collector, so a schedule left off
    # would leave the whole night off.
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="The collector runs daily at 02:15, the one clock of the night: the gardener, "
    "the profile and the layers follow it by automation, the lint follows the gardener and "
    "tiering follows the dream. On by default (stop it here to pause the night).",
)

defs = dg.Definitions(
    assets=[collected_sessions, memory_embeddings],
    jobs=[collect_job],
    schedules=[collector_schedule],
)
