"""Benchmark of the daily profile on a ≥100k-block store: a year of partitions backfilled.

Run: ``.venv/bin/pytest tests/perf -m perf -s -k profile`` (``PROFILE_BENCH_DAYS`` shortens the
range). Every daily asset (snapshot, 7/30/90-day interest, diary) is backfilled over the range
in runs of 31 days, as a backfill does; the baseline in the same run is one run per partition,
timed on a sample of days spread over the range and extrapolated to the whole range (a year of
single-day runs would take hours). Both use ``profile_job`` through the runner on one Dagster
instance. Printed: both times and their ratio, the cost of one nightly partition, peak RSS.

The store is the dream benchmarks' 10,100-session history (103k blocks over 505 days), cached
under ``/tmp/memvault-perf/``; a cached copy built for an older schema is reused (opening it
applies the newer migrations).
"""

from __future__ import annotations

import datetime as dt
import os
import resource
import shutil
import statistics
import time
from pathlib import Path

import dagster as dg
import pytest

import memvault
from tests.perf.dream_data import CACHE_ROOT, END, build_scaled_store

SESSIONS, SEED, HOLDOUT = 10_100, 11, 100
DAYS = int(os.environ.get("PROFILE_BENCH_DAYS", "365"))
SAMPLE = 8


def _store(url: str) -> None:
    cached = sorted(CACHE_ROOT.glob(f"scaled-s{SESSIONS}-seed{SEED}-h{HOLDOUT}-*/store.duckdb"))
    if cached:
        shutil.copyfile(cached[-1], url.split("://", 1)[1])
    else:
        build_scaled_store(url, sessions=SESSIONS, seed=SEED, holdout=HOLDOUT)


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024


@pytest.mark.perf
@pytest.mark.timeout(7200)
def test_a_year_of_daily_partitions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"duckdb://{tmp_path / 'profile.duckdb'}"
    _store(url)
    last = END.date() - dt.timedelta(days=1)
    first = last - dt.timedelta(days=DAYS - 1)
    monkeypatch.setenv("MEMVAULT_PROFILE_START", (first - dt.timedelta(days=1)).isoformat())
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    from pipelines.runner import definitions, partition_range_tags, profile_batches, run_job

    definitions()  # the partitions now start before the range
    with memvault.open(url) as store:
        blocks = store.counts(("blocks",))["blocks"]
    assert blocks >= 100_000, blocks

    with dg.instance_for_test() as instance:
        started = time.perf_counter()
        batches = list(profile_batches(first, last))
        for a, b in batches:
            result = run_job("profile_job", url, instance=instance, tags=partition_range_tags(a, b))
            assert result.success, a
        batched_s = time.perf_counter() - started
        rss_batched = _rss_gib()
        done = set(instance.get_materialized_partitions(dg.AssetKey("diary_page")))
        assert len(done) == DAYS

        step = max(1, DAYS // SAMPLE)
        sample = [last - dt.timedelta(days=i * step) for i in range(SAMPLE)]
        singles = []
        for day in sample:
            started = time.perf_counter()
            result = run_job(
                "profile_job",
                url,
                instance=instance,
                tags=partition_range_tags(day.isoformat(), day.isoformat()),
            )
            assert result.success, day
            singles.append(time.perf_counter() - started)
    per_day = statistics.mean(singles)
    nightly = singles[0]  # the newest day: what the nightly schedule runs
    extrapolated = per_day * DAYS
    with memvault.open(url) as store:
        rows = store.counts(("profile_daily", "interest_window", "diary"))
    print(
        f"\nprofile backfill of {DAYS} daily partitions × 5 assets on {blocks:,} blocks: "
        f"{batched_s:.1f} s in {len(batches)} runs of ≤31 days; one run per partition "
        f"{per_day:.2f} s/day (mean of {SAMPLE}) → {extrapolated:.0f} s extrapolated "
        f"({extrapolated / batched_s:.1f}× slower; target ≥ 5×); one nightly partition "
        f"{nightly:.2f} s (target ≤ 5 s); "
        f"peak RSS {_rss_gib():.2f} GiB (after the batched backfill {rss_batched:.2f} GiB); "
        f"rows {rows}"
    )
    assert extrapolated / batched_s >= 5
    assert _rss_gib() <= 4
