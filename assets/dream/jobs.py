"""The dream's job: every stage and check of the dream group, started by the gate sensor."""

import dagster as dg

from assets.dream.stages import DREAM_GROUP

dream_job = dg.define_asset_job(
    "dream_job",
    selection=dg.AssetSelection.groups(DREAM_GROUP),
    description="The dream: orient, the graph (edges, communities, centrality, discoveries), "
    "reflect, consolidate, prune, with its checks. Started by dream_gate_sensor when both gates "
    "open, or from the launchpad.",
)
