"""The profile's daily partitions: keys in the owner's timezone, the mappings a backfill orders by."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.profile import BACKFILL, DAILY_PARTITIONS, SETTINGS
from memvault.profile.settings import ProfileSettings, day_bounds, save_settings
from pipelines.definitions import defs
from tests.helpers import TEST_NOW

PARTITIONED = ("daily_snapshot", "interest_7d", "interest_30d", "interest_90d", "diary_page")


def _graph() -> Any:
    return defs.resolve_asset_graph()


def test_every_daily_asset_shares_one_daily_partitions_definition() -> None:
    graph = _graph()
    for name in PARTITIONED:
        node = graph.get(dg.AssetKey(name))
        assert node.partitions_def == DAILY_PARTITIONS, name
        assert node.backfill_policy == BACKFILL, name
    assert graph.get(dg.AssetKey("knowledge_gaps")).partitions_def is None
    keys = DAILY_PARTITIONS.get_partition_keys(
        current_time=dt.datetime.combine(SETTINGS.start + dt.timedelta(days=3), dt.time(12))
    )
    first = SETTINGS.start
    # The last partition is the last complete day: the day in progress is not yet a partition.
    assert keys == [(first + dt.timedelta(days=i)).isoformat() for i in range(3)]
    assert BACKFILL.max_partitions_per_run == SETTINGS.batch_days


#: A moment when a year of partitions exists, whatever the first day is (settings, the clock).
A_YEAR_IN = dt.datetime.combine(SETTINGS.start + dt.timedelta(days=366), dt.time(12))


def _upstream(child: str, parent: str, key: str) -> list[str]:
    graph = _graph()
    mapping = graph.get_partition_mapping(dg.AssetKey(child), dg.AssetKey(parent))
    subset = DAILY_PARTITIONS.empty_subset().with_partition_keys([key])
    result = mapping.get_upstream_mapped_partitions_result_for_partitions(
        subset, DAILY_PARTITIONS, DAILY_PARTITIONS, current_time=A_YEAR_IN
    )
    return sorted(result.partitions_subset.get_partition_keys())


def test_the_snapshot_depends_on_its_previous_day_and_the_rest_on_their_own_day() -> None:
    keys = DAILY_PARTITIONS.get_partition_keys(current_time=A_YEAR_IN)
    # A day in the middle of the partitions that exist (however many the clock allows).
    day, previous = keys[len(keys) // 2], keys[len(keys) // 2 - 1]
    assert _upstream("daily_snapshot", "daily_snapshot", day) == [previous]
    # The first day has no previous partition, and that is allowed.
    assert _upstream("daily_snapshot", "daily_snapshot", keys[0]) == []
    # A window reads its earlier snapshots from the store; the snapshot's chain orders them.
    for window in (7, 30, 90):
        assert _upstream(f"interest_{window}d", "daily_snapshot", day) == [day], window
    assert _upstream("diary_page", "daily_snapshot", day) == [day]
    assert _upstream("diary_page", "interest_7d", day) == [day]


def test_a_backfill_preview_selects_the_chosen_days_and_nothing_later() -> None:
    """The UI's backfill preview (and the backfill it launches) targets the days chosen for
    every daily asset: no window extended to the 2 × window days after them."""
    from dagster_graphql.implementation.execution.backfill import (
        create_asset_backfill_data_from_asset_partitions,
    )

    keys = DAILY_PARTITIONS.get_partition_keys()
    days = keys[len(keys) // 2 : len(keys) // 2 + 10]  # ten days with later days after them
    assert len(days) == 10 and days[-1] != keys[-1]
    with dg.instance_for_test() as instance:
        data = create_asset_backfill_data_from_asset_partitions(
            _graph(), [dg.AssetKey(n) for n in PARTITIONED], days, instance
        )
    targeted = {
        key.to_user_string(): set(subset.get_partition_keys())
        for key, subset in data.target_subset.partitions_subsets_by_asset_key.items()
    }
    assert targeted == {name: set(days) for name in PARTITIONED}


def test_days_run_midnight_to_midnight_in_the_owner_timezone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert day_bounds(dt.date(2026, 7, 1), "UTC") == (
        dt.datetime(2026, 7, 1),
        dt.datetime(2026, 7, 2),
    )
    # Paris in summer is UTC+2; the day DST ends has 25 hours.
    assert day_bounds(dt.date(2026, 7, 1), "Europe/Paris")[0] == dt.datetime(2026, 6, 30, 22)
    start, end = day_bounds(dt.date(2026, 10, 25), "Europe/Paris")
    assert end - start == dt.timedelta(hours=25)
    # The demo records its history's first day for the code location; the environment wins.
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    monkeypatch.delenv("MEMVAULT_PROFILE_START", raising=False)
    monkeypatch.delenv("MEMVAULT_TIMEZONE", raising=False)
    save_settings(dt.date(2026, 3, 2), "Europe/Paris")
    assert ProfileSettings.from_env() == ProfileSettings(
        start=dt.date(2026, 3, 2), timezone="Europe/Paris"
    )
    monkeypatch.setenv("MEMVAULT_PROFILE_START", "2026-01-05")
    assert ProfileSettings.from_env().start == dt.date(2026, 1, 5)


def _per_day(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str], dict[str, Any]]:
    """(asset, day) → the metadata of that day's materialization (plain values)."""
    return {
        (e.asset_key.to_user_string(), str(e.partition)): {
            k: v.value
            for k, v in e.event_specific_data.materialization.metadata.items()  # type: ignore[union-attr]
        }
        for e in result.get_asset_materialization_events()
    }


