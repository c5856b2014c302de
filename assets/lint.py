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

from collections.abc import Iterator

import dagster as dg

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    after,
    kinds,
    retried_on_llm_trouble,
    with_upstream,
)
from assets.stage_adapter import materialize_stages, track_run_id
from memvault.judge.store_cache import StoreJudgeCache
from memvault.lint.stages import CONFIRM, GROUNDING, QUEUE, SEMANTIC, STRUCTURE, LintTrack
from resources import (
    EmbedderResource,
    JudgeResource,
    LintResource,
    ReviewResource,
    StoreResource,
)

LINT_GROUP = "lint"
REVIEW_GROUP = "review"
LAYER_WITH = with_upstream("with the lint's structure layer")


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
    with (
        retried_on_llm_trouble(),
        store.open() as opened,
        LintTrack(
            opened,
            track_run_id(context, "lint"),
            judge=lambda: llm.build(cache=StoreJudgeCache(opened)),
            embedder=embedder.build,
            policy=review.policy,
            similarity=lint.similarity,
            pairs_per_100=lint.pairs_per_100,
            warn=context.log.warning,
            scope=lint.scope(),
        ) as layers,
    ):
        yield from materialize_stages(
            context, layers.stages(), checks_after={CONFIRM: layers.checks()}
        )


lint_job = dg.define_asset_job(
    "lint_job",
    selection=dg.AssetSelection.groups(LINT_GROUP, REVIEW_GROUP),
    description="The knowledge lint (structure, grounding, semantic, confirmation) and the "
    "review queue's deadlines and intake.",
)


defs = dg.Definitions(assets=[lint], jobs=[lint_job])
