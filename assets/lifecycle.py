"""The lifecycle track: usage signals, then tiering with one-way digests.

usage_weights reads how the owner uses each block (recalls, +/−, verdicts) and reports it;
tiering moves each active block to the tier its effective age asks for (hot, warm, cold,
frozen), writing digests for the blocks that go cold or frozen. Nothing here rewrites
``importance``: use is honoured by dividing the age, not by changing the data.
"""

import dagster as dg

from assets.common import (
    LLM_RETRY,
    OWNERS,
    STORE_POOL,
    after_or_daily,
    as_metadata,
    expectations_result,
    expectations_spec,
    judge_metadata,
    kinds,
    retried_on_llm_trouble,
    with_upstream,
)
from assets.stage_adapter import check_result, shown
from memvault.judge.store_cache import StoreJudgeCache
from memvault.lifecycle.originals import (
    FINDABILITY_SAMPLE,
    FINDABILITY_TOP,
    FINDABLE_SHARE,
    findability,
)
from memvault.lifecycle.tiering import digests_kept, run_tiering
from memvault.lifecycle.weights import WeightsReport, block_weights, weights_summary
from memvault.normalize import utcnow
from memvault.recall import Recaller
from memvault.stage import Timer, Verdict
from memvault.store import Store
from resources import EmbedderResource, JudgeResource, LifecycleResource, StoreResource

GROUP = "lifecycle"


@dg.asset(
    group_name=GROUP,
    deps=[dg.AssetKey("collected_sessions"), dg.AssetKey("dream_prune")],
    automation_condition=after_or_daily(
        "dream_prune", "0 5 * * *", why="after the dream, or at 05:00 on a day without one"
    ),
    kinds=kinds("polars"),
    owners=OWNERS,
    pool=STORE_POOL,
    description="How the owner uses each active memory block, from the recall log and the "
    "feedback: an access multiplier of its half-life (each recall extends it, the extension "
    "wears off over 30 days, at most 10×), the sum of the owner's +/−, and the verdicts of the "
    "recalls that returned it. Reads only; importance is never rewritten with these.",
)
def usage_weights(store: StoreResource) -> dg.MaterializeResult:
    timer = Timer()
    with store.open() as opened:
        report = WeightsReport(weights_summary(block_weights(opened, utcnow())))
    return dg.MaterializeResult(metadata=shown(report, timer.seconds))


DIGESTS_KEPT = dg.AssetCheckSpec(
    "digests_keep_the_original",
    asset="tiering",
    description="Digests are one-way but nothing is lost: every block whose text became a "
    "digest has its full text in the audit log (undo restores it), no summary is over 400 "
    "characters, and every frozen headline is one line.",
)
FINDABLE = dg.AssetCheckSpec(
    "demoted_blocks_stay_findable",
    asset="tiering",
    description=f"Demoted blocks stay findable: for up to {FINDABILITY_SAMPLE} blocks the last "
    "tiering run demoted (a fixed spread), a query of the five rarest words of each block's "
    "original text (as the audit log holds it) finds the block (or one with the very same "
    f"text, or one tied with the last shown) in recall's top {FINDABILITY_TOP} for at least "
    f"{FINDABLE_SHARE:.0%} of them, and every digested block among them has its original kept "
    "for search. Searches without recording a recall: the check writes nothing.",
)


@dg.asset(
    group_name=GROUP,
    deps=[usage_weights],
    automation_condition=with_upstream("with the usage signals"),
    # The checks run in this step, on its store connection (no process of their own).
    check_specs=[expectations_spec("blocks", "tiering"), DIGESTS_KEPT, FINDABLE],
    retry_policy=LLM_RETRY,
    kinds=kinds("polars", llm=True),
    owners=OWNERS,
    pool=STORE_POOL,
    description="Each active block moved to the tier its effective age (age ÷ use) asks for: "
    "hot, warm (full text), cold (the text becomes a summary of at most 400 characters) or "
    "frozen (a one-line headline); pinned blocks stay hot. The LLM writes the digests, several "
    "blocks per call; without one they are extractive and labelled so. A digest may only say what "
    "the original says (its names and numbers, no instruction-like text): one that does not is "
    "rejected for the extractive digest and counted by reason. A block that comes back "
    "into use is promoted without a call and keeps its digest. Tiers decide what is shown, "
    "never what can be found: the full text is kept beside its digest and recall searches it. "
    "Audited: undoing the run restores the full text. A re-run with nothing new writes "
    "nothing and asks nothing.",
)
def tiering(
    store: StoreResource, llm: JudgeResource, tiers: LifecycleResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    with retried_on_llm_trouble(), store.open() as opened:
        judge = llm.build(cache=StoreJudgeCache(opened))
        before = judge.stats.as_dict()
        result = run_tiering(opened, judge, config=tiers.config(), dry_run=tiers.dry_run)
        checked = [
            expectations_result(opened, "blocks", "tiering"),
            check_result(DIGESTS_KEPT.name, digests_kept(opened)),
            _findable(opened, embedder),
        ]
    return dg.MaterializeResult(
        check_results=checked,
        metadata={**as_metadata(result.metadata()), **judge_metadata(judge, before)},
    )


def _findable(store: Store, embedder: EmbedderResource) -> dg.AssetCheckResult:
    last = store.last_run("tiering")
    report = findability(store, last["id"] if last else None, Recaller(embedder.build()))
    return check_result(FINDABLE.name, Verdict(report.passed, report.metadata()))


tiering_job = dg.define_asset_job(
    "tiering_job",
    selection=dg.AssetSelection.groups(GROUP),
    description="Usage signals, then each memory block moved to its tier (digests for the "
    "cold and frozen ones).",
)


defs = dg.Definitions(assets=[usage_weights, tiering], jobs=[tiering_job])
