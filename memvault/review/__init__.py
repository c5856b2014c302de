"""The review queue: one place where changes wait for a human, one decision path.

Conflict verdicts the dream is not sure of, lint findings that would change the
store, the gardener's proposals, low-confidence memories and changes to the
attitude and skill layers all land in ``review_queue``. A change is applied
automatically only when the review rules allow it (:mod:`memvault.review.policy`);
a human's "correct" or "wrong" is applied through the audited write path and
teaches the rules (:mod:`memvault.review.calibration`).
"""

from memvault.review.appliers import Decision, decide, register_applier
from memvault.review.calibration import Calibration, calibrate
from memvault.review.impact import ImpactInputs, impact_score
from memvault.review.policy import ReviewPolicy, Route, route
from memvault.review.queue import (
    ReviewItem,
    enqueue_row,
    expire_overdue,
    get_item,
    list_items,
)

__all__ = [
    "Calibration",
    "Decision",
    "ImpactInputs",
    "ReviewItem",
    "ReviewPolicy",
    "Route",
    "calibrate",
    "decide",
    "enqueue_row",
    "expire_overdue",
    "get_item",
    "impact_score",
    "list_items",
    "register_applier",
    "route",
]
