"""The night's chain as the daemon evaluates it: which runs each materialization leads to.

Each tick here is what ``default_automation_condition_sensor`` does on a tick: it evaluates
every asset's automation condition on the instance (an on-disk one, configured like a user's)
against the materializations recorded there, and turns what it requests into run requests with
Dagster's own grouping. A run request is a run the daemon launches: a track's assets listed in
one request run in one run. (tests/integration/test_ui.py sees the daemon launch them.)
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.automation_tick_evaluation_context import build_run_requests

from assets.profile import DAILY_PARTITIONS
from pipelines.definitions import automation_sensor, defs
from tests.helpers import TEST_NOW

ROOT = Path(__file__).resolve().parents[2]

GARDEN = {
    "garden_survey",
    "garden_dedup",
    "garden_decay",
    "garden_split",
    "garden_invalidate",
    "garden_reconnect",
    "garden_journal",
    "garden_report",
}
LAYERS = {"attitude_decay", "skill_levels"}
PROFILE = {"daily_snapshot", "interest_7d", "interest_30d", "interest_90d", "diary_page"}
LINT = {"lint_structure", "lint_grounding", "lint_semantic", "lint_confirm", "review_queue"}
DREAM = {
    "dream_orient",
    "dream_edges",
    "dream_communities",
    "dream_centrality",
    "dream_discoveries",
    "dream_reflect",
    "dream_consolidate",
    "dream_prune",
}
LIFECYCLE = {"usage_weights", "tiering"}

Request = tuple[frozenset[str], str | None]


class Daemon:
    """The automation sensor's ticks on one instance, at chosen times (UTC)."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        self.instance = instance
        self.graph = defs.resolve_asset_graph()
        self.cursor = None
        self.reasons: dict[str, str] = {}

    def tick(self, at: dt.datetime) -> set[Request]:
        result = dg.evaluate_automation_conditions(
            defs, self.instance, evaluation_time=at, cursor=self.cursor
        )
        self.cursor = result.cursor
        self.reasons = {
            r.key.to_user_string(): r.condition.get_label() or ""
            for r in result.results
            if r.true_subset.size
        }
        requests = build_run_requests(
            result._requested_subsets,  # what the tick requested, as the sensor hands it on
            self.graph,
            run_tags=None,
            emit_backfills=automation_sensor.emit_backfills,
        )
        assert all(r.asset_graph_subset is None for r in requests), "a run, not a backfill"
        return {
            (frozenset(k.to_user_string() for k in r.asset_selection or ()), r.partition_key)
            for r in requests
        }

    def materialized(self, *names: str, partition: str | None = None) -> None:
        for name in names:
            self.instance.report_runless_asset_event(
                dg.AssetMaterialization(name, partition=partition)
            )


@pytest.fixture
def daemon(tmp_path: Path) -> Daemon:
    shutil.copy(ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        yield Daemon(instance)


#: 02:00 UTC three days before the tests' day (a night whose yesterday is a partition).
NIGHT = dt.datetime.combine(TEST_NOW.date() - dt.timedelta(days=3), dt.time(2), tzinfo=dt.UTC)


def test_a_night_chains_track_by_track_each_in_a_run_of_its_own(daemon: Daemon) -> None:
    night = NIGHT
    yesterday = DAILY_PARTITIONS.get_partition_keys(current_time=night)[-1]
    assert daemon.tick(night) == set()

    # The collector (the night's one clock) ran: the gardener with the layers (one run: the
    # daemon puts every unpartitioned asset of a tick in one run), and yesterday's profile.
    daemon.materialized("collected_sessions", "memory_embeddings")
    assert daemon.tick(night + dt.timedelta(minutes=20)) == {
        (frozenset(GARDEN | LAYERS), None),
        (frozenset(PROFILE), yesterday),
    }
    assert daemon.reasons["garden_survey"] == "after the collector"
    assert daemon.reasons["garden_report"] == "with the gardener's survey"
    assert daemon.reasons["daily_snapshot"] == "after the collector: yesterday"
    assert daemon.tick(night + dt.timedelta(minutes=21)) == set(), "requested once"

    # The gardener finished: the lint, in a run of its own.
    daemon.materialized(*GARDEN, *LAYERS)
    daemon.materialized(*PROFILE, partition=yesterday)
    assert daemon.tick(night + dt.timedelta(minutes=50)) == {(frozenset(LINT), None)}
    assert daemon.reasons["lint_structure"] == "after the gardener"

    # The dream (started by its gate sensor) finished: tiering and the knowledge gaps.
    daemon.materialized(*LINT)
    daemon.materialized(*DREAM)
    assert daemon.tick(night + dt.timedelta(minutes=80)) == {
        (frozenset(LIFECYCLE | {"knowledge_gaps"}), None)
    }
    assert daemon.reasons["usage_weights"] == "after the dream, or at 05:00 on a day without one"
    daemon.materialized(*LIFECYCLE, "knowledge_gaps")

    # 05:00 on a day tiering ran: nothing more. Nothing else is asked for the rest of the day.
    assert daemon.tick(night + dt.timedelta(hours=2, minutes=50)) == set()
    assert daemon.tick(night + dt.timedelta(hours=3, minutes=10)) == set()
    assert daemon.tick(night + dt.timedelta(hours=20)) == set()


def test_tiering_runs_at_five_on_a_day_without_a_dream(daemon: Daemon) -> None:
    day = NIGHT + dt.timedelta(days=1, hours=2, minutes=50)  # 04:50 the next day
    assert daemon.tick(day) == set()
    assert daemon.tick(day + dt.timedelta(minutes=20)) == {(frozenset(LIFECYCLE), None)}
    daemon.materialized(*LIFECYCLE)
    assert daemon.tick(day + dt.timedelta(minutes=40)) == set()


def test_a_quiet_night_of_the_gardener_leads_to_no_lint(daemon: Daemon) -> None:
    """On a quiet store the gardener's step materializes nothing and observes its survey with
    the reason: the lint, which follows the gardener's report, is not asked for; the next
    night's collector asks for the gardener again."""
    night = NIGHT
    yesterday = DAILY_PARTITIONS.get_partition_keys(current_time=night)[-1]
    assert daemon.tick(night) == set()
    daemon.materialized("collected_sessions", "memory_embeddings")
    assert (frozenset(GARDEN | LAYERS), None) in daemon.tick(night + dt.timedelta(minutes=20))
    daemon.instance.report_runless_asset_event(
        dg.AssetObservation("garden_survey", description="Not gardened: the store is quiet")
    )
    daemon.materialized(*LAYERS)
    daemon.materialized(*PROFILE, partition=yesterday)
    assert daemon.tick(night + dt.timedelta(minutes=50)) == set()
    later = daemon.tick(night + dt.timedelta(hours=20))  # tiering at 05:00, never the lint
    assert not any(LINT & names for names, _ in later)

    next_night = night + dt.timedelta(days=1)
    daemon.materialized("collected_sessions", "memory_embeddings")
    assert (frozenset(GARDEN | LAYERS), None) in daemon.tick(next_night + dt.timedelta(minutes=20))
