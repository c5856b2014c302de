"""The dream's last two stages as the core runs them: consolidate, then prune and report.

Each takes the open store and the dream's run id, records its figures on the dream (so a
resumed dream keeps them), and returns a result that says what an orchestrator shows
(``metadata()``): flat counts, then records for the detail.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memvault.dream.config import DreamConfig
from memvault.dream.grounding_hold import hold_new_ungrounded
from memvault.dream.normalize_content import ContentReport, normalize_content
from memvault.dream.prune import PruneResult, prune_orphans
from memvault.dream.report import (
    DreamReport,
    record_stage,
    rows_written,
    save_report,
    stage_figures,
)
from memvault.judge.base import Judge
from memvault.normalize import utcnow
from memvault.review.policy import ReviewPolicy
from memvault.store import Store
from memvault.store.queries.runs import last_success_finished_at
from memvault.temporal import apply_conflict_plan, plan_conflicts
from memvault.testing_hooks import pause_point

#: Decisions shown one by one in the step log and the metadata.
LOGGED_ACTIONS = 25
#: The audit phase of the consolidate stage.
PHASE = "dream_consolidate"


@dataclass
class Consolidation:
    """What the consolidate stage did (or, in a dry run, would do)."""

    content: ContentReport
    plan: Any  # memvault.temporal's ConflictPlan
    applied: dict[str, int]
    dry_run: bool
    rows_written: int = 0
    held_for_review: int = 0

    def metadata(self) -> dict[str, Any]:
        done = Counter(self.plan.counts()) if self.dry_run else Counter(self.applied)
        summary, content = self.plan.summary(), self.content
        return {
            "dry_run": self.dry_run,
            "merges": done["merge"],
            "unmerges": done["unmerge"],
            "supersedes": done["supersede"] + done["retime"],
            "reopens": done["reopen"],
            "coexist": done["coexist"],
            **{key: int(summary[name]) for key, name in _SUMMARY.items()},
            "already_applied": int(self.applied.get("already_applied", 0)),
            "facts_held_for_review": self.held_for_review,
            "content_encoding_fixed": content.encoding_fixed,
            "content_whitespace_collapsed": content.whitespace_collapsed,
            "content_split": content.split,
            "content_parts_created": content.parts_created,
            "content_blocks_changed": content.blocks_changed,
            "content_facts_changed": content.facts_changed,
            "rows_written": self.rows_written,
            "planned": [{"action": a, "count": n} for a, n in self.plan.counts().items()],
            "decisions": [{"decision": a.describe()} for a in self.plan.actions[:LOGGED_ACTIONS]],
        }


_SUMMARY = {
    "queued_for_review": "queued_for_review",
    "invalid_verdicts": "invalid_verdicts",
    "refused_merges": "refused_merges",
    "refused_by_definitions": "refused_by_definitions",
    "judge_failures": "judge_failures",
    "pairs_judged": "judged",
    "pairs_escalated": "escalated",
    "pairs_deferred": "deferred",
    "decided_by_rule": "by_rule",
}


def consolidate(
    store: Store,
    judge: Judge,
    run_id: str,
    *,
    config: Any,
    policy: ReviewPolicy,
    dry_run: bool,
    log: Callable[[str], None] = lambda _: None,
    warn: Callable[[str], None] = lambda _: None,
) -> Consolidation:
    """Hold new facts that break their definition for review, normalize the content, then plan
    and apply the temporal conflicts; a sample of the decisions goes to ``log`` (all of them
    are in the audit log, or a dry run's counts)."""
    calls_before = judge.stats.as_dict()["calls"]
    held = hold_new_ungrounded(store, run_id, policy, dry_run=dry_run, phase=PHASE)
    if held:
        warn(
            f"{'would hold' if dry_run else 'held'} {held} new fact(s) that break their "
            "predicate's definition for review (`memvault review list`)"
        )
    content = normalize_content(store, run_id, dry_run=dry_run)
    for example in content.examples:
        log(f"{'would normalize' if dry_run else 'normalized'} {example}")
    pause_point("dream-consolidate")
    plan = plan_conflicts(store, judge, config=config, dry_run=dry_run, policy=policy)
    for action in plan.actions[:LOGGED_ACTIONS]:
        log(f"{'would ' if dry_run else ''}{action.describe()}")
    if len(plan.actions) > LOGGED_ACTIONS:
        log(f"... and {len(plan.actions) - LOGGED_ACTIONS} more decisions")
    for failure in plan.judge_failures:
        warn(f"judge failed, pair queued for review: {failure}")
    applied = {} if dry_run else dict(apply_conflict_plan(store, plan, run_id))
    record_stage(
        store,
        run_id,
        "consolidate",
        {
            "content": content.as_dict(),
            "plan": plan.summary(),
            "planned": dict(plan.counts()),
            "actions": applied
            | ({} if dry_run else content.actions)
            | ({"hold-for-review": held} if held and not dry_run else {}),
            "held_for_review": held,
            "llm_calls": judge.stats.as_dict()["calls"] - calls_before,
        },
    )
    written = rows_written(store, run_id, PHASE)
    return Consolidation(content, plan, applied, dry_run, written, held)


@dataclass
class DreamEnd:
    """The prune stage and the dream's report: how the dream ended."""

    pruned: PruneResult
    report: DreamReport
    artifact: str | None
    finished_at: dt.datetime
    last_dream_at: dt.datetime | None
    sessions_total: int
    rows_written: int = 0

    def metadata(self) -> dict[str, Any]:
        pruned, report = self.pruned, self.report
        return {
            "dream_run_id": report.run_id,
            "dry_run": report.dry_run,
            "report_artifact": self.artifact or "not saved (dry run)",
            "actions_total": sum(report.actions.values()),
            "llm_calls": report.llm_calls,
            "orphans_found": pruned.orphans.height,
            "orphans_archived": pruned.archived,
            "edges_archived": pruned.edges_archived,
            "entities_revived": pruned.revived,
            "orphans_kept_by_use": pruned.kept_by_use,
            "rows_written": self.rows_written,
            # The dream sensor reads these two (never the store file).
            "last_dream_at": self.last_dream_at.replace(tzinfo=dt.UTC)
            if self.last_dream_at
            else "never",
            "sessions_total_at_last_dream": self.sessions_total
            if not report.dry_run and self.last_dream_at
            else -1,
            "finished_at": self.finished_at,
            "actions": [{"action": a, "count": n} for a, n in report.actions.items()],
        }


def prune_and_report(
    store: Store, run_id: str, config: DreamConfig, *, judge_kind: str, dry_run: bool
) -> DreamEnd:
    """Revive and archive orphans, then write the dream report and mark the dream done."""
    pruned = prune_orphans(store, run_id, config, dry_run=dry_run)
    record_stage(
        store,
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
        run_id=run_id, dry_run=dry_run, judge=judge_kind, stages=stage_figures(store, run_id)
    )
    artifact = None if dry_run else save_report(store, report)
    finished = utcnow()
    store.finish_run(run_id, "dry-run" if dry_run else "succeeded", report.as_dict())
    last = last_success_finished_at(store, "dream")
    return DreamEnd(
        pruned=pruned,
        report=report,
        artifact=artifact,
        finished_at=finished,
        last_dream_at=last,
        sessions_total=store.counts(("sessions",))["sessions"],
        rows_written=rows_written(store, run_id, "dream_prune"),
    )


def reflect_stage(
    store: Store,
    judge: Judge,
    run_id: str,
    *,
    max_insights: int,
    dry_run: bool,
    log: Callable[[str], None] = lambda _: None,
    warn: Callable[[str], None] = lambda _: None,
) -> Reflection:
    """Reflect on a statistics snapshot of the store and record the stage on the dream."""
    from memvault.dream import orient, reflect, statistics_snapshot

    calls_before = judge.stats.as_dict()["calls"]
    result = reflect(store, judge, statistics_snapshot(store, orient(store)), run_id,
                     max_insights=max_insights, dry_run=dry_run)  # fmt: skip
    for insight in result.insights:
        log(f"insight: {insight.text}")
    if result.failure:
        warn(f"no reflection this time: {result.failure}")
    record_stage(
        store,
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
            "llm_calls": judge.stats.as_dict()["calls"] - calls_before,
        },
    )
    return Reflection(result, statistical=judge.kind == "heuristic")


@dataclass
class Reflection:
    """What the reflect stage found and wrote."""

    result: Any  # memvault.dream.reflect's ReflectResult
    statistical: bool

    def metadata(self) -> dict[str, Any]:
        from memvault.dream.reflect import INSIGHT_REFUSALS

        r = self.result
        return {
            "insights": len(r.insights),
            "insights_written": r.insights_written,
            "insights_refused": r.insights_refused,
            **{f"insights_refused_{k}": int(r.refused_by.get(k, 0)) for k in INSIGHT_REFUSALS},
            "gaps": len(r.gaps),
            "gaps_refused": r.gaps_refused,
            "gaps_opened": r.gaps_opened,
            "gaps_updated": r.gaps_updated,
            "reflection_kind": "statistical" if self.statistical else "llm",
            "reflection_failed": r.failure is not None,
            "insight_texts": [{"insight": i.text, "confidence": i.confidence} for i in r.insights],
        }
