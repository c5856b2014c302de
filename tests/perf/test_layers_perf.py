"""Benchmark of the preference and skill layers on the ≥100k-block store.

Run: ``.venv/bin/pytest tests/perf -m perf -s -k layers``. On a copy of the cached
benchmark store, with 20,000 preferences added (10 categories × 2,000 topics, last
evidence spread over half a year), prints:

* the wall time of ``decay_attitudes`` (first pass: every preference written, audited)
  and of a second pass at the same time (writes nothing), and their ratio to a plain read
  of the table into polars, measured in the same run;
* the same for ``decay_skills`` over every skill use of the history;
* the latency of one ``upsert`` (reinforcement) on that store.

Asserted: the second passes write nothing and cost at most 10 plain reads.
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
from memvault.layers import attitudes, skills
from memvault.records import ATTITUDE_CATEGORIES
from tests.perf.dream_data import build_scaled_store

SESSIONS, SEED, HOLDOUT = 10_100, 11, 100
TOPICS = 2_000
NOW = dt.datetime(2027, 1, 1)


def _seconds(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def _many_preferences(store: memvault.Store) -> int:
    rng = np.random.default_rng(5)
    n = len(ATTITUDE_CATEGORIES) * TOPICS
    days = rng.uniform(0, 180, n)
    frame = pl.DataFrame(
        {
            "id": [f"att_bench_{i}" for i in range(n)],
            "category": [c for c in ATTITUDE_CATEGORIES for _ in range(TOPICS)],
            "topic": [f"topic {t}" for _ in ATTITUDE_CATEGORIES for t in range(TOPICS)],
            "statement": [
                f"prefers option {t % 7} for topic {t}"
                for _ in ATTITUDE_CATEGORIES
                for t in range(TOPICS)
            ],
            "confidence": rng.uniform(0.5, 1.0, n).round(2),
            "weight": [1.0] * n,
            "evidence": ['["bench"]'] * n,
            "created_at": [NOW - dt.timedelta(days=200)] * n,
            "evidence_at": [NOW - dt.timedelta(days=float(d)) for d in days],
        }
    ).with_columns(pl.col("confidence").alias("stated_confidence"))
    with store.mutation("bench-setup", "bench") as m:
        return len(m.insert("attitudes", frame))


def _restate(store: memvault.Store, topic: int) -> attitudes.UpsertResult:
    statement = f"prefers option {topic % 7} for topic {topic}"
    return attitudes.upsert(
        store, "values", statement, 0.9, ["bench-2"], now=NOW, topic=f"topic {topic}"
    )


@pytest.mark.perf
@pytest.mark.timeout(3600)
def test_layers_decay_at_scale(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'layers.duckdb'}"
    build_scaled_store(url, sessions=SESSIONS, seed=SEED, holdout=HOLDOUT)
    with memvault.open(url) as store:
        added = _many_preferences(store)
        counts = store.counts(("blocks", "attitudes", "skills"))
        uses = store.fetch("SELECT count(*) FROM skill_uses")[0][0]
        print(f"\nstore: {counts}, skill_uses {uses} (added {added} preferences)")

        base_att, _ = _seconds(lambda: store.read_table("attitudes"))
        run = store.begin_run("attitude_decay")
        first, report = _seconds(lambda: attitudes.decay_attitudes(store, NOW, run))
        again, rerun = _seconds(lambda: attitudes.decay_attitudes(store, NOW, run))
        print(
            f"attitude_decay: read {base_att:.3f}s; first pass {first:.3f}s "
            f"({report.decayed} written, {report.binding} binding, {report.not_binding} not; "
            f"{first / base_att:.1f}× the read); same time again {again:.3f}s "
            f"({rerun.decayed} written, {again / base_att:.1f}× the read)"
        )
        assert report.decayed >= added and rerun.decayed == 0
        assert again / base_att <= 10

        base_sk, _ = _seconds(lambda: store.read_table("skill_uses"))
        first_sk, sk = _seconds(lambda: skills.decay_skills(store, NOW, run, 90.0))
        again_sk, sk2 = _seconds(lambda: skills.decay_skills(store, NOW, run, 90.0))
        print(
            f"skill_levels: read {base_sk:.3f}s; first pass {first_sk:.3f}s ({sk.written} "
            f"written, down {len(sk.down)}, up {len(sk.up)}, per level {sk.per_level}; "
            f"{first_sk / base_sk:.1f}× the read); same time again {again_sk:.3f}s "
            f"({sk2.written} written, {again_sk / base_sk:.1f}× the read)"
        )
        assert sk2.written == 0 and again_sk / base_sk <= 10

        latencies = []
        for t in range(1_800, 1_810):
            took, result = _seconds(lambda t=t: _restate(store, t))
            assert result.status == "reinforced"
            latencies.append(took)
        print(f"upsert (reinforcement): median {1000 * float(np.median(latencies)):.1f} ms")
