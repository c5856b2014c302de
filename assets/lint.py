"""The knowledge lint track: four layers, cheapest first, then the review queue.

lint_structure (rules and SQL) → lint_grounding (the predicate definitions) →
lint_semantic (the judge, on a few preselected pairs) → lint_confirm (a second,
independent judgment before anything changes) → review_queue (deadlines, the
low-confidence memories, the calibration human decisions have led to).

The five are one step (a subsettable multi-asset): they share the store connection, and a step
of their own would cost each a process start (3-4 s apiece when launched). Each asset is
materialized as soon as its layer is done, so the lineage shows every layer, and a lint
re-executed from failure runs only the layers that did not finish. Every layer of one lint
shares a run id derived from the Dagster run's root, so a re-executed run continues the same
lint.
"""

import time
from collections.abc import Callable, Iterator
from typing import Any

import dagster as dg

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    after,
    as_metadata,
    judge_metadata,
    kinds,
    md_table,
    retried_on_llm_trouble,
    timestamp,
    with_upstream,
)
from memvault.judge.store_cache import StoreJudgeCache
from memvault.lint.confirm import unconfirmed_changes
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
from memvault.store import Store
from resources import (
    EmbedderResource,
    JudgeResource,
    LintResource,
    ReviewResource,
    StoreResource,
)

LINT_GROUP = "lint"
REVIEW_GROUP = "review"
STRUCTURE, GROUNDING, SEMANTIC, CONFIRM, QUEUE = (
    "lint_structure",
    "lint_grounding",
    "lint_semantic",
    "lint_confirm",
    "review_queue",
)
LAYER_WITH = with_upstream("with the lint's structure layer")


def lint_run_id(context: dg.AssetExecutionContext) -> str:
    """One id per lint, stable across re-execution from failure (the root run's id)."""
    root = context.run.root_run_id or context.run.run_id
    return f"lint-{root[:8]}-{root[9:13]}"


SPECS = [
    dg.AssetSpec(
        STRUCTURE,
        group_name=LINT_GROUP,
        deps=[dg.AssetKey("dream_prune"), dg.AssetKey("garden_report")],
        automation_condition=after("garden_report", why="after the gardener"),
        kinds=kinds("igraph"),
        owners=OWNERS,
        description="Structure, by rules and SQL only: entities nothing refers to, loops "
        "through a relation that must not loop (reports_to, part_of), malformed facts, and "
        "references to rows that do not exist.",
    ),
    dg.AssetSpec(
        GROUNDING,
        group_name=LINT_GROUP,
        deps=[STRUCTURE],
        automation_condition=LAYER_WITH,
        kinds=kinds("polars"),
        owners=OWNERS,
        description="Every current fact against its predicate's definition (subject and object "
        "types, value type, allowed values); predicates declared stable whose values keep "
        "changing; entities left with only retired facts, proposed for archiving (applied only "
        "when the review rules allow it, otherwise queued).",
    ),
    dg.AssetSpec(
        SEMANTIC,
        group_name=LINT_GROUP,
        deps=[GROUNDING],
        automation_condition=LAYER_WITH,
        kinds=kinds("numpy", llm=True),
        owners=OWNERS,
        description="Facts that are well-formed but contradict each other. Only facts learned "
        "since the last lint are looked at, paired with the other current facts of their "
        "subject; a pair goes to the judge only when the two read alike (embeddings) but are "
        "not the same, and at most a few pairs per 100 new facts. Without an LLM only "
        "negations are reported (rules only), and nothing is proposed.",
    ),
    dg.AssetSpec(
        CONFIRM,
        group_name=LINT_GROUP,
        deps=[SEMANTIC],
        automation_condition=LAYER_WITH,
        kinds=kinds("polars", llm=True),
        owners=OWNERS,
        description="Flag, re-check, commit: a change the semantic layer proposes is asked "
        "again, independently (the escalation model when one is configured, otherwise a "
        "differently worded question, never a cached answer), and applied only when both "
        "judgments agree and the review rules allow it; everything else waits in the review "
        "queue with both judgments.",
    ),
    dg.AssetSpec(
        QUEUE,
        group_name=REVIEW_GROUP,
        deps=[CONFIRM],
        automation_condition=LAYER_WITH,
        kinds=kinds(),
        owners=OWNERS,
        description="The one queue of changes waiting for a person (the dream's unsure "
        "conflicts, the lint's proposals, the gardener's proposals, low-confidence memories): "
        "items past their deadline expire without being applied, memories stored with low "
        "confidence are queued, and the auto-approve thresholds human decisions have led to "
        "are shown. Decide with `memvault review` or on its page.",
    ),
]

CONFIRMED = dg.AssetCheckSpec(
    "judged_changes_confirmed",
    asset=CONFIRM,
    blocking=True,
    description="Nothing changed on one judgment: every merge or supersession a judge decided "
    "(in a dream or a lint) was confirmed by a second, independent judgment, or decided by a "
    "person.",
)


