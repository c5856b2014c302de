"""Benchmark of tiering on a ≥100k-block store: wall time, LLM calls, and the re-run.

Run: ``pytest tests/perf -m perf -s -k tiering``. Works on a copy of the cached benchmark
store. Prints:

* the usage weights and the plan (no writes) against a plain read of what they read (the
  blocks' tier columns, the recall log and the boosts) measured in the same run, on the
  store's own recall log and again with it grown 20× (≈250k recalls of 5 blocks each in
  the last 90 days, a heavy reader's log);
* the first tiering pass (target ≤ 30 s), which on this store demotes most blocks, with a
  scripted judge that answers every digest request (counted): LLM calls per 1,000 demotions
  that needed a digest; and, as its baseline, an audited write of the same rows (no
  digest) in transactions of the same size;
* the immediate re-run: 0 calls, 0 writes; and the pass a day later (what the daily
  schedule does once the store is tiered).
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import memvault
from memvault.judge import ScriptedJudge
from memvault.lifecycle.tiering import plan_tiering, run_tiering
from memvault.lifecycle.weights import block_weights, weights_summary
from tests.perf.dream_data import build_scaled_store

SESSIONS, SEED, HOLDOUT = 10_100, 11, 100
#: The benchmark's recall log is copied this many times over (a heavy reader's log).
RECALL_FACTOR = 20


def _grow_recall_log(store: Any, now: dt.datetime, factor: int) -> int:
    """Copies of the recall log, each recall returning five random active blocks at a random
    time in the last 90 days (benchmark set-up on a copy: written directly, not audited)."""
    rng = np.random.default_rng(5)
    blocks = np.array(store.fetch_df("SELECT id FROM blocks WHERE status = 'active'")["id"])
    base = store.fetch_df("SELECT query, intent_label, verdict FROM recall_log")
    n = base.height * factor
    picks = rng.choice(blocks, size=(n, 5))
    seconds = rng.integers(0, 90 * 86_400, size=n)
    frame = pl.concat([base] * factor).with_columns(
        id=pl.Series([f"perf-recall-{i}" for i in range(n)]),
        entities=pl.lit("[]"),
        result_ids=pl.Series(['["' + '","'.join(row) + '"]' for row in picks.tolist()]),
        scores=pl.lit("[0.9,0.8,0.7,0.6,0.5]"),
        created_at=pl.Series([now - dt.timedelta(seconds=int(x)) for x in seconds]),
    )
    store.backend.insert_df("recall_log", store.conform("recall_log", frame))
    return int(store.fetch("SELECT count(*) FROM recall_log")[0][0])


def _seconds(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def _judge() -> ScriptedJudge:
    return ScriptedJudge(
        {
            "tier_digest": lambda request: {
                "digests": [
                    {
                        "id": b.id,
                        "summary": b.text[:300],
                        "headline": b.text[:80].replace("\n", " "),
                    }
                    for b in request.blocks
                ]
            }
        }
    )


def _read(store: Any) -> None:
    """A plain read of what the weights and the plan read."""
    store.fetch_df(
        "SELECT id, tier, pinned, digest_kind, created_at, last_accessed_at "
        "FROM blocks WHERE status = 'active'"
    )
    store.fetch_df("SELECT created_at, verdict, result_ids FROM recall_log")
    store.fetch_df("SELECT target_id, value FROM feedback WHERE kind IN ('boost', 'thumbs')")


def _weights_and_plan(store: Any, now: dt.datetime, label: str) -> None:
    read_s, _ = _seconds(lambda: _read(store))
    weights_s, weights = _seconds(lambda: block_weights(store, now))
    plan_s, plan = _seconds(lambda: plan_tiering(store, now))
    summary = weights_summary(weights)
    print(
        f"{label}: baseline read {read_s:.2f} s; usage weights {weights_s:.2f} s "
        f"({weights_s / read_s:.1f}× the read); plan {plan_s:.2f} s "
        f"({plan_s / read_s:.1f}× the read); reinforced {summary['reinforced']}, "
        f"multiplier p90 {summary['multiplier_p90']}, max {summary['multiplier_max']}; "
        f"plan {plan.tiers('tier')} → {plan.tiers('target')}, kept by use {plan.kept_by_use}"
    )
    assert weights_s <= 30 * read_s + 1.0


@pytest.mark.perf
@pytest.mark.timeout(3600)
def test_tiering_pass_wall_time_calls_and_rerun(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'tiering.duckdb'}"
    build_scaled_store(url, sessions=SESSIONS, seed=SEED, holdout=HOLDOUT)
    with memvault.open(url) as store:
        counts = store.counts(("blocks", "recall_log", "feedback"))
        print(f"\nstore: {counts}")
        assert counts["blocks"] >= 100_000
        # The cached history ends on a fixed day: tier as of the day after it.
        now = store.fetch("SELECT max(created_at) FROM blocks")[0][0] + dt.timedelta(days=1)
        _weights_and_plan(store, now, "weights and plan")

        judge = _judge()
        pass_s, result = _seconds(lambda: run_tiering(store, judge, now=now))
        s = result.summary()
        digested = result.digest_stats.asked
        per_1000 = 1000 * judge.stats.calls / max(1, digested)
        print(
            f"first pass: {pass_s:.1f} s (target ≤ 30 s); {s['demotions']} demotions, "
            f"{s['promotions']} promotions, {s['written']} rows written; digests {s['digests']}; "
            f"{judge.stats.calls} LLM calls for {digested} blocks sent = {per_1000:.0f} calls "
            f"per 1,000 digested demotions "
            f"({1000 * judge.stats.calls / max(1, s['demotions']):.0f} per 1,000 demotions)"
        )
        again_judge = _judge()
        rerun_s, again = _seconds(lambda: run_tiering(store, again_judge, now=now))
        print(
            f"re-run: {rerun_s:.1f} s, {again.plan.changes.height} changes, {again.written} "
            f"writes, {again_judge.stats.calls} LLM calls"
        )
        day_judge = _judge()
        day_s, day = _seconds(lambda: run_tiering(store, day_judge, now=now + dt.timedelta(days=1)))
        print(
            f"the next day's pass: {day_s:.1f} s, {day.summary()['by_edge']}, "
            f"{day_judge.stats.calls} LLM calls"
        )
        # The least any audited pass over these rows costs: the same rows' tiered_at set
        # through the audited write path in transactions of the same size, no digest.
        ids = result.plan.changes["id"].to_list()

        def audited_write() -> None:
            for start in range(0, len(ids), 20_000):
                chunk = ids[start : start + 20_000]
                frame = pl.DataFrame({"id": chunk, "tiered_at": [now] * len(chunk)})
                with store.mutation("tiering-perf-baseline", "baseline") as m:
                    m.update_many("blocks", frame, action="baseline")

        write_s, _ = _seconds(audited_write)
        print(
            f"baseline audited write of the same {len(ids)} rows: {write_s:.1f} s; the first "
            f"pass = {pass_s / write_s:.1f}× that"
        )
        recalls = _grow_recall_log(store, now, RECALL_FACTOR)
        _weights_and_plan(store, now, f"with {recalls} recalls of 5 blocks each")
    assert again_judge.stats.calls == 0 and again.written == 0 and again.run_id is None
    assert per_1000 <= 1000 / 8 + 1
    assert pass_s <= 8 * write_s, "digests should cost no more than a few audited writes"
    assert s["written"] == s["demotions"] + s["promotions"]
