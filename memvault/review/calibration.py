"""Human decisions recalibrate the auto-approve rule, per change kind and confidence band.

Decisions are replayed in the order they were made, per (kind, band):
``streak_to_relax`` (5) "correct" answers in a row raise that band's impact
threshold by ``relax_step`` (0.1, at most 1.0), so similar changes are approved
automatically next time; one "wrong" closes the band (threshold 0: everything
in it waits for a human) until enough "correct" answers open it again. The
table is derived from the decisions in ``review_queue``, so it is never out of
step with them and needs no state of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memvault.review.policy import ReviewPolicy
from memvault.store import Store
from memvault.store.queries.review import human_verdicts

#: Lower edges of the confidence bands (a confidence falls in the last band whose edge it reaches).
BANDS: tuple[float, ...] = (0.0, 0.8, 0.85, 0.9, 0.95)


def band_of(confidence: float | None) -> float:
    value = confidence if confidence is not None else 0.0
    return max(edge for edge in BANDS if value >= edge)


@dataclass
class BandState:
    threshold: float
    streak: int = 0
    correct: int = 0
    wrong: int = 0


@dataclass
class Calibration:
    """Per (kind, band): the threshold human decisions have led to."""

    bands: dict[tuple[str, float], BandState] = field(default_factory=dict)

    def threshold(self, policy: ReviewPolicy, kind: str, confidence: float | None) -> float:
        state = self.bands.get((kind, band_of(confidence)))
        return state.threshold if state is not None else policy.base_threshold(kind)

    def metadata(self, policy: ReviewPolicy) -> dict[str, Any]:
        """What an orchestrator shows: the auto-approve thresholds, and how decisions moved them."""
        return {
            "thresholds": [
                {"kind": kind, "auto-approve below impact": round(value, 2)}
                for kind, value in sorted(policy.impact_thresholds.items())
            ],
            "calibration": self.rows(),
        }

    def rows(self) -> list[dict[str, object]]:
        """The calibration as a table (for the review page and the asset metadata)."""
        return [
            {
                "kind": kind,
                "band": f"{band:.2f}+",
                "correct": s.correct,
                "wrong": s.wrong,
                "threshold": round(s.threshold, 2),
            }
            for (kind, band), s in sorted(self.bands.items())
        ]


def replay(policy: ReviewPolicy, decisions: Iterable[tuple[str, float | None, str]]) -> Calibration:
    """Calibration from (kind, confidence, decision) in the order the decisions were made."""
    calibration = Calibration()
    for kind, confidence, decision in decisions:
        key = (kind, band_of(confidence))
        state = calibration.bands.setdefault(key, BandState(policy.base_threshold(kind)))
        if decision == "correct":
            state.correct += 1
            state.streak += 1
            if state.streak >= policy.streak_to_relax:
                state.threshold = min(1.0, state.threshold + policy.relax_step)
                state.streak = 0
        elif decision == "wrong":
            state.wrong += 1
            state.threshold = 0.0
            state.streak = 0
    return calibration


def calibrate(store: Store, policy: ReviewPolicy) -> Calibration:
    """The calibration the human decisions recorded in the store lead to."""
    return replay(policy, human_verdicts(store))
