"""A small store for the read-path tests: an owner, a project, a tool, memories about them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from memvault.demo.generator import write_jsonl
from memvault.ingest import ingest_file
from memvault.records import (
    BlockRecord,
    EntityRecord,
    MentionRecord,
    Record,
    SessionRecord,
    TripleRecord,
)
from memvault.store import Store

T0 = dt.datetime(2026, 11, 2, 9, 0)

BLOCKS: dict[str, tuple[str, list[str]]] = {
    "b_quill_status": ("Quill status: paused until the payments migration lands.", ["ent_quill"]),
    "b_quill_deps": ("Quill depends on the billing service and on Redis.", ["ent_quill"]),
    "b_pytest": ("We use pytest with the xdist plugin to run the suite in parallel.", ["ent_pytest"]),
    "b_ada_work": ("Ada works at Acme Software since March as a staff engineer.", ["ent_ada"]),
    "b_lunch": ("Lunch was ramen near the office; the queue was long.", []),
    "b_archived": ("Quill status: shipped to production last week.", ["ent_quill"]),
}  # fmt: skip


def records() -> list[Record]:
    out: list[Record] = [
        SessionRecord(id="s1", started_at=T0 - dt.timedelta(days=1), title="planning"),
        EntityRecord(id="ent_ada", name="Ada Lovelace", entity_type="person"),
        EntityRecord(id="ent_quill", name="Quill", entity_type="project"),
        EntityRecord(id="ent_pytest", name="pytest", entity_type="tool"),
    ]
    for k, (bid, (text, ents)) in enumerate(BLOCKS.items()):
        at = T0 - dt.timedelta(days=1) + dt.timedelta(minutes=k)
        out.append(BlockRecord(id=bid, session_id="s1", text=text, created_at=at))
        out += [
            MentionRecord(entity=e, block_id=bid, session_id="s1", mentioned_at=at) for e in ents
        ]
    for k in range(3):  # the owner is the person mentioned most
        out.append(MentionRecord(entity="ent_ada", session_id="s1", mentioned_at=T0 - dt.timedelta(hours=k + 2)))  # fmt: skip
    out += [
        TripleRecord(subject="ent_quill", predicate="has_status", object="paused",
                     created_at=T0 - dt.timedelta(days=1), source_session="s1"),
        TripleRecord(subject="ent_ada", predicate="works_at", object="Acme Software",
                     valid_at=T0 - dt.timedelta(days=200), created_at=T0 - dt.timedelta(days=1)),
        TripleRecord(subject="ent_ada", predicate="uses_tool", object="pytest",
                     valid_at=T0 - dt.timedelta(days=2), created_at=T0 - dt.timedelta(days=1)),
    ]  # fmt: skip
    return out


def fill(store: Store, tmp_path: Path) -> None:
    """The small store, with one archived block and one cold block (a digest stands in)."""
    path = tmp_path / "recall-history.jsonl"
    write_jsonl(records(), path)
    ingest_file(store, path)
    with store.mutation("test-setup", "setup") as m:
        m.update("blocks", "b_archived", {"status": "archived"}, action="archive")
        m.update_many(
            "blocks",
            pl.DataFrame(
                [
                    {
                        "id": "b_ada_work",
                        "tier": "cold",
                        "text": "Digest: Ada, staff engineer at Acme Software since March.",
                        "summary": "Digest: Ada, staff engineer at Acme Software since March.",
                        "digest_kind": "extractive",
                    }
                ]
            ),
            action="demote",
        )
