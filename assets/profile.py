"""The interest profile: daily snapshots, 7/30/90-day interest, the diary, knowledge gaps.

Four of these assets are partitioned by day (one ``DailyPartitionsDefinition``
in the owner's timezone, starting at ``MEMVAULT_PROFILE_START``). A backfill
over many days runs as one run per batch of days (``MEMVAULT_PROFILE_BATCH_DAYS``,
31): each asset loads the store once for its whole range and walks the days in
order. Every day reads the store as it stood at the end of that day (store
time), so a backfill a year later gives the rows the nightly run gave.
Re-materializing a day rewrites the same rows: unchanged rows are left alone.
"""

import datetime as dt
import json
import time
import warnings
from typing import Any

import dagster as dg

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    after,
    expectations_result,
    expectations_spec,
    judge_metadata,
    kinds,
    md_table,
    retried_on_llm_trouble,
    with_upstream,
)
from memvault.judge.store_cache import StoreJudgeCache
from memvault.profile import ProfileSettings, compute_snapshots, write_snapshots
from memvault.profile.diary import write_diary
from memvault.profile.gaps import refresh_gaps
from memvault.profile.interest import WINDOWS, write_interest
from memvault.profile.snapshot import read_snapshots
from resources import JudgeResource, StoreResource

PROFILE_GROUP = "profile"

# Backfill policies and nonexistent upstream partitions are what this track is built on; Dagster
# marks both beta, which is no news to whoever starts the UI.
warnings.filterwarnings(
    "ignore",
    message=r".*(allow_nonexistent_upstream_partitions|backfill_policy).*",
    category=dg.BetaWarning,
)

#: Read when the code location loads (see memvault.profile.settings).
SETTINGS = ProfileSettings.from_env()

#: One partition per day of the owner's timezone; the last one is yesterday (a complete day).
DAILY_PARTITIONS = dg.DailyPartitionsDefinition(
    start_date=SETTINGS.start.isoformat(), timezone=SETTINGS.timezone
)

#: A backfill runs as one run per batch of days; each asset handles a whole range at once.
BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=SETTINGS.batch_days)


def partition_days(context: dg.AssetExecutionContext) -> list[dt.date]:
    """The days this run covers (one partition, or a range from a backfill)."""
    return [dt.date.fromisoformat(key) for key in context.partition_keys]


def _run_id(context: dg.AssetExecutionContext, asset: str) -> str:
    return f"{asset}-{context.run.run_id[:8]}"


def _loads(text: str | None, default: str = "[]") -> Any:
    return json.loads(text or default)


def _names(items: list[dict[str, Any]], n: int = 5) -> str:
    return ", ".join(str(i.get("name") or i.get("intent")) for i in items[:n]) or "none"


