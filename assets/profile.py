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
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg
import polars as pl

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    after,
    check_each_partition,
    expectations_result,
    expectations_spec,
    judge_metadata,
    kinds,
    retried_on_llm_trouble,
    with_upstream,
)
from assets.stage_adapter import shown, step_run
from memvault import clock
from memvault.grounded_text import REASONS as REFUSALS
from memvault.judge.store_cache import StoreJudgeCache
from memvault.profile import ProfileSettings, compute_snapshots, write_snapshots
from memvault.profile.diary import write_diary
from memvault.profile.figures import diary_figures, interest_figures, snapshot_figures
from memvault.profile.gaps import refresh_gaps
from memvault.profile.interest import WINDOWS, write_interest
from memvault.profile.snapshot import read_snapshots
from memvault.profile.write import Written
from memvault.stage import RunRow, Timer
from memvault.store import Store
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


def _end_date() -> str | None:
    """Today in the owner's timezone by memvault's clock (the first day *not* a partition)
    when that clock is shifted from the wall clock (the tests, a replay); else None, and
    Dagster ends the partitions at its own yesterday, moving on as the days pass."""
    if not clock.shift():
        return None
    return clock.now(ZoneInfo(SETTINGS.timezone)).date().isoformat()


#: One partition per day of the owner's timezone; the last one is yesterday (a complete day).
DAILY_PARTITIONS = dg.DailyPartitionsDefinition(
    start_date=SETTINGS.start.isoformat(), end_date=_end_date(), timezone=SETTINGS.timezone
)

#: A backfill runs as one run per batch of days; each asset handles a whole range at once.
BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=SETTINGS.batch_days)


def day_of(key: str) -> str:
    """The day of a partition key: the key, or the day of an owner's ``DAY|OWNER`` (many owners)."""
    return key.split("|", 1)[0]


def partition_days(context: dg.AssetExecutionContext) -> list[dt.date]:
    """The days this run covers (one partition, or a range from a backfill)."""
    return [dt.date.fromisoformat(day_of(key)) for key in context.partition_keys]


def _profile_run(
    context: dg.AssetExecutionContext, store: Store, asset: str, days: list[dt.date]
) -> AbstractContextManager[RunRow]:
    """A row in the store's ``runs`` for this asset's batch (so `memvault runs` lists it and
    `memvault undo` takes its id), failed with the error when the asset fails."""
    return step_run(
        context,
        store,
        asset,
        run_id=f"{asset}-{context.run.run_id[:8]}",
        first_day=str(days[0]),
        last_day=str(days[-1]),
    )


def _each_day(
    context: dg.AssetExecutionContext,
    days: list[dt.date],
    rows: pl.DataFrame,
    figures: Callable[[dict[str, Any], Written], dict[str, Any]],
    written: Written,
) -> None:
    """Each day's partition gets that day's figures, not the batch's."""
    shown = {row["day"]: figures(row, written) for row in rows.iter_rows(named=True)}
    keys = {day_of(key): key for key in context.partition_keys}
    for day in days:
        day_figures = shown.get(day, {"day": day.isoformat(), "row": "not written"})
        if "page" in day_figures:
            day_figures["page"] = dg.MetadataValue.md(day_figures["page"])
        context.add_asset_metadata(day_figures, partition_key=keys[day.isoformat()])


def _batch(days: list[dt.date], run_id: str, timer: Timer, **extra: Any) -> dict[str, Any]:
    """What the whole run of a batch of days did (the same on each of its days)."""
    return {
        "profile_run_id": run_id,
        "batch": f"{days[0].isoformat()} .. {days[-1].isoformat()} ({len(days)} days)",
        **extra,
        "batch_duration_s": timer.seconds,
    }


#: Each day reads its previous day's snapshot (a backfill runs the days in order).
SNAPSHOT = dg.AssetSpec(
    "daily_snapshot",
    group_name=PROFILE_GROUP,
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
    kinds=kinds("igraph", "polars"),
    owners=OWNERS,
    description="One row per day in profile_daily: the most frequent recall intents, the "
    "entities most central to the day (personalized PageRank over the entity graph as it stood "
    "that evening, restarting at the day's entities), and which entities entered or left that "
    "list since the day before (this asset depends on its own previous day, so a backfill runs "
    "the days in order). Each day sees only what the store knew by its end: a fact learned "
    "later never shows up in an earlier day.",
)


# A multi-asset of one, subsettable, so its expectation suite is not part of what must run
# with it: the automation then requests the latest day alone, not the day before it too.
@dg.multi_asset(
    specs=[SNAPSHOT],
    check_specs=[expectations_spec("profile_daily", "daily_snapshot")],
    partitions_def=DAILY_PARTITIONS,
    backfill_policy=BACKFILL,
    can_subset=True,
    pool=STORE_POOL,
)
def daily_snapshot(
    context: dg.AssetExecutionContext, store: StoreResource
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    days, timer = partition_days(context), Timer()
    with store.open() as opened, _profile_run(context, opened, "daily_snapshot", days) as run:
        rows = compute_snapshots(opened, days, SETTINGS)
        written = write_snapshots(opened, rows, run.id)
        # The rows this run wrote (a re-run that changed nothing checks nothing, and no row
        # of another day is read again: each was checked by the run that wrote it).
        checked = (
            expectations_result(opened, "profile_daily", "daily_snapshot", changed_by=run.id)
            if context.selected_asset_check_keys
            else None
        )
    _each_day(context, days, rows, snapshot_figures, written)
    yield dg.MaterializeResult(asset_key="daily_snapshot", metadata=_batch(days, run.id, timer))
    if checked is not None:
        yield from check_each_partition(context, checked)


def _interest_asset(window: int) -> dg.AssetsDefinition:
    name = f"interest_{window}d"

    @dg.asset(
        name=name,
        group_name=PROFILE_GROUP,
        partitions_def=DAILY_PARTITIONS,
        backfill_policy=BACKFILL,
        # The same day: the window reads the snapshots before it from the store, and the
        # snapshot's own chain of days orders a backfill. (Declaring the 2 × window days it
        # reads would make a backfill of a day select every window that day falls in, up to
        # 2 × window days later, in the UI's preview.)
        deps=[daily_snapshot],
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
        days, timer = partition_days(context), Timer()
        with store.open() as opened, _profile_run(context, opened, name, days) as run:
            rows, written = write_interest(opened, days, window, SETTINGS, run.id)
        _each_day(context, days, rows, interest_figures, written)
        return dg.MaterializeResult(metadata=_batch(days, run.id, timer))

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
    days, timer = partition_days(context), Timer()
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
        with _profile_run(context, opened, "diary_page", days) as run:
            result = write_diary(opened, snapshots, judge, run.id)
    for failure in result.failures:
        context.log.warning(f"diary judge failed, template page written: {failure}")
    _each_day(context, days, result.pages, diary_figures, result.written)
    kinds_ = {f"pages_{k}": n for k, n in result.kinds.items()}
    kinds_ |= {f"pages_refused_{r}": result.refused.get(r, 0) for r in REFUSALS}
    return dg.MaterializeResult(
        metadata=_batch(days, run.id, timer, **kinds_, **judge_metadata(judge))
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
    timer = Timer()
    with store.open() as opened, step_run(context, opened, "gaps") as run:
        report = refresh_gaps(opened, run.id)
        run.stats = report.as_dict()
    return dg.MaterializeResult(metadata=shown(report, timer.seconds))


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
