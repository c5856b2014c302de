"""The review rules and their calibration by human decisions (no store needed)."""

from __future__ import annotations

from memvault.review import ImpactInputs, ReviewPolicy, impact_score, route
from memvault.review.calibration import Calibration, band_of, replay

POLICY = ReviewPolicy()


def test_impact_weights_each_part() -> None:
    assert impact_score(ImpactInputs()) == 0.0
    assert impact_score(ImpactInputs(layer=True)) == 0.3
    assert impact_score(ImpactInputs(centrality=1.0, dependents=50, layer=True,
                                     retires_current=True)) == 1.0  # fmt: skip
    assert 0.09 < impact_score(ImpactInputs(dependents=5)) < 0.1


def test_auto_approve_needs_confidence_above_0_8_and_impact_below_the_kind_threshold() -> None:
    calm = Calibration()
    assert route(POLICY, calm, "conflict:merge", 0.9, 0.2).auto
    assert not route(POLICY, calm, "conflict:merge", 0.8, 0.2).auto  # not *above* 0.8
    assert not route(POLICY, calm, "conflict:merge", 0.95, 0.6).auto
    assert not route(POLICY, calm, "conflict:merge", 0.95, 0.1, agreed=False).auto
    assert not route(POLICY, calm, "conflict:merge", 0.95, 0.1, batch_size=51).auto
    for layer in ("attitude", "skill:update"):
        decision = route(POLICY, calm, layer, 0.99, 0.0)
        assert not decision.auto and "always wait for a human" in decision.reason


def test_correct_decisions_open_a_band_and_a_wrong_one_closes_it() -> None:
    kind = "conflict:supersede"
    assert band_of(0.87) == 0.85 and band_of(0.5) == 0.0
    ten_right = [(kind, 0.87, "correct")] * 10
    calibration = replay(POLICY, ten_right)
    assert calibration.threshold(POLICY, kind, 0.86) == 0.6  # 0.4 + 2 × 0.1
    assert calibration.threshold(POLICY, kind, 0.95) == 0.4  # another band: untouched
    assert route(POLICY, calibration, kind, 0.87, 0.55).auto
    closed = replay(POLICY, [*ten_right, (kind, 0.88, "wrong")])
    assert closed.threshold(POLICY, kind, 0.87) == 0.0
    assert not route(POLICY, closed, kind, 0.87, 0.01).auto
    reopened = replay(POLICY, [*ten_right, (kind, 0.88, "wrong"), *[(kind, 0.86, "correct")] * 5])
    assert reopened.threshold(POLICY, kind, 0.87) == 0.1
    assert reopened.rows()[0] == {"kind": kind, "band": "0.85+", "correct": 15, "wrong": 1,
                                  "threshold": 0.1}  # fmt: skip
