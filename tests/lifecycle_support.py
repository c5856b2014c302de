"""Shared by the tiering tests: blocks of a chosen age, recalls and boosts, written audited."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence

import polars as pl

from memvault.store import Store

LONG_TEXT = (
    "Sam from the platform team walked through the migration of the billing service to the new "
    "queue. The old cron jobs stay until the end of the quarter. Retries now back off "
    "exponentially, capped at ten minutes, and every failed invoice lands in a dead-letter "
    "table that finance reads on Mondays. The rollout goes region by region, starting with the "
    "smallest, and the on-call rotation gets a runbook before the first switch. Open question: "
    "whether the reconciliation report moves to the warehouse or stays on the replica."
)


def add_blocks(
    store: Store,
    now: dt.datetime,
    ages: dict[str, float],
    *,
    text: str = LONG_TEXT,
    pinned: Sequence[str] = (),
    kind: str = "memory",
) -> None:
    """Blocks named by id, each ``ages[id]`` days old (created and last edited then)."""
    rows = [
        {
            "id": block_id,
            "kind": kind,
            "text": text,
            "importance": 0.5,
            "pinned": block_id in pinned,
            "tier": "hot",
            "status": "active",
            "tags": "[]",
            "created_at": now - dt.timedelta(days=age),
            "updated_at": now - dt.timedelta(days=age),
        }
        for block_id, age in ages.items()
    ]
    with store.mutation("seed-blocks", "seed") as m:
        m.insert("blocks", pl.DataFrame(rows))


def add_recalls(
    store: Store,
    now: dt.datetime,
    block_id: str,
    days_ago: Sequence[float],
    verdict: str | None = None,
) -> None:
    """One recall per entry of ``days_ago`` that returned ``block_id`` (the recall log only)."""
    start = store.fetch("SELECT count(*) FROM recall_log")[0][0]
    rows = [
        {
            "id": f"recall-{start + i}",
            "query": "what did Sam say about the billing migration?",
            "intent_label": "project_status",
            "entities": "[]",
            "result_ids": json.dumps([block_id]),
            "scores": "[0.9]",
            "verdict": verdict,
            "signature": "project_status|",
            "created_at": now - dt.timedelta(days=days),
        }
        for i, days in enumerate(days_ago)
    ]
    with store.mutation("seed-recalls", "seed") as m:
        m.insert("recall_log", pl.DataFrame(rows, schema_overrides={"verdict": pl.Utf8}))


def add_boost(store: Store, now: dt.datetime, block_id: str, value: float, days_ago: float) -> None:
    n = store.fetch("SELECT count(*) FROM feedback")[0][0]
    row = {
        "id": f"feedback-{n}",
        "target_id": block_id,
        "kind": "boost",
        "value": value,
        "created_at": now - dt.timedelta(days=days_ago),
    }
    with store.mutation("seed-feedback", "seed") as m:
        m.insert("feedback", pl.DataFrame([row]))


def block(store: Store, block_id: str) -> dict:
    row = store.get_row("blocks", block_id)
    assert row is not None
    return row
