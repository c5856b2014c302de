"""The temporal knowledge graph: grounding definitions, conflict resolution, point-in-time queries.

* :mod:`~memvault.temporal.grounding` — what each predicate means (L2) and the triples that break it.
* :mod:`~memvault.temporal.conflict` — T1–T6: plan (rules first, the judge for what rules
  cannot settle, review when unsure), then apply. Its door, ``conflict/plan.py``, names the
  step each of its modules takes: ``model`` (settings, actions, the plan), ``candidates``,
  ``rules``, ``judge`` (the judge's task), ``routing``, ``verdicts`` (what a verdict may do),
  ``review`` and ``apply``.
* :mod:`~memvault.temporal.asof` — "what was true on D", "what did the store believe then".
* :mod:`~memvault.temporal.checks` — grounding, no data loss, no overlapping functional facts.
"""

from memvault.temporal.asof import AmbiguousSubjectError, FactAt, SubjectNotFoundError, asof
from memvault.temporal.checks import bitemporal_overlaps, data_loss_violations
from memvault.temporal.conflict import (
    RESOLVE_CONFLICT,
    ConflictAction,
    ConflictConfig,
    ConflictPlan,
    ConflictReply,
    ConflictStatement,
    ResolveConflictRequest,
    apply_conflict_plan,
    plan_conflicts,
)
from memvault.temporal.grounding import (
    Grounding,
    GroundingError,
    PredicateDef,
    grounding_violations,
)

__all__ = [
    "RESOLVE_CONFLICT",
    "AmbiguousSubjectError",
    "ConflictAction",
    "ConflictConfig",
    "ConflictPlan",
    "ConflictReply",
    "ConflictStatement",
    "FactAt",
    "Grounding",
    "GroundingError",
    "PredicateDef",
    "ResolveConflictRequest",
    "SubjectNotFoundError",
    "apply_conflict_plan",
    "asof",
    "bitemporal_overlaps",
    "data_loss_violations",
    "grounding_violations",
    "plan_conflicts",
]
