"""The dream loop (design.md): orient, signal, reflect, consolidate, prune — the core of each stage.

The Dagster assets in ``assets/dream.py`` are thin wrappers around these
functions; ``memvault dream`` runs the same assets in-process.
"""

from memvault.dream.config import DreamConfig
from memvault.dream.gate import GateDecision, evaluate_gate
from memvault.dream.orient import OrientStats, orient
from memvault.dream.prune import PruneResult, find_orphans, prune_orphans
from memvault.dream.reflect import REFLECT, ReflectResult, reflect, statistics_snapshot
from memvault.dream.report import DreamReport, save_report

__all__ = [
    "REFLECT",
    "DreamConfig",
    "DreamReport",
    "GateDecision",
    "OrientStats",
    "PruneResult",
    "ReflectResult",
    "evaluate_gate",
    "find_orphans",
    "orient",
    "prune_orphans",
    "reflect",
    "save_report",
    "statistics_snapshot",
]
