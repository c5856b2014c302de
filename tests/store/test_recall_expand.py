"""Expansion from the best hits, on both backends: the other turn of a two-part answer.

"My brother Tom moved to Porto" (one conversation) and "Tom got a job at a bakery there"
(a later one) together answer "what work does Sam's brother do in the city he moved to?";
the second shares no word with the question, only the bridge (Tom) with the first.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import memvault.recall.expand as expand
from memvault.embed import MiniLMEmbedder
from memvault.ingest import ingest_file
from memvault.recall import Recaller
from memvault.records import BlockRecord, EntityRecord, MentionRecord, Record, SessionRecord
from memvault.store import Store
from memvault.vectors import embed_missing
from memvault_demo.generator import write_jsonl

FIRST = dt.datetime(2023, 5, 8, 18, 0)
LATER = dt.datetime(2023, 6, 12, 18, 0)
QUERY = "What work does Sam's brother do in the city he moved to?"
MOVED = "Sam: My brother Tom moved to Porto in the spring."
JOB = "Sam: Tom got a job at a bakery there, he bakes croissants at dawn."
#: One model for every test (loaded once): the real vectors, which see "job" near "work".
EMBEDDER = MiniLMEmbedder()
#: Chatter that shares the question's words and answers nothing.
CHATTER = [
    "Melanie: Work was so long today, I moved desks twice.",
    "Sam: The city is loud at night, and work starts early.",
    "Sam: My work week was fine, nothing much to report.",
    "Melanie: My brother says the city buses run late.",
    "Sam: Do you think work will calm down in the city?",
    "Sam: I moved the plants to the balcony, they do better there.",
    "Sam: My brother and I talk about work every week.",
    "Melanie: What do you do after work in the city?",
    "Sam: The city he grew up in is small, work is scarce there.",
    "Sam: I moved my desk closer to the window at work.",
]


def _write(store: Store, tmp_path: Path, sessions: dict[str, tuple[dt.datetime, Sequence[tuple[str, str]]]], mentions: dict[str, list[str]], name: str = "chat") -> None:  # fmt: skip
    """Sessions of (block id, text) turns a minute apart; ``mentions``: entity -> blocks."""
    records: list[Record] = []
    session_of: dict[str, tuple[str, dt.datetime]] = {}
    for sid, (started, turns) in sessions.items():
        records.append(SessionRecord(id=sid, started_at=started, title=sid))
        for k, (bid, text) in enumerate(turns):
            at = started + dt.timedelta(minutes=k)
            records.append(BlockRecord(id=bid, session_id=sid, text=text, created_at=at))
            session_of[bid] = (sid, at)
    for eid, blocks in mentions.items():
        kind = "place" if eid == "ent_porto" else "person"
        records.append(EntityRecord(id=eid, name=eid.removeprefix("ent_").title(), entity_type=kind))  # fmt: skip
        for bid in blocks:
            sid, at = session_of[bid]
            records.append(MentionRecord(entity=eid, block_id=bid, session_id=sid, mentioned_at=at))  # fmt: skip
    path = tmp_path / f"{name}.jsonl"
    write_jsonl(records, path)
    ingest_file(store, path)
    embed_missing(store, EMBEDDER, kinds=("block",))


def _chatter(prefix: str) -> list[tuple[str, str]]:
    return [(f"{prefix}_{k}", text) for k, text in enumerate(CHATTER)]


@pytest.fixture
def no_expansion() -> Iterator[None]:
    share = expand.SHARE
    expand.SHARE = 0.0
    yield
    expand.SHARE = share


def _ranked(store: Store, query: str = QUERY, limit: int = 5) -> list[str]:
    got = Recaller(EMBEDDER).recall(store, query, limit=limit, record=False)
    return [h.block_id for h in got.results]


def _two_sessions(store: Store, tmp_path: Path, tom: list[str] | None = None) -> None:
    _write(
        store,
        tmp_path,
        {
            "s1": (FIRST, [("b_moved", MOVED), *_chatter("b_one")]),
            "s2": (LATER, [("b_job", JOB), *_chatter("b_two")]),
        },
        {"ent_tom": tom or ["b_moved", "b_job"], "ent_porto": ["b_moved"]},
    )


def test_the_turn_that_shares_only_the_bridge_is_found(store: Store, tmp_path: Path) -> None:
    _two_sessions(store, tmp_path)
    ranked = _ranked(store)
    assert "b_moved" in ranked[:2]
    assert "b_job" in ranked


def test_without_the_expansion_the_second_turn_is_missed(
    store: Store, tmp_path: Path, no_expansion: None
) -> None:
    _two_sessions(store, tmp_path)
    assert "b_job" not in _ranked(store)


def test_a_hub_bridges_nothing(store: Store, tmp_path: Path) -> None:
    """An entity mentioned by (nearly) every block links everything: it lifts nothing."""
    everything = ["b_moved", "b_job"] + [f"b_{p}_{k}" for p in ("one", "two") for k in range(6)]
    _two_sessions(store, tmp_path, tom=everything)
    assert "b_job" not in _ranked(store)


def test_the_chatter_of_the_best_hits_session_is_not_lifted(store: Store, tmp_path: Path) -> None:
    """Only other sessions are bridged to: in the same session, the chatter around a match
    shares its entities too."""
    _write(
        store,
        tmp_path,
        {"s1": (FIRST, [("b_moved", MOVED), *_chatter("b_one"), ("b_job", JOB)])},
        {"ent_tom": ["b_moved", "b_job"]},
    )
    assert "b_job" not in _ranked(store)


def test_a_turn_told_after_the_index_was_built_is_bridged_to(store: Store, tmp_path: Path) -> None:
    _write(
        store,
        tmp_path,
        {"s1": (FIRST, [("b_moved", MOVED), *_chatter("b_one")])},
        {"ent_tom": ["b_moved"], "ent_porto": ["b_moved"]},
    )
    recaller = Recaller(EMBEDDER, refresh_seconds=0)
    recaller.recall(store, QUERY, record=False)  # the index is built now
    _write(
        store,
        tmp_path,
        {"s2": (LATER, [("b_job", JOB), *_chatter("b_two")])},
        {"ent_tom": ["b_job"]},
        name="later",
    )
    got = recaller.recall(store, QUERY, limit=5, record=False)
    assert "b_job" in [h.block_id for h in got.results]
