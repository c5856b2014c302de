"""Recall's background half: the prefetch cache, refreshed every hour.

The foreground recall (``memvault.recall``) serves a recall from this cache
when its question (intent and entities) was predicted; the asset predicts the
next questions, searches them ahead of time, and reports how often that paid.
"""

import dagster as dg

from assets.common import OWNERS, STORE_POOL, kinds, md_table
from memvault.recall import Recaller
from memvault.recall.prefetch import run_prefetch, settings_from_env
from memvault.stage import Timer
from resources import EmbedderResource, StoreResource

RECALL_GROUP = "recall"


@dg.asset(
    group_name=RECALL_GROUP,
    deps=[dg.AssetKey("memory_embeddings")],
    kinds=kinds("polars", "numpy"),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Results searched ahead of time for the questions the owner is likely to ask "
    "next, in table prefetch_cache: questions asked recently, often or answered well, the daily "
    "profile's top and rising entities, and what the last sessions talked about. A recall with "
    "the same question (intent and entities) is answered from here while the entry is valid. "
    "An unchanged prediction writes nothing; the metadata shows the hit rate of the last day.",
)
def prefetch_cache(
    context: dg.AssetExecutionContext, store: StoreResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    timer = Timer()
    settings = settings_from_env()
    recaller = Recaller(embedder.build())
    with store.open() as opened:
        report = run_prefetch(
            opened,
            recaller,
            limit=int(settings["limit"]),
            ttl_hours=settings["ttl_hours"],
            dagster_run_id=context.run.run_id,
        )
    rate = report.hit_rate
    index = recaller.index
    return dg.MaterializeResult(
        metadata={
            "predictions": report.predictions,
            "from_recent_recalls": report.by_source.get("recent_recalls", 0),
            "from_profile": report.by_source.get("profile", 0),
            "from_recent_sessions": report.by_source.get("recent_sessions", 0),
            "entries_written": report.written,
            "entries_refreshed": report.refreshed,
            "entries_unchanged": report.unchanged,
            "entry_hit_rate_24h": rate["entry_hit_rate"] or 0.0,
            "recall_hit_rate_24h": rate["recall_hit_rate"] or 0.0,
            "hit_rate_24h": md_table(rate),
            "index_build_s": round(index.built_seconds, 3) if index else 0.0,
            "run_id": report.run_id,
            "duration_s": timer.seconds,
        }
    )


prefetch_job = dg.define_asset_job(
    "prefetch_job",
    selection=dg.AssetSelection.assets(prefetch_cache),
    description="Refresh the prefetch cache: predict the owner's next questions and search them "
    "ahead of time.",
)

prefetch_hourly_schedule = dg.ScheduleDefinition(
    name="prefetch_hourly",
    job=prefetch_job,
    cron_schedule="5 * * * *",
    description="The prefetch cache is refreshed every hour at five past; a run that finds "
    "nothing new writes nothing.",
)


defs = dg.Definitions(
    assets=[prefetch_cache], jobs=[prefetch_job], schedules=[prefetch_hourly_schedule]
)
