"""The review rules: when a proposed change may be applied without a human.

* Auto-approve only when the confidence is above ``auto_confidence`` (0.8) AND the
  impact is below the threshold of the change's kind (``impact_thresholds``;
  calibrated by human decisions, see :mod:`memvault.review.calibration`).
* Queue when the confidence is low, when two judgments disagree, when a batch is
  larger than ``max_batch``, and always for the attitude and skill layers.
* A queued item has a deadline; past it, nothing is committed (the item expires,
  visibly, and the change stays pending until a human decides).
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

#: Kinds whose changes always wait for a human (they change how the owner wants things done).
LAYER_KINDS: tuple[str, ...] = ("attitude", "skill")


class ReviewPolicy(BaseModel):
    """Thresholds of the review rules (every value can be set in configuration)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    auto_confidence: float = Field(
        0.8, ge=0.0, le=1.0, description="Above this confidence a change may be auto-approved"
    )
    impact_thresholds: dict[str, float] = Field(
        default_factory=lambda: {
            "conflict:merge": 0.5,
            "conflict:supersede": 0.4,
            "lint": 0.3,
            "memory": 0.3,
            "attitude": 0.0,
            "skill": 0.0,
        },
        description="Per change kind (or its prefix before ':'): impact below which it may "
        "be auto-approved",
    )
    default_threshold: float = Field(0.3, ge=0.0, le=1.0)
    max_batch: int = Field(50, ge=1, description="A batch larger than this waits for a human")
    deadline_days: int = Field(14, ge=1, description="Days a queued item waits for a decision")
    low_confidence: float = Field(
        0.3, ge=0.0, le=1.0, description="Memories below this confidence go to review"
    )
    streak_to_relax: int = Field(
        5, ge=1, description="Consecutive 'correct' decisions that raise a band's threshold"
    )
    relax_step: float = Field(0.1, gt=0.0, le=1.0, description="How much they raise it")

    def base_threshold(self, kind: str) -> float:
        if kind in self.impact_thresholds:
            return self.impact_thresholds[kind]
        prefix = kind.split(":", 1)[0]
        return self.impact_thresholds.get(prefix, self.default_threshold)


class Thresholds(Protocol):
    """What the rules need of a calibration (:class:`memvault.review.calibration.Calibration`):
    the impact threshold human decisions have led to for a kind and a confidence."""

    def threshold(self, policy: ReviewPolicy, kind: str, confidence: float | None) -> float: ...


class Route(BaseModel):
    """Where a proposed change goes, and the words that say why."""

    auto: bool
    reason: str
    threshold: float


def route(
    policy: ReviewPolicy,
    calibration: Thresholds,
    kind: str,
    confidence: float | None,
    impact: float,
    *,
    agreed: bool = True,
    batch_size: int = 1,
) -> Route:
    """Apply the review rules to one proposed change."""
    threshold = calibration.threshold(policy, kind, confidence)
    if kind.split(":", 1)[0] in LAYER_KINDS:
        return Route(auto=False, reason=f"{kind} changes always wait for a human", threshold=0)
    if not agreed:
        return Route(auto=False, reason="the two judgments disagree", threshold=threshold)
    if confidence is None or confidence <= policy.auto_confidence:
        shown = "no confidence" if confidence is None else f"confidence {confidence:.2f}"
        return Route(
            auto=False,
            reason=f"{shown} is not above {policy.auto_confidence:g}",
            threshold=threshold,
        )
    if batch_size > policy.max_batch:
        return Route(
            auto=False,
            reason=f"a batch of {batch_size} is larger than {policy.max_batch}",
            threshold=threshold,
        )
    if impact >= threshold:
        return Route(
            auto=False,
            reason=f"impact {impact:.2f} is not below {threshold:.2f} for {kind}",
            threshold=threshold,
        )
    return Route(
        auto=True,
        reason=f"confidence {confidence:.2f} > {policy.auto_confidence:g} and impact "
        f"{impact:.2f} < {threshold:.2f}",
        threshold=threshold,
    )
