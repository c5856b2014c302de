"""The knowledge lint track: four layers, cheapest first, then the review queue.

lint_structure (rules and SQL) → lint_grounding (the predicate definitions) →
lint_semantic (the judge, on a few preselected pairs) → lint_confirm (a second,
independent judgment before anything changes) → review_queue (deadlines, the
low-confidence memories, the calibration human decisions have led to).

Every layer of one lint shares a run id derived from the Dagster run's root, so a run
re-executed from failure continues the same lint.
"""

import time
from typing import Any

import dagster as dg

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    after,
    judge_metadata,
    kinds,
    md_table,
    retried_on_llm_trouble,
    timestamp,
    with_upstream,
)
from memvault.judge.store_cache import StoreJudgeCache
from memvault.lint.confirm import unconfirmed_changes
from memvault.lint.findings import LintReport
from memvault.lint.run import (
    begin_lint,
    run_confirm,
    run_grounding,
    run_semantic,
    run_structure,
    tend_queue,
)
from memvault.review.calibration import calibrate
from memvault.review.queue import summarize_queue
from resources import (
    EmbedderResource,
    JudgeResource,
    LintResource,
    ReviewResource,
    StoreResource,
)

LINT_GROUP = "lint"
REVIEW_GROUP = "review"


def lint_run_id(context: dg.AssetExecutionContext) -> str:
    """One id per lint, stable across re-execution from failure (the root run's id)."""
    root = context.run.root_run_id or context.run.run_id
    return f"lint-{root[:8]}-{root[9:13]}"


def _report_metadata(report: LintReport, started: float) -> dict[str, Any]:
    return {
        "findings": len(report.findings),
        "new_findings": report.new,
        "resolved_findings": report.resolved,
        **{f"severity_{k}": v for k, v in sorted(report.by_severity().items())},
        "duration_s": round(time.monotonic() - started, 3),
        "by_rule": md_table(report.by_rule(), ("rule", "findings")),
        "sample": md_table(
            [
                {
                    "rule": f.rule,
                    "subject": f.subject or "",
                    "severity": f.severity,
                    "evidence": ", ".join(f"{k}={v}" for k, v in f.evidence.items()),
                }
                for f in report.findings[:20]
            ]
        ),
    }