class _Lint:
    """One lint's layers on one open store; each returns the metadata of its asset."""

    def __init__(self, context: dg.AssetExecutionContext, store: Store, **resources: Any) -> None:
        self.context, self.store, self.run_id = context, store, lint_run_id(context)
        self.llm: JudgeResource = resources["llm"]
        self.lint: LintResource = resources["lint"]
        self.review: ReviewResource = resources["review"]
        self.embedder: EmbedderResource = resources["embedder"]
        self.since = begin_lint(store, self.run_id)

    def structure(self) -> dict[str, Any]:
        report = run_structure(self.store, self.run_id)
        since = timestamp(self.since) if self.since else "the first lint: every fact"
        return {"new_facts_since": since, **report.metadata()}

    def grounding(self) -> dict[str, Any]:
        report, intake = run_grounding(self.store, self.run_id, self.review.policy())
        return {
            **report.metadata(),
            "archive_proposals": report.proposed,
            "archived_by_rules": intake.applied,
            "archive_queued": intake.queued,
        }

    def semantic(self) -> dict[str, Any]:
        judge = self.llm.build(cache=StoreJudgeCache(self.store))
        result = run_semantic(
            self.store,
            judge,
            self.embedder.build(),
            self.run_id,
            self.since,
            threshold=self.lint.similarity,
            pairs_per_100=self.lint.pairs_per_100,
        )
        for note in result.report.notes:
            self.context.log.warning(note)
        return {**result.metadata(), **result.report.metadata(), **judge_metadata(judge)}

    def confirm(self) -> dict[str, Any]:
        judge = self.llm.build(cache=StoreJudgeCache(self.store))
        report, applied = run_confirm(self.store, judge, self.run_id, self.review.policy())
        for note in report.notes:
            self.context.log.warning(f"second judgment failed, queued for review: {note}")
        return {
            "proposed": report.proposed,
            "auto_applied": report.auto_applied,
            "queued_for_review": report.queued,
            **report.refused,
            "second_judgment": "escalation model" if judge.can_escalate else "confirm prompt",
            **judge_metadata(judge),
            "actions": [{"action": a, "count": n} for a, n in applied.items()],
        }

    def queue(self) -> dict[str, Any]:
        policy = self.review.policy()
        tending = tend_queue(self.store, self.run_id, policy)
        figures = {
            **summarize_queue(self.store).metadata(),
            **tending.metadata(),
            **calibrate(self.store, policy).metadata(policy),
        }
        self.store.finish_run(self.run_id, "succeeded")
        if tending.expired:
            self.context.log.warning(
                f"{len(tending.expired)} review items passed their deadline: not applied, still "
                "waiting (`memvault review list`)"
            )
        return figures

    def confirmed(self) -> dg.AssetCheckResult:
        offending = unconfirmed_changes(self.store)
        return dg.AssetCheckResult(
            asset_key=CONFIRM,
            check_name=CONFIRMED.name,
            passed=offending.is_empty(),
            metadata={
                "unconfirmed_changes": offending.height,
                "sample": md_table(offending.head(20).to_dicts()),
            },
        )


@dg.multi_asset(
    name="lint",
    specs=SPECS,
    check_specs=[CONFIRMED],
    can_subset=True,
    retry_policy=LLM_RETRY,
    pool=STORE_POOL,
    description="The lint's layers and the review queue in one step.",
)
def lint(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    llm: JudgeResource,
    lint: LintResource,
    review: ReviewResource,
    embedder: EmbedderResource,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    selected = {key.to_user_string() for key in context.selected_asset_keys}
    with retried_on_llm_trouble(), store.open() as opened:
        layers = _Lint(context, opened, llm=llm, lint=lint, review=review, embedder=embedder)
        steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            (STRUCTURE, layers.structure),
            (GROUNDING, layers.grounding),
            (SEMANTIC, layers.semantic),
            (CONFIRM, layers.confirm),
            (QUEUE, layers.queue),
        ]
        for name, layer in steps:
            if name in selected:
                started = time.monotonic()
                shown = as_metadata(layer())
                seconds = {"duration_s": round(time.monotonic() - started, 3)}
                yield dg.MaterializeResult(
                    asset_key=name, metadata={"lint_run_id": layers.run_id, **shown, **seconds}
                )
            if name == CONFIRM and context.selected_asset_check_keys:
                yield layers.confirmed()


lint_job = dg.define_asset_job(
    "lint_job",
    selection=dg.AssetSelection.groups(LINT_GROUP, REVIEW_GROUP),
    description="The knowledge lint (structure, grounding, semantic, confirmation) and the "
    "review queue's deadlines and intake.",
)


defs = dg.Definitions(assets=[lint], jobs=[lint_job])
