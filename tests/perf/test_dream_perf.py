"""Benchmark of the whole dream on a ≥100k-block store: full run, +1% sessions, immediate re-run.

Run: ``.venv/bin/pytest tests/perf -m perf -s -k dream``. Prints wall times,
the incremental/full ratio, peak RSS, and LLM calls per 100 new triples with a
scripted judge (and on an immediate re-run, which must be 0). The graph part's
comparison against networkx and per-pair loops is ``test_graph_perf.py``.
"""

from __future__ import annotations

import resource
import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

import memvault
from memvault.ingest import ingest_file
from memvault.judge import ScriptedJudge
from resources import JudgeResource
from tests.dagster.dream_support import run_dream
from tests.helpers import asset_metadata as metadata
from tests.perf.dream_data import build_scaled_store, holdout_path

SESSIONS, SEED, HOLDOUT = 10_100, 11, 100  # 1% of the history arrives after the first dream


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(url: str, **overrides) -> tuple[float, dg.ExecuteInProcessResult]:
    started = time.perf_counter()
    result = run_dream(url, **overrides)
    assert result.success, "the dream failed"
    return time.perf_counter() - started, result


def _stage_seconds(result: dg.ExecuteInProcessResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for event in result.all_events:
        if event.is_step_success:
            out[event.step_key] = round(event.event_specific_data.duration_ms / 1000, 2)
    return out


def _applied(result: dg.ExecuteInProcessResult) -> dict[str, int]:
    """What consolidate wrote: its actions by kind and its rows."""
    figures = metadata(result, "dream_consolidate")
    return {k: figures[k] for k in ("merges", "supersedes", "reopens", "coexist", "rows_written")}


@pytest.mark.perf
@pytest.mark.timeout(7200)  # a full dream on a busy 2-core machine can take several minutes
def test_dream_full_incremental_and_rerun(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'dream.duckdb'}"
    build_scaled_store(url, sessions=SESSIONS, seed=SEED, holdout=HOLDOUT)
    # Resolved now: the cache key hashes source files, which may change while the dream runs.
    holdout = holdout_path(SESSIONS, SEED, HOLDOUT)
    with memvault.open(url) as store:
        counts = store.counts(("blocks", "entities", "triples", "mentions", "sessions"))
    print(f"\nstore: {counts}")
    shutil.copy(tmp_path / "dream.duckdb", tmp_path / "scripted.duckdb")

    full_s, full = _timed(url)
    print(f"full dream: {full_s:.1f} s  stages {_stage_seconds(full)}  peak RSS {_rss_mb():.0f} MB")
    print(f"  consolidate applied {_applied(full)}")

    with memvault.open(url) as store:
        ingest_file(store, holdout)
        grown = store.counts(("sessions", "triples"))
    inc_s, inc = _timed(url)
    print(
        f"incremental dream (+{HOLDOUT} sessions → {grown}): {inc_s:.1f} s  "
        f"stages {_stage_seconds(inc)}  = {inc_s / full_s:.1%} of the full run (target ≤ 20%)  "
        f"peak RSS {_rss_mb():.0f} MB"
    )
    rerun_s, rerun = _timed(url)
    print(f"immediate re-run: {rerun_s:.1f} s, consolidate {_applied(rerun)}")
    rss = _rss_mb()
    print(f"peak RSS {rss:.0f} MB (target ≤ 4096)")

    # LLM calls with a scripted judge: every ambiguous pair is one call, a re-run none.
    scripted_url = f"duckdb://{tmp_path / 'scripted.duckdb'}"
    # Only conflict questions count: reflect asks the judge once per dream by design.
    conflict_calls = [0]

    def resolve(request: object) -> dict:
        conflict_calls[0] += 1
        return {
            "verdict": "COEXIST",
            "confidence": 0.9,
            "reason": "scripted",
            "newer": None,
            "merged_object": None,
        }

    judge = ScriptedJudge(
        {"resolve_conflict": resolve, "reflect": lambda r: {"insights": [], "gaps": []}}
    )

    class Scripted(JudgeResource):
        def build(self, cache=None):  # type: ignore[override]
            return judge

    with memvault.open(scripted_url) as store:
        triples_before = store.counts(("triples",))["triples"]
    _timed(scripted_url, llm=Scripted())
    with memvault.open(scripted_url) as store:
        ingest_file(store, holdout)
        new_triples = store.counts(("triples",))["triples"] - triples_before
    calls_before = conflict_calls[0]
    _timed(scripted_url, llm=Scripted())
    incremental_calls = conflict_calls[0] - calls_before
    calls_before = conflict_calls[0]
    _timed(scripted_url, llm=Scripted())
    rerun_calls = conflict_calls[0] - calls_before
    print(
        f"scripted judge: {incremental_calls} LLM calls for {new_triples} new triples "
        f"= {100 * incremental_calls / max(new_triples, 1):.2f} per 100 new triples; "
        f"immediate re-run: {rerun_calls} calls"
    )
    assert rerun_calls == 0
    assert rss < 4096
