"""The dream track: orient → the graph (edges, communities, centrality, discoveries) → reflect
→ consolidate → prune, with its guarantees as checks, its job and the gate sensor that starts
it."""

import dagster as dg

from assets.dream.checks import dream_guarantees
from assets.dream.graph import dream_graph
from assets.dream.jobs import dream_job
from assets.dream.sensor import dream_gate_sensor
from assets.dream.stages import (
    DREAM_GROUP,
    dream_consolidate,
    dream_orient,
    dream_prune,
    dream_reflect,
    dream_run_id,
)

defs = dg.Definitions(
    assets=[dream_orient, dream_graph, dream_reflect, dream_consolidate, dream_prune],
    asset_checks=[dream_guarantees],
    jobs=[dream_job],
    sensors=[dream_gate_sensor],
)

__all__ = [
    "DREAM_GROUP",
    "defs",
    "dream_consolidate",
    "dream_gate_sensor",
    "dream_graph",
    "dream_guarantees",
    "dream_job",
    "dream_orient",
    "dream_prune",
    "dream_reflect",
    "dream_run_id",
]
