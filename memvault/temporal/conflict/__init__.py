"""Temporal conflict resolution: :mod:`~memvault.temporal.conflict.plan` is the door (what
is decided, by which step, in which module); :func:`apply_conflict_plan` writes a plan."""

from memvault.temporal.conflict.apply import apply_conflict_plan
from memvault.temporal.conflict.judge import (
    RESOLVE_CONFLICT,
    ConflictReply,
    ConflictStatement,
    ResolveConflictRequest,
)
from memvault.temporal.conflict.model import ConflictAction, ConflictConfig, ConflictPlan
from memvault.temporal.conflict.plan import plan_conflicts

__all__ = [
    "RESOLVE_CONFLICT",
    "ConflictAction",
    "ConflictConfig",
    "ConflictPlan",
    "ConflictReply",
    "ConflictStatement",
    "ResolveConflictRequest",
    "apply_conflict_plan",
    "plan_conflicts",
]
