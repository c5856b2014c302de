"""The review rules as a Dagster resource (the launchpad can change them)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from memvault.review.policy import ReviewPolicy
from resources.settings import setting


class ReviewResource(dg.ConfigurableResource):
    """When a change may be applied without a human; defaults, bounds and descriptions are
    ``ReviewPolicy``'s."""

    auto_confidence: float = setting(ReviewPolicy, "auto_confidence")
    impact_thresholds: dict = Field(
        default_factory=dict,
        description="Per change kind (conflict:merge, conflict:supersede, lint, memory, ...): "
        "the impact below which it may be auto-approved; overrides the defaults",
    )
    max_batch: int = setting(ReviewPolicy, "max_batch")
    deadline_days: int = setting(ReviewPolicy, "deadline_days")
    low_confidence: float = setting(ReviewPolicy, "low_confidence")
    streak_to_relax: int = setting(ReviewPolicy, "streak_to_relax")
    relax_step: float = setting(ReviewPolicy, "relax_step")

    def policy(self) -> ReviewPolicy:
        defaults = ReviewPolicy()
        return ReviewPolicy(
            auto_confidence=self.auto_confidence,
            impact_thresholds=defaults.impact_thresholds | dict(self.impact_thresholds),
            max_batch=self.max_batch,
            deadline_days=self.deadline_days,
            low_confidence=self.low_confidence,
            streak_to_relax=self.streak_to_relax,
            relax_step=self.relax_step,
        )