@dg.asset(
    group_name=PROFILE_GROUP,
    partitions_def=DAILY_PARTITIONS,
    backfill_policy=BACKFILL,
    deps=[
        dg.AssetKey("collected_sessions"),
        dg.AssetDep(
            "daily_snapshot",
            partition_mapping=dg.TimeWindowPartitionMapping(
                start_offset=-1, end_offset=-1, allow_nonexistent_upstream_partitions=True
            ),
        ),
    ],
    automation_condition=after("collected_sessions", why="after the collector: yesterday"),
    check_specs=[expectations_spec("profile_daily", "daily_snapshot")],
    kinds=kinds("igraph", "polars"),
    owners=OWNERS,
    pool=STORE_POOL,
    description="One row per day in profile_daily: the most frequent recall intents, the "
    "entities most central to the day (personalized PageRank over the entity graph as it stood "
    "that evening, restarting at the day's entities), and which entities entered or left that "
    "list since the day before (this asset depends on its own previous day, so a backfill runs "
    "the days in order). Each day sees only what the store knew by its end: a fact learned "
    "later never shows up in an earlier day.",
)
def daily_snapshot(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    days = partition_days(context)
    started = time.monotonic()
    run_id = _run_id(context, "daily_snapshot")
    with store.open() as opened:
        rows = compute_snapshots(opened, days, SETTINGS)
        written = write_snapshots(opened, rows, run_id)
        checked = expectations_result(opened, "profile_daily", "daily_snapshot")
    last = rows.row(-1, named=True)
    activity = {k: 0 for k in ("sessions", "memories", "recalls", "facts_learned")}
    for text in rows["activity"].to_list():
        for key, value in json.loads(text).items():
            if key in activity:
                activity[key] += int(value)
    empty = sum(1 for text in rows["activity"].to_list() if not json.loads(text)["mentions"])
    return dg.MaterializeResult(
        check_results=[checked],
        metadata={
            "days": len(days),
            "first_day": days[0].isoformat(),
            "last_day": days[-1].isoformat(),
            "empty_days": empty,
            **{f"{k}_in_range": v for k, v in activity.items()},
            "rows_inserted": written.inserted,
            "rows_updated": written.updated,
            "rows_unchanged": written.unchanged,
            "duration_s": round(time.monotonic() - started, 3),
            "timezone": SETTINGS.timezone,
            "last_day_top_entities": _names(_loads(last["top_entities"])),
            "last_day_top_intents": _names(_loads(last["top_intents"])),
            "last_day_lists": md_table(
                [
                    {"list": "top entities", "values": _names(_loads(last["top_entities"]), 10)},
                    {"list": "top intents", "values": _names(_loads(last["top_intents"]), 10)},
                    {
                        "list": "appeared",
                        "values": _names(_loads(last["delta_vs_yesterday"], "{}")["appeared"]),
                    },
                    {
                        "list": "disappeared",
                        "values": _names(_loads(last["delta_vs_yesterday"], "{}")["disappeared"]),
                    },
                ]
            ),
        },
    )


def _interest_asset(window: int) -> dg.AssetsDefinition:
    name = f"interest_{window}d"

    @dg.asset(
        name=name,
        group_name=PROFILE_GROUP,
        partitions_def=DAILY_PARTITIONS,
        backfill_policy=BACKFILL,
        deps=[
            dg.AssetDep(
                daily_snapshot,
                partition_mapping=dg.TimeWindowPartitionMapping(
                    start_offset=-(2 * window - 1),
                    end_offset=0,
                    allow_nonexistent_upstream_partitions=True,
                ),
            )
        ],
        automation_condition=with_upstream("with the day's snapshot"),
        kinds=kinds("polars"),
        owners=OWNERS,
        pool=STORE_POOL,
        description=f"For each day, attention over the trailing {window} days (mentions per "
        f"entity in the daily snapshots) and what is rising and cooling against the {window} "
        f"days before; one row per day in interest_window (window_days = {window}). Reads the "
        f"{2 * window} daily snapshots it covers; days_covered says how many of the {window} "
        "had one.",
    )
    def _interest(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        days = partition_days(context)
        started = time.monotonic()
        with store.open() as opened:
            rows, written = write_interest(opened, days, window, SETTINGS, _run_id(context, name))
        last = rows.row(-1, named=True)
        return dg.MaterializeResult(
            metadata={
                "days": len(days),
                "window_days": window,
                "last_day_days_covered": int(last["days_covered"]),
                "rows_inserted": written.inserted,
                "rows_updated": written.updated,
                "rows_unchanged": written.unchanged,
                "duration_s": round(time.monotonic() - started, 3),
                "last_day_attention": _names(_loads(last["attention"])),
                "last_day_rising": _names(_loads(last["rising"])),
                "last_day_cooling": _names(_loads(last["cooling"])),
            }
        )

    return _interest


interest_7d, interest_30d, interest_90d = (_interest_asset(w) for w in WINDOWS)


@dg.asset(
    group_name=PROFILE_GROUP,
    partitions_def=DAILY_PARTITIONS,
    backfill_policy=BACKFILL,
    deps=[daily_snapshot, interest_7d],
    automation_condition=with_upstream("with the day's snapshot"),
    retry_policy=LLM_RETRY,
    kinds=kinds(llm=True),
    owners=OWNERS,
    pool=STORE_POOL,
    description="One diary page per day (table diary): what the owner thought about most, the "
    "people and things mentioned, what rose and cooled since the day before. Written by the LLM "
    "when one is configured, else a template page labelled as such, from the same numbers; a "
    "day with nothing recorded gets a page that says so. LLM replies are cached: a re-run makes "
    "no call.",
)
def diary_page(
    context: dg.AssetExecutionContext, store: StoreResource, llm: JudgeResource
) -> dg.MaterializeResult:
    days = partition_days(context)
    started = time.monotonic()
    with retried_on_llm_trouble(), store.open() as opened:
        snapshots = read_snapshots(opened, days[0], days[-1])
        missing = sorted(set(days) - set(snapshots["day"].to_list())) if snapshots.height else days
        if missing:
            raise dg.Failure(
                description=f"no daily_snapshot for {len(missing)} day(s) from "
                f"{missing[0].isoformat()}: materialize daily_snapshot for them first",
                allow_retries=False,
            )
        judge = llm.build(cache=StoreJudgeCache(opened))
        result = write_diary(opened, snapshots, judge, _run_id(context, "diary_page"))
    for failure in result.failures:
        context.log.warning(f"diary judge failed, template page written: {failure}")
    last = result.pages.row(-1, named=True)
    return dg.MaterializeResult(
        metadata={
            "days": len(days),
            "pages_llm": result.kinds["llm"],
            "pages_template": result.kinds["template"],
            "pages_empty_day": result.kinds["empty"],
            "pages_kept_unchanged": result.kinds["reused"],
            "judge_failures": len(result.failures),
            "rows_inserted": result.written.inserted,
            "rows_updated": result.written.updated,
            "rows_unchanged": result.written.unchanged,
            **judge_metadata(judge),
            "duration_s": round(time.monotonic() - started, 3),
            "last_page": dg.MetadataValue.md(str(last["text"])),
        }
    )


@dg.asset(
    group_name=PROFILE_GROUP,
    deps=[dg.AssetKey("dream_communities")],
    automation_condition=after("dream_communities", why="after the dream's communities"),
    kinds=kinds("polars"),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Knowledge gaps in table knowledge_gap, one row per gap (the dream's reflect "
    "stage writes recall gaps into the same rows): a recall that failed twice or more "
    "(once is not a gap), and structural gaps, entities next to something the owner talks about "
    "often, in the same community of the entity graph, that the owner never talks about. A gap "
    "is never filled in: it is marked answered, and kept, when the data answers it.",
)
def knowledge_gaps(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    started = time.monotonic()
    with store.open() as opened:
        run_id = opened.begin_run("gaps", {"dagster_run_id": context.run.run_id})
        report = refresh_gaps(opened, run_id)
        opened.finish_run(run_id, "succeeded", report.as_dict())
    open_rows = [r for r in report.rows if r["status"] == "open"]
    return dg.MaterializeResult(
        metadata={
            "gaps_opened": report.opened,
            "gaps_updated": report.updated,
            "gaps_answered": report.answered,
            "open_recall": report.open_by_kind.get("recall", 0),
            "open_structural": report.open_by_kind.get("structural", 0),
            "answered_total": report.answered_total,
            "duration_s": round(time.monotonic() - started, 3),
            "open_gaps": md_table(
                [
                    {
                        "kind": r["kind"],
                        "gap": r["detail"].get("entity") or r["query_signature"],
                        "why": r["detail"].get("reason", ""),
                    }
                    for r in open_rows[:20]
                ]
            ),
        }
    )


PROFILE_ASSETS: list[dg.AssetsDefinition] = [
    daily_snapshot,
    interest_7d,
    interest_30d,
    interest_90d,
    diary_page,
]

profile_job = dg.define_asset_job(
    "profile_job",
    selection=dg.AssetSelection.assets(*PROFILE_ASSETS),
    description="The daily profile for one day or a range of days: snapshot, 7/30/90-day "
    "interest, diary page. Backfill it from the UI (Partitions tab) or `memvault backfill`.",
)

gaps_job = dg.define_asset_job(
    "gaps_job",
    selection=dg.AssetSelection.assets(knowledge_gaps),
    description="Refresh the knowledge gaps (recall failures, structural gaps).",
)


defs = dg.Definitions(assets=[*PROFILE_ASSETS, knowledge_gaps], jobs=[profile_job, gaps_job])
