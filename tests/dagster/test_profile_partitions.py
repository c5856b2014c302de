"""The profile's daily partitions: keys in the owner's timezone, the mappings a backfill orders by."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.profile import BACKFILL, DAILY_PARTITIONS, SETTINGS
from memvault.profile.settings import ProfileSettings, day_bounds, save_settings
from pipelines.definitions import defs

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


def test_the_snapshot_depends_on_its_previous_day_and_the_windows_on_the_days_they_cover() -> None:
    keys = DAILY_PARTITIONS.get_partition_keys(current_time=A_YEAR_IN)
    # A day with 180 days of partitions before it, picked among the partitions that exist.
    day, previous = keys[200], keys[199]
    assert _upstream("daily_snapshot", "daily_snapshot", day) == [previous]
    # The first day has no previous partition, and that is allowed.
    assert _upstream("daily_snapshot", "daily_snapshot", keys[0]) == []
    for window in (7, 30, 90):
        keys = _upstream(f"interest_{window}d", "daily_snapshot", day)
        assert len(keys) == 2 * window and keys[-1] == day, window
    assert _upstream("diary_page", "daily_snapshot", day) == [day]


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


def test_a_range_run_materializes_each_day_and_a_rerun_rewrites_nothing(tmp_path: Path) -> None:
    """In this process, as `memvault backfill` runs a batch: one run, one materialization per
    day and asset, flat metadata for the UI, and the same range again changes no row."""
    from memvault.ingest import ingest_file
    from memvault_demo.generator import DemoConfig, generate, write_jsonl
    from pipelines.runner import materializations, partition_range_tags, run_job

    records, truth = generate(DemoConfig(sessions=16, days=10, seed=5, end=dt.datetime(2026, 5, 1)))
    write_jsonl(records, tmp_path / "h.jsonl")
    url = f"duckdb://{tmp_path / 's.duckdb'}"
    import memvault

    with memvault.open(url) as store:
        ingest_file(store, tmp_path / "h.jsonl")
    first, last = (truth.start.date() + dt.timedelta(days=d) for d in (2, 5))
    tags = partition_range_tags(first.isoformat(), last.isoformat())
    with dg.instance_for_test() as instance:
        result = run_job("profile_job", url, instance=instance, tags=tags)
        assert result.success
        events = result.get_asset_materialization_events()
        assert len(events) == 4 * len(PARTITIONED)
        assert {e.partition for e in events} == {
            (first + dt.timedelta(days=d)).isoformat() for d in range(4)
        }
        for event in events:
            metadata = event.event_specific_data.materialization.metadata  # type: ignore[union-attr]
            assert not any(isinstance(v, dg.JsonMetadataValue) for v in metadata.values())
        again = run_job("profile_job", url, instance=instance, tags=tags)
    assert again.success
    figures = materializations(again)
    assert {
        k: (m["rows_inserted"], m["rows_updated"]) for k, m in figures.items()
    } == dict.fromkeys(PARTITIONED, (0, 0))
    assert figures["diary_page"]["llm_calls"] == 0
