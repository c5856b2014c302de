"""The gardener track: one asset per phase of the nightly ceremony (SPEC §12, GD0–GD7).

The run's state passes from asset to asset through the store (the ``runs``
row of the garden run, found by the Dagster run's root id), so a re-executed
run picks up where it stopped without redoing committed work.
"""

import time
from typing import Any

import dagster as dg

from memvault.gardener.ledger import Ledger
from memvault.gardener.run import Gardener
from memvault.judge.store_cache import StoreJudgeCache
from resources import JudgeResource
from resources.gardener import GardenerResource

#: DuckDB has one writer process: every asset that writes the store runs in this pool.
STORE_POOL = "memvault_store"
GROUP = "gardener"


def _root_run_id(context: dg.AssetExecutionContext) -> str:
    return context.run.tags.get("dagster/root_run_id") or context.run.run_id


def _metadata(gardener: Gardener, started: float, **extra: Any) -> dict[str, Any]:
    state = gardener.state
    return {
        "garden_run_id": state.run_id,
        "mode": state.mode,
        "mutations_used": gardener.budget.mutations,
        "mutations_max": gardener.budget.max_mutations,
        "judgments_used": gardener.budget.judgments,
        "judgments_max": gardener.budget.max_judgments,
        "actions": dg.MetadataValue.json(dict(state.actions)),
        "proposals": state.proposals,
        "skipped": dg.MetadataValue.json([f"{p} — {w}" for p, w in state.skipped]),
        "resume_point": "; ".join(f"{n}: {s.resume_text()}" for n, s in state.stores.items()),
        "judge": str(state.judge.get("kind", "")),
        "llm_calls": int(state.judge.get("calls", 0)),
        "llm_tokens": int(state.judge.get("prompt_tokens", 0))
        + int(state.judge.get("completion_tokens", 0)),
        "llm_cache_hits": int(state.judge.get("cache_hits", 0)),
        "errors": dg.MetadataValue.json(list(state.errors)),
        "duration_s": round(time.monotonic() - started, 3),
        **extra,
    }


@dg.asset(
    group_name=GROUP,
    # Each night after the collector (GD10): the survey reads what it collected and embedded.
    deps=[dg.AssetKey("memory_embeddings")],
    kinds={"duckdb", "postgres"},
    pool=STORE_POOL,
    description="GD0: the stores' capabilities by intent, baseline stats, the window, a snapshot.",
)
def garden_survey(
    context: dg.AssetExecutionContext, gardener: GardenerResource, llm: JudgeResource
) -> dg.MaterializeResult:
    started = time.monotonic()
    with gardener.open() as (ledger, stores):
        judge = llm.build(cache=StoreJudgeCache(ledger.store))
        run_id = ledger.run_for_dagster(_root_run_id(context))
        if run_id is None:
            garden = Gardener.start(
                ledger, stores, judge, gardener.config(), dagster_run_id=_root_run_id(context)
            )
        else:  # a re-executed run: the survey (and its snapshot) happened already
            garden = Gardener.load(ledger, stores, judge, run_id)
        capabilities = {n: s.capabilities for n, s in garden.state.stores.items()}
        backups = {n: s.backup for n, s in garden.state.stores.items()}
        stats = {n: s.stats_before for n, s in garden.state.stores.items()}
        return dg.MaterializeResult(
            metadata=_metadata(
                garden,
                started,
                capabilities=dg.MetadataValue.json(capabilities),
                snapshots=dg.MetadataValue.json(backups),
                stats_before=dg.MetadataValue.json(stats),
            )
        )


def _phase_asset(phase: str, upstream: Any, description: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"garden_{phase}",
        group_name=GROUP,
        deps=[upstream],
        kinds={"duckdb", "postgres"},
        pool=STORE_POOL,
        description=description,
        retry_policy=dg.RetryPolicy(max_retries=1, delay=5),
    )
    def _asset(
        context: dg.AssetExecutionContext, gardener: GardenerResource, llm: JudgeResource
    ) -> dg.MaterializeResult:
        started = time.monotonic()
        with gardener.open() as (ledger, stores):
            garden = _load(context, ledger, stores, llm)
            actions_before = dict(garden.state.actions)
            garden.run_phase(phase)
            done = {
                k: v - actions_before.get(k, 0)
                for k, v in garden.state.actions.items()
                if v != actions_before.get(k, 0)
            }
            return dg.MaterializeResult(
                metadata=_metadata(
                    garden, started, phase=phase, phase_actions=dg.MetadataValue.json(done)
                )
            )

    return _asset


