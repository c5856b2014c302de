"""The temporal knowledge graph: grounding definitions, conflict resolution, point-in-time queries.

* :mod:`~memvault.temporal.grounding` — what each predicate means (L2) and the triples that break it.
* :mod:`~memvault.temporal.conflict_plan` / :mod:`~memvault.temporal.conflict_apply` — T1–T6:
  plan (rules first, the judge for what rules cannot settle, review when unsure), then apply.
  The plan's parts each have a module: ``conflict_model`` (settings, actions, the plan),
  ``conflict_candidates``, ``conflict_rules``, ``conflict_routing`` (the judge),
  ``conflict_verdicts`` (what a verdict may do) and ``conflict_review``.
* :mod:`~memvault.temporal.asof` — "what was true on D", "what did the store believe then".
* :mod:`~memvault.temporal.checks` — grounding, no data loss, no overlapping functional facts.
"""

from memvault.temporal.asof import AmbiguousSubjectError, FactAt, SubjectNotFoundError, asof
from memvault.temporal.checks import bitemporal_overlaps, data_loss_violations
from memvault.temporal.conflict_apply import apply_conflict_plan
from memvault.temporal.conflict_judge import (
    RESOLVE_CONFLICT,
    ConflictReply,
    ConflictStatement,
    ResolveConflictRequest,
)
from memvault.temporal.conflict_model import ConflictAction, ConflictConfig, ConflictPlan
from memvault.temporal.conflict_plan import plan_conflicts
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
