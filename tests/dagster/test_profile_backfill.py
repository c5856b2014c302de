"""A backfill of the daily profile launched as a deployment runs one of its batches.

The launch is a process of its own running ``profile_job`` over a range of
daily partitions under the code location's multiprocess executor (one process
per step, the ``memvault_store`` pool), on a PostgreSQL instance with a
PostgreSQL store. Every day of the range must show as a materialized partition
of every daily asset, and materializing the range again must rewrite nothing.
(The DuckDB store with the SQLite instance is backfilled from the UI, through
the webserver and the daemon, in ``tests/integration/test_ui.py``.)
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg
import pytest

import memvault
from pipelines.runner import partition_range_tags, run_job
from tests.dagster.dream_support import seed_demo_store
from tests.dagster.test_job_launch import env, launch  # noqa: F401

DAILY = ("daily_snapshot", "interest_7d", "interest_30d", "interest_90d", "diary_page")
PROFILE_TABLES = ("profile_daily", "interest_window", "diary")


def _keys(first: dt.date, last: dt.date) -> set[str]:
    return {(first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1)}


def _succeeded(home: Path, run_id: str) -> dg.DagsterRun:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        failures = [
            r.user_message
            for r in instance.all_logs(run_id)
            if r.dagster_event and r.dagster_event.is_failure
        ]
        assert run.status == dg.DagsterRunStatus.SUCCESS, failures
        return run


def _materialized(home: Path) -> dict[str, set[str]]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return {
            name: set(instance.get_materialized_partitions(dg.AssetKey(name))) for name in DAILY
        }


def _audited(url: str) -> int:
    with memvault.open(url) as store:
        return store.fetch(
            "SELECT count(*) FROM audit_log WHERE target_table IN "
            "('profile_daily', 'interest_window', 'diary')"
        )[0][0]


def _rows(result: dg.ExecuteInProcessResult) -> set[object]:
    """What each day's materialization says happened to its row."""
    return {
        e.event_specific_data.materialization.metadata["row"].value  # type: ignore[union-attr]
        for e in result.get_asset_materialization_events()
    }


def _backfill(home: Path, url: str, batches: list[tuple[dt.date, dt.date]]) -> None:
    for first, last in batches:
        run_id = launch(home, "profile_job", url, "--partitions", first.isoformat(),
                        last.isoformat())  # fmt: skip
        run = _succeeded(home, run_id)
        assert run.tags["dagster/asset_partition_range_start"] == first.isoformat()


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_backfill_on_postgres_through_a_postgres_instance(
    env: Path,  # noqa: F811
    store_url: str,
    pg_dagster_home: Path,
) -> None:
    truth = seed_demo_store(store_url, env, sessions=30)
    first = truth.start.date() + dt.timedelta(days=40)
    last = first + dt.timedelta(days=9)
    _backfill(pg_dagster_home, store_url, [(first, last)])
    assert _materialized(pg_dagster_home) == dict.fromkeys(DAILY, _keys(first, last))
    audited = _audited(store_url)
    # Re-materialized (in this process, on the same instance): the same rows, nothing audited.
    with dg.DagsterInstance.from_config(str(pg_dagster_home)) as instance:
        again = run_job(
            "profile_job",
            store_url,
            instance=instance,
            tags=partition_range_tags(first.isoformat(), last.isoformat()),
        )
    assert again.success
    assert len(again.get_asset_materialization_events()) == 10 * len(DAILY)
    assert _rows(again) == {"unchanged"}
    assert _audited(store_url) == audited
