"""The gardener track: one asset per phase of the nightly ceremony, all in one step.

The survey, the six phases and the report are a subsettable multi-asset: one process and one
store connection for the ceremony (a step each cost 3-4 s of process start when launched),
each asset materialized as its phase finishes. The run's state is kept in the ledger (the
``runs`` row of the garden run, found by the Dagster run's root id), so a retried or
re-executed run picks up where it stopped without redoing committed work: a phase that raises
fails the step once its state and resume point are saved. The two checks (every write
audited; a second run would act on nothing) are evaluated in the step, after the report.

Cadence: daily for an active store, weekly for a quiet one. A run the automation started after
the collector first asks whether gardening is due (``memvault.gardener.cadence``); when no
tended store is, the step materializes nothing (no garden run, nothing for the lint to follow),
logs the reason and records it as an observation of ``garden_survey``. A run launched by hand
is asked for, so it always gardens; its survey's metadata says whether the store was quiet.
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from assets.common import OWNERS, STORE_POOL, after, as_metadata, kinds, with_upstream
from assets.stage_adapter import materialize_stages, root_run_id
from memvault.gardener.stages import REPORT, STAGES, SURVEY, GardenTrack
from memvault.judge.store_cache import StoreJudgeCache
from memvault.normalize import utcnow
from resources import JudgeResource, StoreResource
from resources.gardener import GardenerResource

GROUP = "gardener"

#: The tag Dagster's automation puts on the runs it starts (the nightly chain); a run without it
#: was launched by somebody (the UI, ``memvault garden``) and always gardens.
AUTOMATED = "dagster/from_automation_condition"


PHASE_TEXT = {
    "dedup": "Approved merges first, then near-duplicate memories (cosine 0.90 or more) among "
    "the items of the window: two records go to a keep-both-by-default gate, clusters to a "
    "curator that merges only what shares its core meaning; merges lose no detail.",
    "decay": "Memories untouched for 30 days lose one importance step (never below the minimum, "
    "never pinned ones); the least important get an expiry date instead of a deletion.",
    "split": "The worst over-long memories (over ~750 characters, at most 5 a run) are trimmed "
    "to their gist, with the details moved to linked items; nothing is lost. Only a model's "
    "split is applied: without an LLM the split is proposed and the memory left as it is; an "
    "approved split proposal is applied first.",
    "invalidate": "Stale facts in knowledge-graph stores retired by later ones, the timeline "
    "kept. On memvault's own store this rule belongs to the dream and is left to it.",
    "reconnect": "Orphan items (at most 10 a run) reconnected where exactly one link is "
    "possible; an unclear case is left as it is and recorded.",
    "journal": "One journal entry every run, a quiet one too: what came in since the last run "
    "and what changed about what (items merged, decayed and split by topic, the subjects of "
    "retired facts), and one line on the garden's state naming where duplicates and over-long "
    "items gather.",
}
WITH_SURVEY = with_upstream("with the gardener's survey")


def _spec(name: str, dep: str, description: str, **extra: Any) -> dg.AssetSpec:
    return dg.AssetSpec(
        name,
        group_name=GROUP,
        deps=[dep],
        kinds=kinds(),
        owners=OWNERS,
        description=description,
        # A night with nothing due materializes none of them (see the cadence above).
        skippable=True,
        **({"automation_condition": WITH_SURVEY} | extra),
    )


_CHAIN = list(STAGES)
SPECS = [
    # Each night after the collector: the survey reads what it collected and embedded.
    _spec(
        SURVEY,
        "memory_embeddings",
        "Survey of every store to tend: what its tools can do "
        "(found by what they do), baseline counts, the window of items changed since the "
        "last run, and a snapshot before the first run (and before every autonomous run). "
        "Daily for an active store, weekly for a quiet one: on a night when no store is due "
        "(fewer than quiet_items new or changed memory items since the last run, which was "
        "less than quiet_days ago) nothing is gardened, and an observation here says why.",
        automation_condition=after("memory_embeddings", why="after the collector"),
    ),
    *(_spec(f"garden_{p}", _CHAIN[i], text) for i, (p, text) in enumerate(PHASE_TEXT.items())),
    _spec(
        REPORT,
        _CHAIN[-2],
        "The gardening report in its fixed format, saved and read back, "
        "with the run's outcome; a run that failed (over budget, an unaudited change, a "
        "failed snapshot or save) fails this asset.",
    ),
]
AUDITED = dg.AssetCheckSpec(
    "garden_run_audited",
    asset=REPORT,
    blocking=True,
    description="Every write of the garden run has its audit row, and the report was read back.",
)
IDEMPOTENT = dg.AssetCheckSpec(
    "garden_idempotent",
    asset=REPORT,
    blocking=True,
    description="Idempotent: a second garden run right after a clean one acts on nothing. The "
    "run's ceremony is rehearsed from where it ended with no room for a single change (nothing "
    "is written, no LLM question the run already asked is asked again); any merge, decay, "
    "split, invalidation, reconnection or proposal it would still make fails the check. A run "
    "that stopped early (its budget spent) is continued by the next one, and is not checked.",
)


@dg.multi_asset(
    name="garden",
    specs=SPECS,
    check_specs=[AUDITED, IDEMPOTENT],
    can_subset=True,
    pool=STORE_POOL,
    retry_policy=dg.RetryPolicy(max_retries=1, delay=5),
    description="The gardener's ceremony in one step: survey, the six phases, the report.",
)
def garden(
    context: dg.AssetExecutionContext,
    gardener: GardenerResource,
    store: StoreResource,
    llm: JudgeResource,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult | dg.AssetObservation]:
    with gardener.open(store) as (ledger, stores):
        judge = llm.build(cache=StoreJudgeCache(ledger.store))
        run = GardenTrack(
            ledger, stores, judge, gardener.config(), root_run_id(context), context.log.info
        )
        if SURVEY in {key.to_user_string() for key in context.selected_asset_keys}:
            asked = context.run.tags.get(AUTOMATED) != "true"
            quiet = run.not_due(utcnow(), asked=asked)
            if quiet is not None:
                context.log.info(f"Not gardening tonight: {quiet.reason}")
                yield dg.AssetObservation(
                    asset_key=SURVEY,
                    description=f"Not gardened: {quiet.reason}",
                    metadata=as_metadata(quiet.metadata()),
                )
                return
        yield from materialize_stages(context, run.stages(), checks_after={REPORT: run.checks()})


garden_job = dg.define_asset_job(
    "garden_job",
    selection=dg.AssetSelection.groups(GROUP),
    description="The memory gardener's nightly ceremony: survey, dedup, decay, split, "
    "invalidate, reconnect, journal, report.",
)


defs = dg.Definitions(assets=[garden], jobs=[garden_job])
