"""Is tonight's garden run due? Read from the store and the ledger (DuckDB and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

import memvault
from memvault.gardener.cadence import Cadence, garden_due
from memvault.gardener.ledger import Ledger
from memvault.gardener.state import GardenConfig
from memvault.normalize import utcnow
from memvault.store import Store
from tests.garden_support import (
    a_new_session,
    adapter,
    drop_backup_schemas,
    garden,
    rules_as_a_model,
)

CONFIG = GardenConfig(quiet_items=5, quiet_days=7)
LONG = "Notes from the release review. " + " ".join(
    f"Point {n}: the team agreed that service number {n} moves to region {n % 3} in week {n}."
    for n in range(12)
)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with memvault.open(store_url) as opened:
        yield opened
    drop_backup_schemas(store_url)


def _due(store: Store, days_later: float = 0) -> Cadence:
    now = utcnow() + dt.timedelta(days=days_later)
    return garden_due(Ledger(store), [adapter(store)], now, CONFIG)


def test_quiet_after_a_run_active_once_enough_came_in_weekly_either_way(
    store: Store, tmp_path: Path
) -> None:
    a_new_session(store, tmp_path, 6, topic="billing", texts=[LONG])
    first = _due(store)
    assert first.due and "never gardened" in first.reason
    # A model splits the long memory: the run's own writes (the trimmed item, its new linked
    # items) are not news.
    result = garden(store, judge=rules_as_a_model(), mode="autonomous")
    assert result.succeeded and result.state.actions.get("splits") == 1, result.report
    quiet = _due(store)
    assert not quiet.due and quiet.quiet
    assert "is quiet: 0 new or changed memory item(s)" in quiet.reason
    # The collector brings a little: still quiet; a little more: active.
    a_new_session(store, tmp_path, 4, topic="search")
    assert "is quiet: 4 new" in _due(store).reason
    a_new_session(store, tmp_path, 1, topic="mobile")
    active = _due(store)
    assert active.due and not active.quiet and "is active" in active.reason
    # A week after the last run a quiet store is due anyway.
    garden(store)
    assert not _due(store, days_later=6.9).due
    weekly = _due(store, days_later=7.1)
    assert weekly.due and weekly.quiet and "the run every 7 days is due" in weekly.reason


def test_an_approved_proposal_makes_a_quiet_night_due(store: Store, tmp_path: Path) -> None:
    a_new_session(store, tmp_path, 2, topic="ops", texts=[LONG])
    garden(store)  # no model: the split is proposed
    assert not _due(store).due
    Ledger(store).approve(None)
    due = _due(store)
    assert due.due and "approved proposal(s) wait" in due.reason
