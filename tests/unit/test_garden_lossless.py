"""What a deletion may remove: only an exact repeat the survivor already says, in full."""

from __future__ import annotations

import datetime as dt

import pytest

from memvault.gardener.adapter import MemoryItem
from memvault.gardener.adapters.mcp_context import priority_for
from memvault.gardener.adapters.mcp_memory import record_time
from memvault.gardener.phases.dedup import lossless

TEXT = "Prefers concise answers"
KEPT = MemoryItem(id="a", text=TEXT, container="general", importance=0.9, tags=("decision",))


def repeat(**fields: object) -> MemoryItem:
    return MemoryItem(**{"id": "b", "text": TEXT, "container": "general", **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("item", "safe"),
    [
        (repeat(), True),
        (repeat(importance=0.5, tags=("decision",)), True),
        (repeat(text=TEXT + "."), False),
        (repeat(container="work"), False),
        (repeat(tags=("task",)), False),
        (repeat(importance=1.0), False),
        (repeat(pinned=True), False),
        (repeat(scores={"confidence": 0.7}), False),
    ],
)
def test_only_an_exact_repeat_in_the_same_place_is_lossless(item: MemoryItem, safe: bool) -> None:
    assert lossless(KEPT, item) is safe


def test_importance_moves_the_priority_one_step() -> None:
    assert priority_for(0.8, "high") == "normal"
    assert priority_for(0.0, "high") == "normal", "one step, however far the importance fell"
    assert priority_for(0.4, "normal") == "low"
    assert priority_for(0.05, "low") == "low"
    assert priority_for(0.6, "normal") == "high"


def test_record_times_are_naive_utc() -> None:
    assert record_time({"createdAt": "2026-11-01T10:00:00.000Z"}) == dt.datetime(2026, 11, 1, 10)
    assert record_time({"createdAt": "2026-11-01T12:00:00+02:00"}) == dt.datetime(2026, 11, 1, 10)
    assert record_time({"createdAt": "yesterday"}) is None
    assert record_time({}) is None
