"""GD6: the journal's topics come from the items when the store cannot name them, and an
entry stays short however much a run did."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from memvault.gardener.adapter import (
    Capability,
    ItemQuery,
    MemoryItem,
    ToolInfo,
    UnsupportedMixin,
    apply_item_query,
)
from memvault.gardener.budget import Budget
from memvault.gardener.capabilities import Survey
from memvault.gardener.phases.base import PhaseContext
from memvault.gardener.phases.journal import MAX_CHARS, item_topics, journal_text
from memvault.gardener.state import GardenConfig, RunState, StoreRun
from memvault.judge import HeuristicJudge

NOW = dt.datetime(2026, 11, 30, 3, 0)


def _item(i: int, text: str, tags: tuple[str, ...] = ()) -> MemoryItem:
    return MemoryItem(id=f"n{i}", text=text, tags=tags, created_at=NOW, updated_at=NOW)


def test_topics_are_the_items_tags_else_the_words_they_share() -> None:
    tagged = [
        _item(1, "x", ("travel", "merged-into:n9")),
        _item(2, "y", ("travel", "lisbon")),
        _item(3, "z", ("garden-summary", "split-from:n1")),
    ]
    assert item_topics(tagged) == ["travel", "lisbon"]  # the gardener's own tags say nothing
    plain = [
        _item(1, "The ferry to Lisbon leaves at 9."),
        _item(2, "Lisbon hotels near the ferry are full in May."),
        _item(3, "Book the ferry early."),
    ]
    assert item_topics(plain) == ["ferry", "lisbon"]  # shared, no function words, no numbers


class Notes(UnsupportedMixin):
    """A store of notes that can list and count, and say nothing about topics."""

    name = "notes:unit"

    def __init__(self, items: list[MemoryItem]) -> None:
        self.items = items

    def tools(self) -> list[ToolInfo]:
        return []

    def list_items(self, query: ItemQuery) -> list[MemoryItem]:
        return apply_item_query(self.items, query)

    def get_items(self, ids: Sequence[str]) -> list[MemoryItem]:
        return [i for i in self.items if i.id in ids]

    def stats(self) -> dict[str, int]:
        return {"items_active": len(self.items)}


def _context(store: Notes, srun: StoreRun) -> PhaseContext:
    found = Survey(
        store.name,
        [],
        mapping={
            Capability.SEARCH: ToolInfo("list"),
            Capability.STATS: ToolInfo("count"),
        },
    )
    run = RunState("garden-unit", "autonomous", NOW.isoformat(), {}, {})
    run.stores[store.name] = srun
    ledger: Any = None  # the journal's text reads no ledger
    return PhaseContext(
        "journal", store, found, ledger, HeuristicJudge(), GardenConfig(functional_predicates=(), stable_predicates=()), Budget(25, 50), run, srun, NOW
    )  # fmt: skip


def test_an_entry_stays_short_however_much_the_run_did() -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    items = [
        _item(n, f"{words[n % 6]} " * 120, (f"{'very-long-topic-name-' * 4}{n % 7}",))
        for n in range(300)
    ]
    srun = StoreRun("notes:unit", window_start=(NOW - dt.timedelta(days=1)).isoformat())
    srun.first_run = False
    srun.window_end = NOW.isoformat()
    for n, item in enumerate(items):
        for action in ("merge-update", "merge-archive", "decay", "split-trim", "reconnect"):
            srun.learn("changed", action, item.id)
        srun.learn("changed", "invalidate", f"t{n}", f"Subject {n} lives_in")
        srun.learn("proposed", "merge", item.id)
    srun.crowd([(items[n].id, items[n + 1].id) for n in range(50)])
    srun.stop = {"phase": "split", "cursor": {}, "reason": "error: " + "x" * 500}
    text = journal_text(_context(Notes(items), srun))
    assert len(text) <= MAX_CHARS
    body, state = text.split("\n")
    assert body.startswith("Garden run garden-unit on notes:unit:")
    # Whole sentences are left out, the least telling first; where it stopped is kept.
    assert body.endswith(".") and "stopped in split bloated memories" in body
    assert "Merged 300 duplicates into 300 items (about very-long-topic-name" in body
    assert "The store holds" not in body
    assert state.startswith("Garden state: dedup pressure") and "budget 0/25 mutations" in state
