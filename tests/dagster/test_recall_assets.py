"""The prefetch asset under Dagster: it fills the cache, a re-run writes nothing, and a recall
of a predicted question is served from it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg
import pytest

import memvault
from assets.recall import prefetch_cache
from memvault.normalize import utcnow
from resources import EmbedderResource, StoreResource
from tests.helpers import asset_metadata
from tests.recall_support import fill


def _materialize(url: str) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [prefetch_cache],
        resources={"store": StoreResource(url=url), "embedder": EmbedderResource(spec="hashing")},
    )


def test_prefetch_asset_fills_the_cache_and_a_rerun_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    now = utcnow()
    with memvault.open(url) as store:
        fill(store, tmp_path)
        for hours in (30, 20, 3):
            memvault.recall(store, "status of Quill", now=now - dt.timedelta(hours=hours))
    first = _materialize(url)
    assert first.success
    meta = asset_metadata(first, "prefetch_cache")
    assert meta["from_recent_recalls"] == 1 and meta["entries_written"] == meta["predictions"]
    assert meta["entries_unchanged"] == 0
    second = _materialize(url)
    again = asset_metadata(second, "prefetch_cache")
    assert (again["entries_written"], again["entries_refreshed"]) == (0, 0)
    assert again["entries_unchanged"] == meta["predictions"]
    with memvault.open(url) as store:
        audit = store.fetch("SELECT count(*) FROM audit_log WHERE phase = 'prefetch'")[0][0]
        assert audit == meta["predictions"]
        served = memvault.recall(store, "where are we with Quill")
        assert served.served_from_prefetch
    third = asset_metadata(_materialize(url), "prefetch_cache")
    assert third["recall_hit_rate_24h"] == pytest.approx(1 / 3, abs=1e-3)  # 20 h, 3 h, served