@dg.asset(
    group_name=LINT_GROUP,
    deps=[dg.AssetKey("dream_prune"), dg.AssetKey("garden_report")],
    automation_condition=after("garden_report", why="after the gardener"),
    kinds=kinds("igraph"),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Structure, by rules and SQL only: entities nothing refers to, loops through a "
    "relation that must not loop (reports_to, part_of), malformed facts, and references to "
    "rows that do not exist.",
)
def lint_structure(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    run_id = lint_run_id(context)
    started = time.monotonic()
    with store.open() as opened:
        since = begin_lint(opened, run_id)
        report = run_structure(opened, run_id)
    return dg.MaterializeResult(
        metadata={
            "lint_run_id": run_id,
            "new_facts_since": timestamp(since) if since else "the first lint: every fact",
            **_report_metadata(report, started),
        }
    )


@dg.asset(
    group_name=LINT_GROUP,
    deps=[lint_structure],
    automation_condition=with_upstream("with the lint's structure layer"),
    kinds=kinds("polars"),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Every current fact against its predicate's definition (subject and object "
    "types, value type, allowed values); predicates declared stable whose values keep changing; "
    "entities left with only retired facts, proposed for archiving (applied only when the "
    "review rules allow it, otherwise queued).",
)
def lint_grounding(
    context: dg.AssetExecutionContext, store: StoreResource, review: ReviewResource
) -> dg.MaterializeResult:
    run_id = lint_run_id(context)
    started = time.monotonic()
    with store.open() as opened:
        begin_lint(opened, run_id)
        report, intake = run_grounding(opened, run_id, review.policy())
    return dg.MaterializeResult(
        metadata={
            "lint_run_id": run_id,
            **_report_metadata(report, started),
            "archive_proposals": report.proposed,
            "archived_by_rules": intake.applied,
            "archive_queued": intake.queued,
        }
    )


@dg.asset(
    group_name=LINT_GROUP,
    deps=[lint_grounding],
    automation_condition=with_upstream("with the lint's structure layer"),
    retry_policy=LLM_RETRY,
    kinds=kinds("numpy", llm=True),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Facts that are well-formed but contradict each other. Only facts learned since "
    "the last lint are looked at, paired with the other current facts of their subject; a pair "
    "goes to the judge only when the two read alike (embeddings) but are not the same, and at "
    "most a few pairs per 100 new facts. Without an LLM only negations are reported (rules "
    "only), and nothing is proposed.",
)
def lint_semantic(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    lint: LintResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    run_id = lint_run_id(context)
    started = time.monotonic()
    with retried_on_llm_trouble(), store.open() as opened:
        since = begin_lint(opened, run_id)
        judge = llm.build(cache=StoreJudgeCache(opened))
        result = run_semantic(
            opened,
            judge,
            embedder.build(),
            run_id,
            since,
            threshold=lint.similarity,
            pairs_per_100=lint.pairs_per_100,
        )
    for note in result.report.notes:
        context.log.warning(note)
    return dg.MaterializeResult(
        metadata={
            "lint_run_id": run_id,
            "mode": "rules only: no LLM configured, only negations are reported"
            if result.rules_only
            else "llm",
            "new_facts": result.new_triples,
            "candidate_pairs": result.candidates,
            "pairs_asked": result.asked,
            "proposed_changes": len(result.proposals),
            **_report_metadata(result.report, started),
            **judge_metadata(judge),
        }
    )


@dg.asset(
    group_name=LINT_GROUP,
    deps=[lint_semantic],
    automation_condition=with_upstream("with the lint's structure layer"),
    retry_policy=LLM_RETRY,
    kinds=kinds("polars", llm=True),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Flag, re-check, commit: a change the semantic layer proposes is asked again, "
    "independently (the escalation model when one is configured, otherwise a differently worded "
    "question, never a cached answer), and applied only when both judgments agree and the "
    "review rules allow it; everything else waits in the review queue with both judgments.",
)
def lint_confirm(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    review: ReviewResource,
) -> dg.MaterializeResult:
    run_id = lint_run_id(context)
    started = time.monotonic()
    with retried_on_llm_trouble(), store.open() as opened:
        begin_lint(opened, run_id)
        judge = llm.build(cache=StoreJudgeCache(opened))
        report, applied = run_confirm(opened, judge, run_id, review.policy())
    for note in report.notes:
        context.log.warning(f"second judgment failed, queued for review: {note}")
    return dg.MaterializeResult(
        metadata={
            "lint_run_id": run_id,
            "proposed": report.proposed,
            "auto_applied": report.auto_applied,
            "queued_for_review": report.queued,
            **report.refused,
            "second_judgment": "escalation model" if judge.can_escalate else "confirm prompt",
            **judge_metadata(judge),
            "duration_s": round(time.monotonic() - started, 3),
            "actions": md_table(dict(applied), ("action", "count")),
        }
    )


@dg.asset(
    group_name=REVIEW_GROUP,
    deps=[lint_confirm],
    automation_condition=with_upstream("with the lint's structure layer"),
    kinds=kinds(),
    owners=OWNERS,
    pool=STORE_POOL,
    description="The one queue of changes waiting for a person (the dream's unsure conflicts, "
    "the lint's proposals, the gardener's proposals, low-confidence memories): items past "
    "their deadline expire without being applied, memories stored with low confidence are "
    "queued, and the auto-approve thresholds human decisions have led to are shown. Decide "
    "with `memvault review` or on its page.",
)
def review_queue(
    context: dg.AssetExecutionContext, store: StoreResource, review: ReviewResource
) -> dg.MaterializeResult:
    run_id = lint_run_id(context)
    policy = review.policy()
    with store.open() as opened:
        begin_lint(opened, run_id)
        tending = tend_queue(opened, run_id, policy)
        calibration = calibrate(opened, policy)
        queue = summarize_queue(opened)
        opened.finish_run(run_id, "succeeded")
    if tending.expired:
        context.log.warning(
            f"{len(tending.expired)} review items passed their deadline: not applied, still "
            "waiting (`memvault review list`)"
        )
    return dg.MaterializeResult(
        metadata={
            "lint_run_id": run_id,
            "waiting": len(queue.waiting),
            "pending": queue.count("pending"),
            "expired": queue.count("expired"),
            "expired_this_run": len(tending.expired),
            "low_confidence_queued": tending.low_confidence.queued,
            "oldest_waiting": timestamp(queue.oldest),
            **{f"decided_by_{who}": n for who, n in queue.decided_by.items()},
            "waiting_by_kind": md_table(queue.by_kind, ("kind", "items")),
            "thresholds": md_table(
                {kind: round(value, 2) for kind, value in sorted(policy.impact_thresholds.items())},
                ("kind", "auto-approve below impact"),
            ),
            "calibration": md_table(
                calibration.rows(), ("kind", "band", "correct", "wrong", "threshold")
            ),
        }
    )


@dg.asset_check(
    asset=lint_confirm,
    blocking=True,
    pool=STORE_POOL,
    description="Nothing changed on one judgment: every merge or supersession a judge decided "
    "(in a dream or a lint) was confirmed by a second, independent judgment, or decided by a "
    "person.",
)
def judged_changes_confirmed(store: StoreResource) -> dg.AssetCheckResult:
    with store.open() as opened:
        offending = unconfirmed_changes(opened)
    return dg.AssetCheckResult(
        passed=offending.is_empty(),
        metadata={
            "unconfirmed_changes": offending.height,
            "sample": md_table(offending.head(20).to_dicts()),
        },
    )


lint_job = dg.define_asset_job(
    "lint_job",
    selection=dg.AssetSelection.groups(LINT_GROUP, REVIEW_GROUP),
    description="The knowledge lint (structure, grounding, semantic, confirmation) and the "
    "review queue's deadlines and intake.",
)


defs = dg.Definitions(
    assets=[lint_structure, lint_grounding, lint_semantic, lint_confirm, review_queue],
    asset_checks=[judged_changes_confirmed],
    jobs=[lint_job],
)
