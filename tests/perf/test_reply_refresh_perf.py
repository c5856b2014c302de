"""What linking new turns to the questions they answer costs a long-lived index.

Run: ``.venv/bin/pytest tests/perf/test_reply_refresh_perf.py -m perf -s``
(``REPLY_BENCH_SESSIONS`` sets the size, default 2,000 conversations of 10 turns). A store of
question-and-answer conversations; a serving process's index, then a new conversation of 10
turns written ``ROUNDS`` times. Prints, per round, the refresh (which re-reads the reply links
of the sessions that changed) against a full rebuild of the same store measured in the same
run, and the share of the refresh spent on the links. The refresh must stay well under the
rebuild and find the same links.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import memvault
from memvault.recall.index import SearchIndex
from memvault.store import Store
from tests.old_history import turn

SESSIONS = int(os.environ.get("REPLY_BENCH_SESSIONS", "2000"))
TURNS, ROUNDS = 10, 5
START = dt.datetime(2023, 1, 1)
MODEL = "hashing-256"


def _conversation(s: int, at: dt.datetime) -> list[dict]:
    rows = []
    for t in range(TURNS):
        text = turn((s * TURNS + t) % 60)
        if t % 2 == 0:
            text = text.rstrip(".") + f", and what about session {s}?"
        rows.append({
            "id": f"s{s:05d}-t{t}", "session_id": f"s{s:05d}", "kind": "user_turn", "role": "user",
            "text": text, "importance": 0.5, "pinned": False, "tier": "hot", "status": "active",
            "tags": "[]", "created_at": at + dt.timedelta(minutes=t),
            "updated_at": at + dt.timedelta(minutes=t),
        })  # fmt: skip
    return rows


def _write(store: Store, sessions: range, tag: str) -> None:
    rows = [r for s in sessions for r in _conversation(s, START + dt.timedelta(hours=s))]
    with store.mutation(f"bench-{tag}", "seed") as m:
        m.insert("blocks", pl.DataFrame(rows))


def _links(index: SearchIndex) -> dict[str, str]:
    """Reply → question over the live blocks (as tests/store/test_recall_reply_refresh.py)."""
    segs = [index.main, index.delta]
    ids = [b for seg in segs for b in seg.ids]
    live = np.concatenate([seg.live for seg in segs])
    asked = np.concatenate([seg.asked if seg.asked is not None else np.full(seg.size, -1) for seg in segs])  # fmt: skip
    return {ids[i]: ids[q] for i, q in enumerate(asked) if live[i] and q >= 0}


@pytest.mark.perf
def test_new_turns_are_linked_for_a_fraction_of_a_rebuild(tmp_path: Path) -> None:
    with memvault.open(f"duckdb://{tmp_path / 'bench.duckdb'}") as store:
        _write(store, range(SESSIONS), "history")
        index = SearchIndex.build(store, MODEL)
        print(f"\n{SESSIONS * TURNS:,} blocks, index built in {index.built_seconds * 1000:.0f} ms")
        refresh_ms, rebuild_ms, relink_ms = [], [], []
        original = SearchIndex._relink

        def timed(self: SearchIndex, store: Store, touched: set[str]) -> None:
            started = time.perf_counter()
            original(self, store, touched)
            relink_ms.append((time.perf_counter() - started) * 1000)

        SearchIndex._relink = timed  # type: ignore[method-assign]
        try:
            for r in range(ROUNDS):
                _write(store, range(SESSIONS + r, SESSIONS + r + 1), f"new-{r}")
                started = time.perf_counter()
                index = index.refresh(store)
                refresh_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                fresh = SearchIndex.build(store, MODEL)
                rebuild_ms.append((time.perf_counter() - started) * 1000)
                assert index.rebuilds == 0 and _links(index) == _links(fresh)
        finally:
            SearchIndex._relink = original  # type: ignore[method-assign]
        refresh, rebuild, relink = (
            float(np.median(v)) for v in (refresh_ms, rebuild_ms, relink_ms)
        )
        print(
            f"refresh after a new 10-turn conversation: p50 {refresh:.1f} ms "
            f"(reply links {relink:.1f} ms) vs full rebuild p50 {rebuild:.0f} ms: "
            f"{refresh / rebuild:.3f} of it; links {len(_links(index)):,}"
        )
        assert refresh < 0.5 * rebuild
