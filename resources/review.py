"""The review rules and the lint's knobs as Dagster resources (the launchpad can change them)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from memvault.review.policy import ReviewPolicy


class ReviewResource(dg.ConfigurableResource):
    """When a change may be applied without a human; empty fields keep the defaults."""

    auto_confidence: float = Field(
        default=0.8, description="Auto-approve only above this confidence (and below the impact)"
    )
    impact_thresholds: dict = Field(
        default_factory=dict,
        description="Per change kind (conflict:merge, conflict:supersede, lint, memory, ...): "
        "the impact below which it may be auto-approved; overrides the defaults",
    )
    max_batch: int = Field(default=50, description="A batch larger than this waits for a human")
    deadline_days: int = Field(default=14, description="Days a queued item waits for a decision")
    low_confidence: float = Field(
        default=0.3, description="Facts stored with less confidence than this go to review"
    )
    streak_to_relax: int = Field(
        default=5, description="'correct' decisions in a row that raise a band's threshold"
    )
    relax_step: float = Field(default=0.1, description="How much such a streak raises it")

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


class LintResource(dg.ConfigurableResource):
    """How much of the store the semantic layer looks at (the embedder is the shared one)."""

    similarity: float = Field(
        default=0.6, description="Two facts of one subject at least this similar are compared"
    )
    pairs_per_100: int = Field(
        default=5, description="Fact pairs the judge is asked about per 100 new facts"
    )