def _load(
    context: dg.AssetExecutionContext, ledger: Ledger, stores: list[Any], llm: JudgeResource
) -> Gardener:
    run_id = ledger.run_for_dagster(_root_run_id(context))
    if run_id is None:
        raise dg.Failure(
            "no garden run for this Dagster run: materialize garden_survey first, in the same run"
        )
    return Gardener.load(ledger, stores, llm.build(cache=StoreJudgeCache(ledger.store)), run_id)


garden_dedup = _phase_asset(
    "dedup", garden_survey, "GD1: approved merges, then near-duplicates of the window (≥ 0.90)."
)
garden_decay = _phase_asset(
    "decay", garden_dedup, "GD2: items untouched for 30 days lose one importance step; expiry."
)
garden_split = _phase_asset(
    "split", garden_decay, "GD3: the worst over-long items split into a gist and linked details."
)
garden_invalidate = _phase_asset(
    "invalidate", garden_split, "GD4: stale facts superseded by later ones (timeline kept)."
)
garden_reconnect = _phase_asset(
    "reconnect", garden_invalidate, "GD5: orphans with one unambiguous link reconnected."
)
garden_journal = _phase_asset(
    "journal", garden_reconnect, "GD6: one journal entry on what came in, and the garden state."
)


@dg.asset(
    group_name=GROUP,
    deps=[garden_journal],
    kinds={"duckdb", "postgres"},
    pool=STORE_POOL,
    description="GD7: the gardening report, saved and read back, with the run's outcome (GD8).",
)
def garden_report(
    context: dg.AssetExecutionContext, gardener: GardenerResource, llm: JudgeResource
) -> dg.MaterializeResult:
    started = time.monotonic()
    with gardener.open() as (ledger, stores):
        garden = _load(context, ledger, stores, llm)
        result = garden.finish()
    context.log.info(result.report)
    metadata = _metadata(
        garden,
        started,
        outcome=result.outcome.outcome,
        outcome_summary=result.outcome.summary,
        report_id=str(result.state.report_id),
        report=dg.MetadataValue.md(f"```\n{result.report}```"),
    )
    if not result.succeeded:
        context.log.error(result.outcome.summary)
    return dg.MaterializeResult(metadata=metadata)


garden_job = dg.define_asset_job(
    "garden_job",
    selection=dg.AssetSelection.groups(GROUP),
    description="The memory gardener's nightly ceremony (GD0–GD7).",
)

garden_nightly_schedule = dg.ScheduleDefinition(
    name="garden_nightly",
    job=garden_job,
    cron_schedule="45 3 * * *",
    description="The gardener runs nightly, after the collector (02:15) (GD10).",
)


@dg.asset_check(
    asset=garden_report,
    description="GD-S3/GD8: every write of the garden run is in audit_log and the report read back.",
)
def garden_run_audited(
    context: dg.AssetCheckExecutionContext, gardener: GardenerResource
) -> dg.AssetCheckResult:
    root = context.run.tags.get("dagster/root_run_id") or context.run.run_id
    with gardener.open() as (ledger, _stores):
        run_id = ledger.run_for_dagster(root)
        if run_id is None:
            return dg.AssetCheckResult(passed=False, metadata={"problem": "no garden run found"})
        state = ledger.load_state(run_id)
        audited = ledger.audit_rows(run_id)
    expected = int(state.get("expected_audit", -1))
    read_back = bool(state.get("report_read_back"))
    return dg.AssetCheckResult(
        passed=audited == expected and read_back,
        metadata={
            "garden_run_id": run_id,
            "audit_rows": audited,
            "writes_made": expected,
            "report_read_back": read_back,
        },
    )
