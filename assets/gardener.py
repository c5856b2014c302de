"""The gardener track: one asset per phase of the nightly ceremony.

The run's state passes from asset to asset through the ledger (the ``runs``
row of the garden run, found by the Dagster run's root id), so a re-executed
run picks up where it stopped without redoing committed work. A phase that
raises fails its asset once its state and resume point are saved, so Dagster's
retry and "re-execute from failure" continue from there.
"""

import time
from typing import Any

import dagster as dg

from assets.common import OWNERS, STORE_POOL, after, as_metadata, kinds, md_table, with_upstream
from memvault.gardener.ledger import Ledger
from memvault.gardener.run import Gardener, PhaseFailed
from memvault.judge.store_cache import StoreJudgeCache
from resources import JudgeResource
from resources.gardener import GardenerResource

GROUP = "gardener"
#: The action counters of a garden run, always present (0 when nothing was done).
ACTIONS = ("merges", "decays", "splits", "invalidations", "reconnects")


def _root_run_id(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> str:
    return context.run.tags.get("dagster/root_run_id") or context.run.run_id


def _metadata(gardener: Gardener, started: float, **extra: Any) -> dict[str, Any]:
    state = gardener.state
    return {
        "garden_run_id": state.run_id,
        "mode": state.mode,
        **{action: int(state.actions.get(action, 0)) for action in ACTIONS},
        "proposals": state.proposals,
        "mutations_used": gardener.budget.mutations,
        "mutations_max": gardener.budget.max_mutations,
        "judgments_used": gardener.budget.judgments,
        "judgments_max": gardener.budget.max_judgments,
        "resume_point": "; ".join(f"{n}: {s.resume_text()}" for n, s in state.stores.items()),
        "phases_skipped": len(state.skipped),
        "errors": len(state.errors),
        "judge": str(state.judge.get("kind", "")),
        "llm_calls": int(state.judge.get("calls", 0)),
        "llm_tokens": int(state.judge.get("prompt_tokens", 0))
        + int(state.judge.get("completion_tokens", 0)),
        "llm_cache_hits": int(state.judge.get("cache_hits", 0)),
        "duration_s": round(time.monotonic() - started, 3),
        "skipped": md_table([{"phase": p, "why": w} for p, w in state.skipped]),
        "error_detail": md_table([{"error": e} for e in state.errors]),
        **extra,
    }


def _load(
    context: dg.AssetExecutionContext, ledger: Ledger, stores: list[Any], llm: JudgeResource
) -> Gardener:
    run_id = ledger.run_for_dagster(_root_run_id(context))
    if run_id is None:
        raise dg.Failure(
            "no garden run for this Dagster run: materialize garden_survey first, in the same run"
        )
    return Gardener.load(ledger, stores, llm.build(cache=StoreJudgeCache(ledger.store)), run_id)


@dg.asset(
    group_name=GROUP,
    # Each night after the collector: the survey reads what it collected and embedded.
    deps=[dg.AssetKey("memory_embeddings")],
    automation_condition=after("memory_embeddings", why="after the collector"),
    kinds=kinds(),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Survey of every store to tend: what its tools can do (found by what they do), "
    "baseline counts, the window of items changed since the last run, and a snapshot before "
    "the first run (and before every autonomous run).",
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
        runs = garden.state.stores
        return dg.MaterializeResult(
            metadata=_metadata(
                garden,
                started,
                stores=len(runs),
                snapshots_taken=sum(1 for s in runs.values() if s.backup),
                capabilities=md_table(
                    [{"store": n, "capabilities": s.capabilities} for n, s in runs.items()]
                ),
                snapshots=md_table(
                    [{"store": n, "snapshot": s.backup or "none"} for n, s in runs.items()]
                ),
                stats_before=md_table(
                    [{"store": n, **s.stats_before} for n, s in runs.items() if s.stats_before]
                ),
            )
        )


def _phase_asset(phase: str, upstream: Any, description: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"garden_{phase}",
        group_name=GROUP,
        deps=[upstream],
        automation_condition=with_upstream("with the gardener's survey"),
        kinds=kinds(),
        owners=OWNERS,
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
            try:
                garden.run_phase(phase, raise_on_error=True)
            except PhaseFailed as failed:
                raise dg.Failure(
                    description=f"garden phase {phase} failed; its resume point is saved, so a "
                    f"retry or a re-execution continues from there: {failed}",
                    metadata=_metadata(garden, started, phase=phase),
                ) from failed
            done = {
                k: v - actions_before.get(k, 0)
                for k, v in garden.state.actions.items()
                if v != actions_before.get(k, 0)
            }
            return dg.MaterializeResult(
                metadata=_metadata(
                    garden,
                    started,
                    phase=phase,
                    phase_actions=sum(done.values()),
                    phase_detail=md_table(done, ("action", "count")),
                )
            )

    return _asset


garden_dedup = _phase_asset(
    "dedup",
    garden_survey,
    "Approved merges first, then near-duplicate memories (cosine 0.90 or more) among the items "
    "of the window: two records go to a keep-both-by-default gate, clusters to a curator that "
    "merges only what shares its core meaning; merges lose no detail.",
)
garden_decay = _phase_asset(
    "decay",
    garden_dedup,
    "Memories untouched for 30 days lose one importance step (never below the minimum, never "
    "pinned ones); the least important get an expiry date instead of a deletion.",
)
garden_split = _phase_asset(
    "split",
    garden_decay,
    "The worst over-long memories (over ~750 characters, at most 5 a run) are trimmed to their "
    "gist, with the details moved to linked items; nothing is lost.",
)
garden_invalidate = _phase_asset(
    "invalidate",
    garden_split,
    "Stale facts in knowledge-graph stores retired by later ones, the timeline kept. On "
    "memvault's own store this rule belongs to the dream and is left to it.",
)
garden_reconnect = _phase_asset(
    "reconnect",
    garden_invalidate,
    "Orphan items (at most 10 a run) reconnected where exactly one link is possible; an "
    "unclear case is left as it is and recorded.",
)
garden_journal = _phase_asset(
    "journal",
    garden_reconnect,
    "One journal entry: what came in since the last run, and one line on the garden's state.",
)


@dg.asset(
    group_name=GROUP,
    deps=[garden_journal],
    automation_condition=with_upstream("with the gardener's survey"),
    kinds=kinds(),
    owners=OWNERS,
    pool=STORE_POOL,
    description="The gardening report in its fixed format, saved and read back, with the run's "
    "outcome; a run that failed (over budget, an unaudited change, a failed snapshot or save) "
    "fails this asset.",
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
        raise dg.Failure(description=result.outcome.summary, metadata=metadata)
    return dg.MaterializeResult(metadata=metadata)


garden_job = dg.define_asset_job(
    "garden_job",
    selection=dg.AssetSelection.groups(GROUP),
    description="The memory gardener's nightly ceremony: survey, dedup, decay, split, "
    "invalidate, reconnect, journal, report.",
)


@dg.asset_check(
    asset=garden_report,
    blocking=True,
    pool=STORE_POOL,
    description="Every write of the garden run has its audit row, and the report was read back.",
)
def garden_run_audited(
    context: dg.AssetCheckExecutionContext, gardener: GardenerResource
) -> dg.AssetCheckResult:
    with gardener.open() as (ledger, _stores):
        run_id = ledger.run_for_dagster(_root_run_id(context))
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


@dg.asset_check(
    asset=garden_report,
    blocking=True,
    pool=STORE_POOL,
    description="Idempotent: a second garden run right after a clean one acts on nothing. The "
    "run's ceremony is rehearsed from where it ended with no room for a single change (nothing "
    "is written, no LLM question the run already asked is asked again); any merge, decay, "
    "split, invalidation, reconnection or proposal it would still make fails the check. A run "
    "that stopped early (its budget spent) is continued by the next one, and is not checked.",
)
def garden_idempotent(
    context: dg.AssetCheckExecutionContext, gardener: GardenerResource, llm: JudgeResource
) -> dg.AssetCheckResult:
    from memvault.gardener.rehearse import rehearse

    with gardener.open() as (ledger, stores):
        run_id = ledger.run_for_dagster(_root_run_id(context))
        if run_id is None:
            return dg.AssetCheckResult(passed=False, metadata={"problem": "no garden run found"})
        judge = llm.build(cache=StoreJudgeCache(ledger.store))
        state = Gardener.load(ledger, stores, judge, run_id).state
        unfinished = "; ".join(
            f"{n}: {s.resume_text()}" for n, s in state.stores.items() if s.resume
        )
        if unfinished:  # not clean: the next run continues it
            return dg.AssetCheckResult(
                passed=True, metadata={"garden_run_id": run_id, "stopped_early": unfinished}
            )
        found = rehearse(ledger, stores, judge, gardener.config())
    return dg.AssetCheckResult(
        passed=found.idle, metadata={"garden_run_id": run_id, **as_metadata(found.metadata())}
    )


defs = dg.Definitions(
    assets=[
        garden_survey,
        garden_dedup,
        garden_decay,
        garden_split,
        garden_invalidate,
        garden_reconnect,
        garden_journal,
        garden_report,
    ],
    asset_checks=[garden_run_audited, garden_idempotent],
    jobs=[garden_job],
)
