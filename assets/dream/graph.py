"""The dream's graph stages, one asset each: edges → communities and centrality → discoveries.

The four are one step (a subsettable multi-asset): they share the store connection and the
graph loaded from it, and a step of its own would cost each a process start. Each asset is
materialized as soon as its stage is done, so the lineage shows every stage and a dream
re-executed from failure runs only the stages that did not finish: a later stage then reads
what the earlier ones wrote (the edges' audit rows, table ``communities``) instead of
computing them again. A dry run writes nothing, so a resumed dry run recomputes them.

The stages themselves (and the resume rule) are the core's :class:`DreamGraph`; this module
declares their assets and hands them to the stage adapter.
"""

from collections.abc import Iterator

import dagster as dg

from assets.common import OWNERS, STORE_POOL, expectations_spec, kinds
from assets.dream.stages import DREAM_GROUP, all_or_nothing, carry_on, dream_orient
from assets.stage_adapter import materialize_stages
from memvault.dream.graph_stages import CENTRALITY, COMMUNITIES, DISCOVERIES, EDGES, DreamGraph
from memvault.graph import GraphConfig
from resources import DreamResource, StoreResource

SPECS = [
    dg.AssetSpec(
        EDGES,
        deps=[dream_orient],
        description="Entity-to-entity edges in table edges, scored by five signals "
        "(co-occurrence, shared sessions, common neighbours, type affinity, embedding "
        "similarity); only the pairs the new data touches are rescored, unless a full refresh "
        "is due. An edge is connected once its composite weight clears the threshold.",
        kinds=kinds("polars", "numpy"),
        owners=OWNERS,
    ),
    dg.AssetSpec(
        COMMUNITIES,
        deps=[EDGES],
        description="Communities of the connected entity graph in table communities, found by "
        "weighted Leiden (a fixed seed: the same graph gives the same communities).",
        kinds=kinds("igraph"),
        owners=OWNERS,
    ),
    dg.AssetSpec(
        CENTRALITY,
        deps=[EDGES],
        description="PageRank and personalized PageRank of every connected entity in table "
        "centrality, restarting at the entities of the most recent sessions (what the owner is "
        "into now).",
        kinds=kinds("igraph"),
        owners=OWNERS,
    ),
    dg.AssetSpec(
        DISCOVERIES,
        deps=[EDGES, COMMUNITIES, CENTRALITY],
        description="Surprise discovery on this dream's graph: new links between communities, "
        "strong indirect pairs and facts the structure says are missing, queued in the "
        "discovery inbox (`memvault inbox`), never pushed; one already queued is not queued "
        "again.",
        kinds=kinds("polars", "numpy"),
        owners=OWNERS,
    ),
]


@dg.multi_asset(
    name="dream_graph",
    specs=SPECS,
    check_specs=[expectations_spec("edges", EDGES)],
    group_name=DREAM_GROUP,
    can_subset=True,
    pool=STORE_POOL,
    description="The dream's graph stages in one step: edges, communities, centrality, "
    "discoveries.",
)
def dream_graph(
    context: dg.AssetExecutionContext, store: StoreResource, dream: DreamResource
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    with all_or_nothing(context, store, dream) as run_id, store.open() as opened:
        carry_on(opened, run_id)
        graph = DreamGraph(
            opened,
            GraphConfig.model_validate(dream.graph),
            run_id,
            dream.dry_run,
            context.log.info,
            full=dream.full,
            full_every_days=dream.full_every_days,
        )
        yield from materialize_stages(context, graph.stages(), checks_after={EDGES: graph.checks()})
