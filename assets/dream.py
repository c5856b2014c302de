"""The dream track (SPEC §2): orient → signal → reflect → consolidate → prune, one asset per stage.

Every stage of one dream shares a run id derived from the Dagster run's root,
so a run re-executed from failure continues the same dream: its audit rows,
its stage figures and its report stay together, and actions already applied
are not applied again.
"""

import datetime as dt
import time

import dagster as dg

from assets.collector import STORE_POOL
from memvault.dream import orient, prune_orphans, reflect, statistics_snapshot
from memvault.dream.report import DreamReport, record_stage, save_report, stage_figures
from memvault.graph import GraphConfig, compute_centrality, detect_communities, refresh_edges
from memvault.judge.base import Judge
from memvault.judge.store_cache import StoreJudgeCache
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.temporal import apply_conflict_plan, plan_conflicts
from resources import DreamResource, JudgeResource, StoreResource

DREAM_GROUP = "dream"
#: Decisions shown one by one in the consolidate step log.
LOGGED_ACTIONS = 25


def dream_run_id(context: dg.AssetExecutionContext, dry_run: bool) -> str:
    """One id per dream, stable across re-execution from failure (the root run's id)."""
    root = context.run.root_run_id or context.run.run_id
    return f"dream-{'dry-' if dry_run else ''}{root[:8]}-{root[9:13]}"


def _judge_metadata(judge: Judge) -> dict:
    stats = judge.stats.as_dict()
    return {
        "judge": judge.kind,
        "llm_calls": stats["calls"],
        "llm_escalations": stats["escalations"],
        "llm_tokens": stats["prompt_tokens"] + stats["completion_tokens"],
        "llm_cache_hits": stats["cache_hits"],
        "heuristic_answers": stats["heuristic_answers"],
    }


