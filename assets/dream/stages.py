"""The dream's stages around its graph: orient before it; reflect, consolidate, prune after.

Every stage of one dream shares a run id derived from the Dagster run's root,
so a run re-executed from failure continues the same dream: its audit rows,
its stage figures and its report stay together, and actions already applied
are not applied again.
"""

import datetime as dt
import time

import dagster as dg

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    judge_metadata,
    kinds,
    md_table,
    retried_on_llm_trouble,
    timestamp,
)
from memvault.dream import orient, prune_orphans, reflect, statistics_snapshot
from memvault.dream.exclusive import DreamInProgress, begin_dream
from memvault.dream.normalize_content import normalize_content
from memvault.dream.reflect import INSIGHT_REFUSALS
from memvault.dream.report import (
    DreamReport,
    record_stage,
    rows_written,
    save_report,
    stage_figures,
)
from memvault.judge.store_cache import StoreJudgeCache
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.temporal import apply_conflict_plan, plan_conflicts
from memvault.testing_hooks import pause_point
from resources import DreamResource, JudgeResource, ReviewResource, StoreResource

DREAM_GROUP = "dream"
#: Decisions shown one by one in the consolidate step log and metadata.
LOGGED_ACTIONS = 25


def dream_run_id(context: dg.AssetExecutionContext, dry_run: bool) -> str:
    """One id per dream, stable across re-execution from failure (the root run's id)."""
    root = context.run.root_run_id or context.run.run_id
    return f"dream-{'dry-' if dry_run else ''}{root[:8]}-{root[9:13]}"


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
    run_id = dream_run_id(context, dream.dry_run)
    with store.open() as opened:
        _ensure_run(context, opened, run_id, dream)
        stats = orient(opened)
        record_stage(opened, run_id, "orient", stats.as_dict())
    return dg.MaterializeResult(
        metadata={
            "dream_run_id": run_id,
            "dry_run": dream.dry_run,
            "last_dream_at": timestamp(stats.last_dream_at),
            **{f"new_{table}": n for table, n in stats.new.items()},
            "active_triples": stats.active_triples,
            "open_reviews": stats.open_reviews,
            "store_rows": md_table(stats.totals, ("table", "rows")),
        }
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
    run_id = dream_run_id(context, dream.dry_run)
    started = time.monotonic()
    with retried_on_llm_trouble(), store.open() as opened:
        opened.heartbeat(run_id)
        judge = llm.build(cache=StoreJudgeCache(opened))
        snapshot = statistics_snapshot(opened, orient(opened))
        result = reflect(
            opened,
            judge,
            snapshot,
            run_id,
            max_insights=dream.config().max_insights,
            dry_run=dream.dry_run,
        )
        for insight in result.insights:
            context.log.info(f"insight: {insight.text}")
        if result.failure:
            context.log.warning(f"no reflection this time: {result.failure}")
        meta = judge_metadata(judge)
        record_stage(
            opened,
            run_id,
            "reflect",
            {
                "insights": [i.text for i in result.insights],
                "gaps": [f"{g.kind}: {g.signature}" for g in result.gaps],
                "insights_refused": result.insights_refused,
                "insights_refused_by": dict(sorted(result.refused_by.items())),
                "actions": {
                    "insight": result.insights_written,
                    "gap-open": result.gaps_opened,
                    "gap-update": result.gaps_updated,
                },
                "llm_calls": meta["llm_calls"],
            },
        )
    return dg.MaterializeResult(
        metadata={
            "insights": len(result.insights),
            "insights_written": result.insights_written,
            "insights_refused": result.insights_refused,
            **{
                f"insights_refused_{reason}": int(result.refused_by.get(reason, 0))
                for reason in INSIGHT_REFUSALS
            },
            "gaps": len(result.gaps),
            "gaps_opened": result.gaps_opened,
            "gaps_updated": result.gaps_updated,
            "reflection_kind": "statistical" if judge.kind == "heuristic" else "llm",
            "reflection_failed": result.failure is not None,
            **meta,
            "duration_s": round(time.monotonic() - started, 3),
            "insight_texts": md_table(
                [{"insight": i.text, "confidence": i.confidence} for i in result.insights]
            ),
        }
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
    run_id = dream_run_id(context, dream.dry_run)
    started = time.monotonic()
    with retried_on_llm_trouble(), store.open() as opened:
        opened.heartbeat(run_id)
        judge = llm.build(cache=StoreJudgeCache(opened))
        content = normalize_content(opened, run_id, dry_run=dream.dry_run)
        for example in content.examples:
            context.log.info(f"{'would normalize' if dream.dry_run else 'normalized'} {example}")
        pause_point("dream-consolidate")
        plan = plan_conflicts(
            opened,
            judge,
            config=dream.conflict_config(),
            dry_run=dream.dry_run,
            policy=review.policy(),
        )
        # A sample of the decisions in the step log; all of them are in audit_log (or, for a
        # dry run, in the plan's counts), and thousands of log lines would swamp the event log.
        for action in plan.actions[:LOGGED_ACTIONS]:
            context.log.info(f"{'would ' if dream.dry_run else ''}{action.describe()}")
        if len(plan.actions) > LOGGED_ACTIONS:
            context.log.info(f"... and {len(plan.actions) - LOGGED_ACTIONS} more decisions")
        for failure in plan.judge_failures:
            context.log.warning(f"judge failed, pair queued for review: {failure}")
        applied = {} if dream.dry_run else dict(apply_conflict_plan(opened, plan, run_id))
        meta = judge_metadata(judge)
        summary = plan.summary()
        record_stage(
            opened,
            run_id,
            "consolidate",
            {
                "content": content.as_dict(),
                "plan": summary,
                "planned": dict(plan.counts()),
                "actions": applied | ({} if dream.dry_run else content.actions),
                "llm_calls": meta["llm_calls"],
            },
        )
        written = rows_written(opened, run_id, "dream_consolidate")
    planned = plan.counts()
    done = planned if dream.dry_run else applied
    return dg.MaterializeResult(
        metadata={
            "dry_run": dream.dry_run,
            "merges": int(done.get("merge", 0)),
            "unmerges": int(done.get("unmerge", 0)),
            "supersedes": int(done.get("supersede", 0)) + int(done.get("retime", 0)),
            "reopens": int(done.get("reopen", 0)),
            "coexist": int(done.get("coexist", 0)),
            "queued_for_review": int(summary["queued_for_review"]),
            "invalid_verdicts": int(summary["invalid_verdicts"]),
            "refused_merges": int(summary["refused_merges"]),
            "refused_by_definitions": int(summary["refused_by_definitions"]),
            "judge_failures": int(summary["judge_failures"]),
            "pairs_judged": int(summary["judged"]),
            "pairs_escalated": int(summary["escalated"]),
            "pairs_deferred": int(summary["deferred"]),
            "decided_by_rule": int(summary["by_rule"]),
            "already_applied": int(applied.get("already_applied", 0)),
            "content_encoding_fixed": content.encoding_fixed,
            "content_whitespace_collapsed": content.whitespace_collapsed,
            "content_split": content.split,
            "content_parts_created": content.parts_created,
            "content_blocks_changed": content.blocks_changed,
            "content_facts_changed": content.facts_changed,
            "rows_written": written,
            **meta,
            "duration_s": round(time.monotonic() - started, 3),
            "planned": md_table(dict(planned), ("action", "count")),
            "decisions": md_table(
                [{"decision": a.describe()} for a in plan.actions[:LOGGED_ACTIONS]]
            ),
        }
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
    run_id = dream_run_id(context, dream.dry_run)
    with store.open() as opened:
        opened.heartbeat(run_id)
        pruned = prune_orphans(opened, run_id, dream.config(), dry_run=dream.dry_run)
        record_stage(
            opened,
            run_id,
            "prune",
            {
                "orphans": pruned.orphans.height,
                "actions": {
                    "revive-entity": pruned.revived,
                    "archive-entity": pruned.archived,
                    "archive-edge": pruned.edges_archived,
                },
            },
        )
        report = DreamReport(
            run_id=run_id,
            dry_run=dream.dry_run,
            judge=llm.build().kind,
            stages=stage_figures(opened, run_id),
        )
        artifact = None if dream.dry_run else save_report(opened, report)
        finished = utcnow()
        opened.finish_run(run_id, "dry-run" if dream.dry_run else "succeeded", report.as_dict())
        last = opened.fetch(
            "SELECT max(finished_at) FROM runs WHERE kind = 'dream' AND status = 'succeeded'"
        )[0][0]
        sessions_total = opened.counts(("sessions",))["sessions"]
        written = rows_written(opened, run_id, "dream_prune")
    context.log.info(report.render())
    actions = report.actions
    return dg.MaterializeResult(
        metadata={
            "dream_run_id": run_id,
            "dry_run": dream.dry_run,
            "report_artifact": artifact or "not saved (dry run)",
            "actions_total": sum(actions.values()),
            "llm_calls": report.llm_calls,
            "orphans_found": pruned.orphans.height,
            "orphans_archived": pruned.archived,
            "edges_archived": pruned.edges_archived,
            "entities_revived": pruned.revived,
            "orphans_kept_by_use": pruned.kept_by_use,
            "rows_written": written,
            # The dream sensor reads these two (never the store file).
            "last_dream_at": timestamp(last.replace(tzinfo=dt.UTC) if last else None),
            "sessions_total_at_last_dream": sessions_total if not dream.dry_run and last else -1,
            "finished_at": timestamp(finished),
            "actions": md_table(actions, ("action", "count")),
            "report": dg.MetadataValue.md(report.render()),
        }
    )
