"""A small store for the read-path tests: an owner, a project, a tool, memories about them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

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
from memvault_demo.generator import write_jsonl

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


# -- an employer that changed: the old one stated, later superseded, the new one stated ------

#: When Ada joined Initech, when the lexical note was written, when she joined Tyrell Systems.
JOINED_OLD = T0 - dt.timedelta(days=200)
NOTED_OLD = T0 - dt.timedelta(days=120)
JOINED_NEW = T0 - dt.timedelta(days=2)
#: Words about work that share nothing with the question but "Ada" (so only the entity counts).
FILLER = (
    "Ada reviewed the quarterly budget spreadsheet with the finance team.",
    "Ada fixed the flaky integration test in the ingest pipeline.",
    "Ada booked the train to the offsite and forwarded the agenda.",
)


def employer_before(*, noise: int = 0) -> list[Record]:
    """Ada works at Initech (the block ``b_initech`` states it, a triple linked to it), and a
    note ``b_where`` full of the question's words says so too (no triple linked to it).
    ``noise`` more blocks mention Ada without the question's words."""
    out: list[Record] = [
        SessionRecord(id="s-old", started_at=JOINED_OLD, title="first day"),
        SessionRecord(id="s-note", started_at=NOTED_OLD, title="notes"),
        EntityRecord(id="ent_ada", name="Ada Lovelace", entity_type="person"),
        EntityRecord(id="ent_initech", name="Initech", entity_type="organization"),
        EntityRecord(id="ent_tyrell", name="Tyrell Systems", entity_type="organization"),
        BlockRecord(id="b_initech", session_id="s-old", created_at=JOINED_OLD,
                    text="Ada Lovelace joined Initech as an analyst today."),
        BlockRecord(id="b_where", session_id="s-note", created_at=NOTED_OLD,
                    text="Where does Ada work? Ada works at Initech. Ada's work: where Ada "
                         "does her work is the Initech office, where the work is."),
        BlockRecord(id="b_lunch", session_id="s-note", created_at=NOTED_OLD,
                    text="Lunch was ramen near the office; the queue was long."),
        TripleRecord(id="tri_initech", subject="ent_ada", predicate="works_at", object="Initech",
                     object_id="ent_initech", valid_at=JOINED_OLD, created_at=JOINED_OLD,
                     source_session="s-old", source_block="b_initech"),
    ]  # fmt: skip
    for bid, sid, at in (("b_initech", "s-old", JOINED_OLD), ("b_where", "s-note", NOTED_OLD)):
        out += [
            MentionRecord(entity=e, block_id=bid, session_id=sid, mentioned_at=at)
            for e in ("ent_ada", "ent_initech")
        ]
    for k in range(noise):
        at = NOTED_OLD + dt.timedelta(days=1 + k % 90, minutes=k)
        bid = f"b_noise_{k:03d}"
        out += [
            BlockRecord(id=bid, session_id="s-note", created_at=at,
                        text=f"{FILLER[k % len(FILLER)]} (item {k})"),
            MentionRecord(entity="ent_ada", block_id=bid, session_id="s-note", mentioned_at=at),
        ]  # fmt: skip
    return out


def employer_after(*, linked: bool = True) -> list[Record]:
    """Ada joined Tyrell Systems: the block ``b_tyrell`` says so; with ``linked`` the new
    ``works_at`` triple names it as its source, else only its text (and mentions) state it."""
    records: list[Record] = [
        SessionRecord(id="s-new", started_at=JOINED_NEW, title="new job"),
        BlockRecord(id="b_tyrell", session_id="s-new", created_at=JOINED_NEW,
                    text="Ada Lovelace started at Tyrell Systems this week, as a staff engineer."),
        MentionRecord(entity="ent_ada", block_id="b_tyrell", session_id="s-new", mentioned_at=JOINED_NEW),
        MentionRecord(entity="ent_tyrell", block_id="b_tyrell", session_id="s-new", mentioned_at=JOINED_NEW),
        TripleRecord(id="tri_tyrell", subject="ent_ada", predicate="works_at",
                     object="Tyrell Systems", object_id="ent_tyrell", valid_at=JOINED_NEW,
                     created_at=JOINED_NEW, source_session="s-new",
                     source_block="b_tyrell" if linked else None),
    ]  # fmt: skip
    return records


def add_records(store: Store, records: list[Record], path: Path) -> None:
    """Ingest ``records`` (written to ``path`` first) as the collector would."""
    write_jsonl(records, path)
    ingest_file(store, path)
