"""Benchmark: how long reverting a large failed dream takes, on each backend.

A real first dream runs on a demo store up to its checks (its changes: edges, supersedes,
merges, insights, discoveries, communities, centrality); it is then ended as failed and
reverted, and the store must equal the state before the dream. Run: ``.venv/bin/pytest tests/perf -m perf -s -k revert``; the size is
``MEMVAULT_REVERT_SESSIONS`` (default 1,500 sessions).
"""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest

import memvault
from memvault.dream.atomic import fail_dream
from memvault.store.tables import AUDITED_TABLES
from tests.dagster.dream_support import DREAM_ASSETS, DREAM_CHECKS, resources
from tests.helpers import table_dump
from tests.perf.dream_data import build_scaled_store
from tests.perf.test_scale import _setting  # the shell's setting (conftest drops MEMVAULT_*)

SESSIONS = int(_setting("MEMVAULT_REVERT_SESSIONS") or 1_500)
STATE_TABLES = (*AUDITED_TABLES, "communities", "centrality")


@pytest.mark.perf
@pytest.mark.timeout(3600)
def test_reverting_a_large_failed_dream(store_url: str, tmp_path: Path) -> None:
    build_scaled_store(store_url, sessions=SESSIONS, seed=11)
    with memvault.open(store_url) as store:
        before = {t: table_dump(store, t) for t in STATE_TABLES}
    started = time.perf_counter()
    # Every stage and check but the last (prune ends the dream as succeeded): the dream is
    # still running, with every write of a dream whose checks are about to fail.
    result = dg.materialize(
        [*DREAM_ASSETS, *DREAM_CHECKS],
        selection=dg.AssetSelection.groups("dream") - dg.AssetSelection.assets("dream_prune"),
        resources=resources(store_url),
        raise_on_error=False,
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
    dream_s = time.perf_counter() - started
    assert result.success
    with memvault.open(store_url) as store:
        [(run_id,)] = store.fetch("SELECT id FROM runs WHERE kind = 'dream'")
        changes = store.fetch("SELECT count(*) FROM audit_log WHERE run_id = :r", {"r": run_id})
        started = time.perf_counter()
        report = fail_dream(store, run_id, "benchmark: ended as failed")
        revert_s = time.perf_counter() - started
        assert report is not None
        assert {t: table_dump(store, t) for t in STATE_TABLES} == before
    print(
        f"\n{store_url.split(':')[0]}: dream of {changes[0][0]:,} audited changes "
        f"({dict(report.restored)}; derived rows {report.derived}) in {dream_s:.1f} s; "
        f"reverted in {revert_s:.2f} s"
    )