def _ensure_run(store: Store, run_id: str, dream: DreamResource) -> None:
    store.begin_run(
        "dream-dry-run" if dream.dry_run else "dream",
        {"dry_run": dream.dry_run, "gate_hours": dream.gate_hours},
        run_id=run_id,
    )


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dg.AssetKey("memory_embeddings")],
    kinds={"duckdb", "postgres"},
    pool=STORE_POOL,
    description="D1: what is new since the last successful dream (store time, from the audit log).",
)
def dream_orient(
    context: dg.AssetExecutionContext, store: StoreResource, dream: DreamResource
) -> dg.MaterializeResult:
    run_id = dream_run_id(context, dream.dry_run)
    with store.open() as opened:
        _ensure_run(opened, run_id, dream)
        stats = orient(opened)
        record_stage(opened, run_id, "orient", stats.as_dict())
    return dg.MaterializeResult(
        metadata={
            "dream_run_id": run_id,
            "dry_run": dream.dry_run,
            "last_dream_at": str(stats.last_dream_at or "never"),
            "sessions_since": stats.sessions_since,
            "new_rows": dg.MetadataValue.json(stats.new),
            "totals": dg.MetadataValue.json(stats.totals),
            "active_triples": stats.active_triples,
        }
    )


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dream_orient],
    kinds={"igraph", "polars"},
    pool=STORE_POOL,
    description="D2: multi-signal edges, weighted Leiden communities, personalized PageRank.",
)
def dream_signal(
    context: dg.AssetExecutionContext, store: StoreResource, dream: DreamResource
) -> dg.MaterializeResult:
    run_id = dream_run_id(context, dream.dry_run)
    config = GraphConfig.model_validate(dream.graph)
    started = time.monotonic()
    with store.open() as opened:
        edges = refresh_edges(opened, config, run_id, dry_run=dream.dry_run)
        communities = detect_communities(opened, config, run_id, dry_run=dream.dry_run)
        centrality = compute_centrality(opened, config, run_id, dry_run=dream.dry_run)
        figures = {
            "edges": edges.as_dict(),
            "communities": communities.as_dict(),
            "centrality": centrality.as_dict(),
            "actions": {"edge-insert": edges.inserted, "edge-update": edges.updated},
            "duration_s": round(time.monotonic() - started, 3),
        }
        record_stage(opened, run_id, "signal", figures)
    return dg.MaterializeResult(
        metadata={
            "edges_connected": edges.connected,
            "edges_pending": edges.pending,
            "edges_written": edges.inserted + edges.updated,
            "incremental": edges.incremental,
            "communities": communities.communities,
            "seeds": centrality.seeds,
            "duration_s": figures["duration_s"],
        }
    )


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dream_signal],
    kinds={"openai"},
    pool=STORE_POOL,
    description="D3: insights and knowledge gaps, read off a statistics snapshot by the judge.",
)
def dream_reflect(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    dream: DreamResource,
) -> dg.MaterializeResult:
    run_id = dream_run_id(context, dream.dry_run)
    with store.open() as opened:
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
        meta = _judge_metadata(judge)
        record_stage(
            opened,
            run_id,
            "reflect",
            {
                "insights": [i.text for i in result.insights],
                "gaps": [f"{g.kind}: {g.signature}" for g in result.gaps],
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
            "gaps": len(result.gaps),
            "gaps_opened": result.gaps_opened,
            "reflection_kind": "statistical" if judge.kind == "heuristic" else "llm",
            **meta,
        }
    )


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dream_reflect],
    kinds={"openai", "duckdb"},
    pool=STORE_POOL,
    description="D4: temporal conflict resolution in batches (rules first, then the judge, then review).",
)
def dream_consolidate(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    dream: DreamResource,
) -> dg.MaterializeResult:
    run_id = dream_run_id(context, dream.dry_run)
    with store.open() as opened:
        judge = llm.build(cache=StoreJudgeCache(opened))
        plan = plan_conflicts(opened, judge, config=dream.conflict_config(), dry_run=dream.dry_run)
        # A sample of the decisions in the step log; all of them are in audit_log (or, for a
        # dry run, in the plan's counts), and thousands of log lines would swamp the event log.
        for action in plan.actions[:LOGGED_ACTIONS]:
            context.log.info(f"{'would ' if dream.dry_run else ''}{action.describe()}")
        if len(plan.actions) > LOGGED_ACTIONS:
            context.log.info(f"... and {len(plan.actions) - LOGGED_ACTIONS} more decisions")
        applied = {} if dream.dry_run else dict(apply_conflict_plan(opened, plan, run_id))
        meta = _judge_metadata(judge)
        summary = plan.summary()
        record_stage(
            opened,
            run_id,
            "consolidate",
            {
                "plan": summary,
                "planned": dict(plan.counts()),
                "actions": applied,
                "llm_calls": meta["llm_calls"],
            },
        )
    return dg.MaterializeResult(
        metadata={
            "planned": dg.MetadataValue.json(dict(plan.counts())),
            "applied": dg.MetadataValue.json(applied),
            "plan": dg.MetadataValue.json(summary),
            "dry_run": dream.dry_run,
            **meta,
        }
    )


@dg.asset(
    group_name=DREAM_GROUP,
    deps=[dream_consolidate],
    kinds={"duckdb", "postgres"},
    pool=STORE_POOL,
    description="D5: archive orphan entities (never delete), write the dream report, close the run.",
)
def dream_prune(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    dream: DreamResource,
) -> dg.MaterializeResult:
    run_id = dream_run_id(context, dream.dry_run)
    with store.open() as opened:
        pruned = prune_orphans(opened, run_id, dream.config(), dry_run=dream.dry_run)
        record_stage(
            opened,
            run_id,
            "prune",
            {
                "orphans": pruned.orphans.height,
                "actions": {
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
    context.log.info(report.render())
    last_at = last.replace(tzinfo=dt.UTC).timestamp() if last else None
    return dg.MaterializeResult(
        metadata={
            "dream_run_id": run_id,
            "dry_run": dream.dry_run,
            "report_artifact": artifact or "not saved (dry run)",
            "actions": dg.MetadataValue.json(report.actions),
            "llm_calls": report.llm_calls,
            "orphans_archived": pruned.archived,
            # The dual-gate sensor reads these two (never the store file).
            "last_dream_at": dg.MetadataValue.float(last_at)
            if last_at
            else dg.MetadataValue.text("never"),
            "sessions_total_at_last_dream": sessions_total if not dream.dry_run and last_at else -1,
            "finished_at": finished.isoformat(),
            "report": dg.MetadataValue.md(report.render()),
        }
    )