def _check_history(instance: dg.DagsterInstance, run_id: str) -> dict[str | None, str]:
    """The snapshot check's history for one run as the asset's Checks tab lists it: one row
    per day, evaluated (a day left planned shows as "Skipped")."""
    key = dg.AssetCheckKey(dg.AssetKey("daily_snapshot"), "profile_daily_expectations")
    history = instance.event_log_storage.get_asset_check_execution_history(key, limit=100)
    return {r.partition: r.status.value for r in history if r.run_id == run_id}


def test_a_range_run_materializes_each_day_and_a_rerun_rewrites_nothing(tmp_path: Path) -> None:
    """In this process, as `memvault backfill` runs a batch: one run, one materialization per
    day and asset, each reporting its own day (not the batch's last), flat metadata for the
    UI, and the same range again changes no row."""
    from memvault.ingest import ingest_file
    from memvault_demo.generator import DemoConfig, generate, write_jsonl
    from pipelines.runner import partition_range_tags, run_job

    records, truth = generate(DemoConfig(sessions=16, days=10, seed=5, end=TEST_NOW))
    write_jsonl(records, tmp_path / "h.jsonl")
    url = f"duckdb://{tmp_path / 's.duckdb'}"
    import memvault

    with memvault.open(url) as store:
        ingest_file(store, tmp_path / "h.jsonl")
    first, last = (truth.start.date() + dt.timedelta(days=d) for d in (2, 5))
    days = [(first + dt.timedelta(days=d)).isoformat() for d in range(4)]
    tags = partition_range_tags(first.isoformat(), last.isoformat())
    with dg.instance_for_test() as instance:
        result = run_job("profile_job", url, instance=instance, tags=tags)
        assert result.success
        events = result.get_asset_materialization_events()
        assert len(events) == 4 * len(PARTITIONED)
        assert {e.partition for e in events} == set(days)
        for event in events:
            metadata = event.event_specific_data.materialization.metadata  # type: ignore[union-attr]
            assert not any(isinstance(v, dg.JsonMetadataValue) for v in metadata.values())
        assert _check_history(instance, result.run_id) == {day: "SUCCEEDED" for day in days}
        shown = _per_day(result)
        for (asset, day), figures in shown.items():
            assert figures["day"] == day and figures["row"] == "inserted", (asset, day)
            assert figures["batch"] == f"{days[0]} .. {days[-1]} (4 days)"
        # Each day its own lists and activity: the days differ, as the stored rows do.
        with memvault.open(url) as store:
            stored = dict(store.fetch("SELECT CAST(day AS VARCHAR), activity FROM profile_daily"))
        for day in days:
            activity = json.loads(stored[day])
            assert shown[("daily_snapshot", day)]["sessions"] == activity["sessions"], day
        again = run_job("profile_job", url, instance=instance, tags=tags)
        with memvault.open(url) as store:
            runs = {r[0] for r in store.fetch("SELECT kind FROM runs WHERE status = 'succeeded'")}
    assert again.success
    assert {m["row"] for m in _per_day(again).values()} == {"unchanged"}
    assert {m["llm_calls"] for (a, _), m in _per_day(again).items() if a == "diary_page"} == {0}
    # `memvault runs` lists the profile's runs (and `undo` takes their ids).
    assert set(PARTITIONED) <= runs
