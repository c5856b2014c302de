"""GD-S5 and GD5/GD6 in the ceremony: a store that can do little is tended as far as it can,
every missing capability is a listed skip, and nothing is faked."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Sequence

from memvault.gardener.adapter import (
    Change,
    ItemQuery,
    MemoryItem,
    NewItem,
    ToolInfo,
    UnsupportedMixin,
    WriteContext,
    apply_item_query,
)
from memvault.gardener.ledger import Ledger
from memvault.gardener.report import parse_report
from memvault.gardener.run import run_garden
from memvault.gardener.state import GardenConfig
from memvault.judge import HeuristicJudge
from memvault.store import Store
from tests.garden_support import garden


class NotesStore(UnsupportedMixin):
    """A list of notes: search, add and count, nothing else (no update, no delete)."""

    name = "notes:test"

    def __init__(self) -> None:
        now = dt.datetime(2026, 11, 1)
        self.items = [
            MemoryItem(id=f"n{i}", text=f"Note number {i}.", created_at=now, updated_at=now)
            for i in range(5)
        ]
        self.ids = itertools.count(100)

    def tools(self) -> list[ToolInfo]:
        return [
            ToolInfo("find_notes", "Find notes by text."),
            ToolInfo("add_note", "Add a note."),
            ToolInfo("note_count", "Count the notes."),
            ToolInfo("remove_note", "Delete a note."),
        ]

    def search(self, text: str, limit: int = 10) -> list[MemoryItem]:
        return [i for i in self.items if text.lower() in i.text.lower()][:limit]

    def list_items(self, query: ItemQuery) -> list[MemoryItem]:
        return apply_item_query(self.items, query)

    def get_items(self, ids: Sequence[str]) -> list[MemoryItem]:
        return [i for i in self.items if i.id in ids]

    def create_item(self, ctx: WriteContext, item: NewItem) -> Change:
        new = MemoryItem(id=f"n{next(self.ids)}", text=item.text, tags=item.tags)
        self.items.append(new)
        return Change(ctx.action or "create", "note", new.id, None, {"text": new.text})

    def stats(self) -> dict[str, int]:
        return {"notes": len(self.items)}


def test_a_poor_store_is_tended_as_far_as_it_can(duck_store: Store) -> None:
    notes = NotesStore()
    result = run_garden(Ledger(duck_store), [notes], HeuristicJudge(), GardenConfig())
    assert result.succeeded, result.outcome.summary
    report = parse_report(result.report)
    skipped = dict(report.skipped)
    assert "no duplicate_check capability" in skipped["merge duplicates"]
    assert "mutate" in skipped["decay unused memories"]
    assert "mutate" in skipped["split bloated memories"]
    assert "kg_search" in skipped["invalidate stale facts"]
    assert "structure" in skipped["reconnect orphans"]
    assert any("no backup capability" in why for why in skipped.values())
    assert report.stores[0].stats_before == {"notes": 5}
    assert report.stores[0].stats_after == {"notes": 6}
    # GD6 without a journal: one memory item tagged garden-summary.
    (summary,) = [i for i in notes.items if "garden-summary" in i.tags]
    assert summary.text.splitlines()[-1].startswith("Garden state:")
    # The external change is audited in the ledger, and the report is kept there.
    rows = duck_store.fetch(
        "SELECT target_table, target_id FROM audit_log WHERE run_id = :r AND action = 'journal'",
        {"r": result.run_id},
    )
    assert rows == [("notes:test#note", summary.id)]
    stored = duck_store.get_row("artifacts", result.state.report_id or "")
    assert stored is not None and stored["content"] == result.report
    # A delete tool serves only `delete`, for lossless merges in autonomous mode: unused here.
    assert result.state.stores["notes:test"].survey["mapping"]["delete"] == "remove_note"
    # A quiet run after it adds no second summary: a memory saying nothing happened is noise.
    again = run_garden(Ledger(duck_store), [notes], HeuristicJudge(), GardenConfig())
    assert again.succeeded, again.outcome.summary
    assert [i.id for i in notes.items if "garden-summary" in i.tags] == [summary.id]
    assert any("no garden-summary item" in n for n in again.state.notes)


def test_a_child_of_a_merged_away_item_is_reconnected(duck_store: Store) -> None:
    import polars as pl

    from memvault.normalize import utcnow

    now = utcnow()

    def block(i: str, **kw: object) -> dict:
        return {
            "id": i, "session_id": None, "kind": "memory", "text": f"Memory {i} about gardens.",
            "importance": 0.5, "pinned": False, "tier": "hot", "status": "active",
            "parent_id": None, "tags": "[]", "created_at": now, "updated_at": now,
            "access_count": 0, "feedback_score": 0.0, **kw,
        }  # fmt: skip

    with duck_store.mutation("agent", "seed") as m:
        m.insert(
            "blocks",
            pl.DataFrame(
                [
                    block("b-survivor"),
                    block("b-gone", status="archived", parent_id="b-survivor",
                          tags=json.dumps(["merged-into:b-survivor"])),
                    block("b-child", parent_id="b-gone"),
                ]
            ),
        )  # fmt: skip
    result = garden(duck_store, mode="tend-and-propose")
    assert result.succeeded
    assert parse_report(result.report).actions["reconnects"] == 1
    assert duck_store.get_row("blocks", "b-child")["parent_id"] == "b-survivor"
    # Reconnected once: a second run does not find it again.
    again = garden(duck_store)
    assert parse_report(again.report).actions["reconnects"] == 0
