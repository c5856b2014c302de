"""The gardener's cadence: daily for an active store, weekly for a quiet one."""

from __future__ import annotations

import datetime as dt

import pytest

from memvault.gardener.cadence import StoreCadence, combine, decide
from memvault.gardener.state import GardenConfig
from tests.helpers import internal_codes

NOW = dt.datetime(2026, 3, 10, 2, 30)
CONFIG = GardenConfig(quiet_items=5, quiet_days=7)


def _decide(
    days_ago: float | None,
    new_items: int | None,
    *,
    left_over: str | None = None,
    approved: int = 0,
) -> StoreCadence:
    last = None if days_ago is None else NOW - dt.timedelta(days=days_ago)
    return decide(
        "store-a",
        NOW,
        last_run_at=last,
        new_items=new_items,
        config=CONFIG,
        left_over=left_over,
        approved=approved,
    )


def test_an_active_store_is_due_every_night() -> None:
    verdict = _decide(1, 5)
    assert verdict.due and not verdict.quiet
    assert "store-a is active: at least 5 memory items are new or changed" in verdict.reason


def test_a_quiet_store_waits_within_the_week_and_says_until_when() -> None:
    verdict = _decide(3, 4)
    assert not verdict.due and verdict.quiet
    assert verdict.reason == (
        "store-a is quiet: 4 new or changed memory item(s) since the last garden run "
        "(2026-03-07 02:30 UTC), fewer than 5; the next run is due once 5 have come in, "
        "or at 2026-03-14 02:30 UTC at the latest."
    )


@pytest.mark.parametrize("days_ago", [7, 9.5])
def test_a_quiet_store_is_gardened_once_a_week(days_ago: float) -> None:
    verdict = _decide(days_ago, 0)
    assert verdict.due and verdict.quiet
    assert f"{days_ago:.1f} days ago: the run every 7 days is due" in verdict.reason


def test_the_first_run_is_always_due() -> None:
    verdict = _decide(None, None)
    assert verdict.due and not verdict.quiet
    assert verdict.reason == "store-a was never gardened: the first run is due."


def test_left_work_and_approved_proposals_make_a_quiet_night_due() -> None:
    left = _decide(1, 0, left_over="it stopped in decay (mutation budget spent)")
    assert left.due and "left work: it stopped in decay" in left.reason
    approved = _decide(1, 0, approved=2)
    assert approved.due and "2 approved proposal(s) wait" in approved.reason


def test_a_store_that_cannot_tell_what_changed_is_due_and_zero_turns_the_rule_off() -> None:
    assert _decide(1, None).due
    off = decide(
        "store-a",
        NOW,
        last_run_at=NOW - dt.timedelta(hours=20),
        new_items=0,
        config=GardenConfig(quiet_items=0),
    )
    assert off.due and "quiet_items is 0" in off.reason


def test_the_night_is_due_when_any_store_is_and_the_reason_names_it() -> None:
    quiet = _decide(2, 1)
    busy = decide(
        "store-b", NOW, last_run_at=NOW - dt.timedelta(days=1), new_items=9, config=CONFIG
    )
    night = combine([quiet, busy])
    assert night.due and not night.quiet and night.reason == busy.reason
    idle = combine([quiet, quiet])
    assert not idle.due and idle.quiet and "store-a is quiet" in idle.reason
    shown = idle.metadata()
    assert shown["garden_due"] is False and shown["new_items"] == 2
    assert not internal_codes(str(shown) + night.reason)


def test_settings_out_of_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="quiet"):
        GardenConfig(quiet_items=-1)
    with pytest.raises(ValueError, match="quiet"):
        GardenConfig(quiet_days=0)
