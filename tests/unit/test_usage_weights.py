"""Usage weights by hand: the access multiplier, its 30-day wear-off and 10× cap, feedback."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from memvault.lifecycle.weights import (
    access_multiplier,
    effective_age_days,
    feedback_factor,
    regained_interest,
    retention,
    weights_frame,
)

NOW = dt.datetime(2026, 6, 1, 12, 0)


def test_each_recall_extends_the_half_life_and_the_extension_wears_off_over_30_days() -> None:
    assert access_multiplier([]) == 1.0
    assert access_multiplier([0.0]) == 2.0  # a recall just now doubles the half-life
    assert access_multiplier([15.0]) == 1.5  # half worn off after 15 days
    assert access_multiplier([30.0]) == 1.0  # gone after 30 days
    assert access_multiplier([0.0, 15.0, 30.0, 45.0]) == 2.5  # 1 + (1 + 0.5 + 0 + 0)
    # twelve recalls 15 days ago: 1 + 12 × 0.5 = 7; the same twelve 30 days later: 1
    assert access_multiplier([15.0] * 12) == 7.0
    assert access_multiplier([45.0] * 12) == 1.0


def test_the_multiplier_is_capped_at_ten() -> None:
    assert access_multiplier([0.0] * 9) == 10.0
    assert access_multiplier([0.0] * 50) == 10.0
    assert access_multiplier([0.0] * 8) == 9.0


def test_effective_age_divides_by_use_and_feedback() -> None:
    neutral = {"access_multiplier": 1.0, "feedback_boost": 0.0, "verdict_score": 0.0}
    assert effective_age_days(60.0, neutral) == 60.0
    assert effective_age_days(60.0, {**neutral, "access_multiplier": 2.0}) == 30.0
    assert effective_age_days(60.0, {**neutral, "feedback_boost": 1.0}) == 30.0  # one + : younger
    assert effective_age_days(60.0, {**neutral, "feedback_boost": -1.0}) == 120.0  # one − : older
    assert (
        effective_age_days(60.0, {**neutral, "verdict_score": 2.0}) == 30.0
    )  # verdicts count half
    assert effective_age_days(60.0, {**neutral, "feedback_boost": 9.0}) == 7.5  # at most 8×
    assert effective_age_days(60.0, {**neutral, "feedback_boost": -9.0}) == 480.0
    assert effective_age_days(60.0, {"access_multiplier": 10.0, "feedback_boost": 1.0}) == 3.0
    assert effective_age_days(60.0, {}) == 60.0  # missing signals are neutral
    assert feedback_factor(1.0, -2.0) == 1.0  # a + and two wrong answers cancel out
    assert retention(30.0) == pytest.approx(0.5)


def test_regained_interest_needs_a_recent_recall_or_net_positive_feedback() -> None:
    assert regained_interest({"access_multiplier": 1.2})
    assert regained_interest({"feedback_boost": 1.0})
    assert not regained_interest({"access_multiplier": 1.0, "feedback_boost": 0.0})
    assert not regained_interest({"feedback_boost": 1.0, "verdict_score": -2.0})


def test_weights_frame_from_recalls_and_boosts_without_a_store() -> None:
    blocks = pl.DataFrame(
        {
            "block_id": ["a", "b", "c"],
            "created_at": [NOW - dt.timedelta(days=60)] * 3,
            "last_accessed_at": [None, None, NOW - dt.timedelta(days=1)],
        },
        schema_overrides={"last_accessed_at": pl.Datetime("us"), "created_at": pl.Datetime("us")},
    )
    accesses = pl.DataFrame(
        {
            "block_id": ["a", "a", "a", "b"],
            "created_at": [
                NOW,
                NOW - dt.timedelta(days=15),
                NOW - dt.timedelta(days=40),
                NOW - dt.timedelta(days=45),
            ],
            "verdict": [1.0, -1.0, 1.0, None],
        },
        schema_overrides={"created_at": pl.Datetime("us")},
    )
    boosts = pl.DataFrame({"block_id": ["b"], "feedback_boost": [-1.0]})
    frame = weights_frame(blocks, accesses, boosts, NOW).sort("block_id")
    rows = {r["block_id"]: r for r in frame.iter_rows(named=True)}
    assert rows["a"]["access_multiplier"] == pytest.approx(2.5)
    assert rows["a"]["verdict_score"] == 1.0
    assert rows["a"]["last_access_at"] == NOW
    assert rows["b"]["access_multiplier"] == 1.0  # its only recall is 45 days old
    assert rows["b"]["feedback_boost"] == -1.0
    assert rows["c"]["access_multiplier"] == 1.0 and rows["c"][
        "last_access_at"
    ] == NOW - dt.timedelta(days=1)
    # retention: 0.5 ** (effective age / 30); a: 60 / (2.5 × 2**0.5) days
    assert rows["a"]["retention"] == pytest.approx(0.5 ** (60 / (2.5 * 2**0.5) / 30))
    assert rows["b"]["retention"] == pytest.approx(0.5**4)  # 120 effective days
    assert frame.columns == [
        "block_id",
        "access_multiplier",
        "feedback_boost",
        "verdict_score",
        "last_access_at",
        "retention",
    ]
