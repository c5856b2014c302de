"""What recall ranks first, on both backends: word forms, calibrated fusion, dates, speakers.

Each test is a way recall was seen to miss on long conversations (one block per turn,
``Speaker: text``): the turn that answers must come before the turn that only looks like it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memvault.embed import HashingEmbedder, MiniLMEmbedder
from memvault.ingest import ingest_file
from memvault.recall import Recaller
from memvault.recall.index import SearchIndex
from memvault.records import BlockRecord, EntityRecord, MentionRecord, Record, SessionRecord
from memvault.store import Store
from memvault.vectors import embed_missing
from memvault_demo.generator import write_jsonl

SAID = dt.datetime(2023, 5, 8, 18, 0)  # a Monday


def _fill(store: Store, tmp_path: Path, texts: dict[str, str], extra: Sequence[Record] = ()) -> None:  # fmt: skip
    records: list[Record] = [SessionRecord(id="s1", started_at=SAID, title="chat")]
    for k, (bid, text) in enumerate(texts.items()):
        at = SAID + dt.timedelta(minutes=k)
        records.append(BlockRecord(id=bid, session_id="s1", text=text, created_at=at))
    path = tmp_path / "chat.jsonl"
    write_jsonl([*records, *extra], path)
    ingest_file(store, path)


FILLER = {f"b_filler_{k}": f"Melanie: The weather was {w} today." for k, w in enumerate(["grey", "warm", "cold", "wet", "mild", "windy"])}  # fmt: skip


def test_another_form_of_a_word_is_found(store: Store, tmp_path: Path) -> None:
    _fill(
        store, tmp_path, {"b_kittens": "Sam: She adopted two kittens from the shelter.", **FILLER}
    )
    index = SearchIndex.build(store, "none")
    assert index.score("adopting a kitten", None, [], 3)[0][0] == "b_kittens"


class _Vectors:
    """An embedder with chosen vectors: what the query is like, by construction."""

    model_name, dim = "chosen-4d", 4

    def __init__(self, by_text: dict[str, Sequence[float]]) -> None:
        self.by_text = by_text

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self.by_text.get(t, (0.15, 0.0, 0.0, 0.99)) for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_one_shared_word_does_not_outrank_a_close_meaning(store: Store, tmp_path: Path) -> None:
    gold = "Sam: I finally brought home a rescue puppy and called him Biscuit."
    decoy = "Melanie: Have you ever adopted a dog? What name would you pick?"
    filler = {f"b_f{k}": f"Melanie: Lunch number {k} was fine." for k in range(20)}
    _fill(store, tmp_path, {"b_gold": gold, "b_decoy": decoy, **filler})
    query = "What is the name of the dog Sam adopted?"
    embedder = _Vectors({query: (1, 0, 0, 0), gold: (0.8, 0.6, 0, 0), decoy: (0.3, 0, 0.95, 0)})
    embed_missing(store, embedder, kinds=("block",))  # type: ignore[arg-type]
    index = SearchIndex.build(store, embedder.model_name)
    ranked = [b for b, _ in index.score(query, embedder.embed([query])[0], [], 5)]
    assert ranked[:2] == ["b_gold", "b_decoy"]


def test_an_absolute_date_finds_the_turn_that_said_last_friday(store: Store, tmp_path: Path) -> None:  # fmt: skip
    _fill(store, tmp_path, {
        "b_porto": "Sam: Two weeks ago I ran a half marathon in Porto, my best half marathon yet.",
        "b_lisbon": "Sam: Last Friday I ran a half marathon in Lisbon.",
        **FILLER,
    })  # fmt: skip
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    recaller = Recaller(HashingEmbedder())
    got = recaller.recall(store, "Where did Sam run a half marathon on 5 May 2023?", record=False)
    assert got.results[0].block_id == "b_lisbon"
    got = recaller.recall(store, "Where did Sam run a half marathon on 24 April 2023?", record=False)  # fmt: skip
    assert got.results[0].block_id == "b_porto"


def test_a_greeting_is_no_mention_of_the_person_greeted(store: Store, tmp_path: Path) -> None:
    greeting = "Melanie: Hey Caroline! Climbing sounds scary to me."
    said = "Caroline: I joined a climbing gym, I go twice a week now."
    people = [
        EntityRecord(id="ent_caroline", name="Caroline", entity_type="person"),
        EntityRecord(id="ent_melanie", name="Melanie", entity_type="person"),
        MentionRecord(
            entity="ent_caroline", block_id="b_greeting", session_id="s1", mentioned_at=SAID
        ),
    ]
    _fill(store, tmp_path, {"b_greeting": greeting, "b_said": said, **FILLER}, people)
    # the real vectors: a hashing one is all words, and with the name out of the query's
    # vector (it asks who through mentions), "Climbing sounds scary" is all it matches
    embedder = MiniLMEmbedder()
    embed_missing(store, embedder, kinds=("block",))
    got = Recaller(embedder).recall(store, "What did Caroline say about climbing?", record=False)
    assert got.entities == ["ent_caroline"]
    assert [h.block_id for h in got.results][:2] == ["b_said", "b_greeting"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Last Friday I ran.", "5 May 2023 2023-05-05 Friday"),
        ("Yesterday was long.", "7 May 2023"),
        ("Three days ago we met.", "5 May 2023"),
        ("On Sunday we hiked.", "7 May 2023"),
        ("Last month was busy.", "April 2023"),
    ],
)
def test_relative_dates_resolve_against_the_time_said(text: str, expected: str) -> None:
    from memvault.recall.dates import with_dates

    assert expected in with_dates(text, SAID)
    assert "May 2023" in with_dates("Nothing dated here.", SAID)


def test_the_reply_to_a_question_rises_with_it(store: Store, tmp_path: Path) -> None:
    _fill(store, tmp_path, {
        "b_bird": "Sam: A rescued bird visited my garden.",
        "b_minute": "Sam: Give me a minute, I have to go.",
        **FILLER,
        "b_asked": "Melanie: What did you name the kitten you rescued?",
        "b_reply": "Sam: Noodle, because of her fur color.",
        "b_later": "Melanie: Cute! See you on Sunday.",
    })  # fmt: skip
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    got = Recaller(HashingEmbedder()).recall(store, "What name did Sam give the rescued kitten?", record=False)  # fmt: skip
    assert {h.block_id for h in got.results[:2]} == {"b_asked", "b_reply"}


def test_a_day_the_query_names_favours_what_was_written_that_day(store: Store, tmp_path: Path) -> None:  # fmt: skip
    days = {"b_c_22nd": dt.datetime(2024, 1, 22, 19), "b_b_23rd_utc": dt.datetime(2024, 1, 23, 1), "b_a_25th": dt.datetime(2024, 1, 25, 19)}  # fmt: skip
    records: list[Record] = []
    for bid, at in days.items():
        records.append(SessionRecord(id=f"s_{bid}", started_at=at, title="chat"))
        records.append(BlockRecord(id=bid, session_id=f"s_{bid}", text="Paola: I cooked a veggie stir fry.", created_at=at))  # fmt: skip
    for k, (fid, text) in enumerate(FILLER.items()):
        records.append(BlockRecord(id=fid, session_id="s_b_a_25th", text=text, created_at=days["b_a_25th"] + dt.timedelta(minutes=k + 1)))  # fmt: skip
    path = tmp_path / "days.jsonl"
    write_jsonl(records, path)
    ingest_file(store, path)
    index = SearchIndex.build(store, "none")
    found = [b for b, _ in index.score("What did Paola cook on 22.01.2024?", None, [], 3)]
    assert found == ["b_c_22nd", "b_b_23rd_utc", "b_a_25th"]  # the next day in UTC counts half


def _snapshot(store: Store, day: dt.date, top: list[str]) -> None:
    """A daily snapshot whose top entities are ``top`` (what the profile writes each day)."""
    import json

    import polars as pl

    row = {"id": f"profile_{day}", "day": day, "created_at": SAID,
           "top_entities": json.dumps([{"id": e, "score": 1.0 / (1 + k)} for k, e in enumerate(top)])}  # fmt: skip
    store.backend.insert_df("profile_daily", pl.DataFrame([row]))


def test_of_two_memories_that_answer_alike_the_one_about_todays_attention_comes_first(
    store: Store, tmp_path: Path
) -> None:
    tools = [EntityRecord(id=f"ent_{t.lower()}", name=t, entity_type="tool") for t in ("Kafka", "Redis")]  # fmt: skip
    mentions = [
        MentionRecord(entity=f"ent_{t}", block_id=f"b_{t}", session_id="s1", mentioned_at=SAID)
        for t in ("kafka", "redis")
    ]
    texts = {
        "b_kafka": "Sam: The migration plan is ready, the Kafka part too.",
        "b_redis": "Sam: The migration plan is ready, the Redis part too.",
        **FILLER,
    }
    _fill(store, tmp_path, texts, [*tools, *mentions])

    def first() -> str:
        got = Recaller(refresh_seconds=0).recall(store, "is the migration plan ready?", record=False)  # fmt: skip
        return got.results[0].block_id

    unbiased = first()
    # the owner's attention today is on the other one: it comes first
    other = "redis" if unbiased == "b_kafka" else "kafka"
    _snapshot(store, SAID.date(), [f"ent_{other}"])
    assert first() == f"b_{other}"
    # a newer day's snapshot is what counts
    _snapshot(store, SAID.date() + dt.timedelta(days=1), [unbiased.replace("b_", "ent_")])
    assert first() == unbiased


def test_a_memory_said_again_word_for_word_is_shown_once_before_the_next_one(
    store: Store, tmp_path: Path
) -> None:
    texts = {
        "b_1": "Sam: The city is so crowded in summer.",
        "b_2": "Sam: the city is so  crowded in summer.",
        "b_3": "Sam: The city is so crowded in summer.",
        "b_moved": "Sam: In summer the city is crowded, so we moved out.",
        **FILLER,
    }
    _fill(store, tmp_path, texts)
    got = Recaller(refresh_seconds=0).recall(store, "is the city crowded in summer?", record=False)  # fmt: skip
    ranked = [h.block_id for h in got.results]
    copies = [b for b in ranked if b in ("b_1", "b_2", "b_3")]
    assert len(copies) == 3, ranked
    # one copy first, then the other memory, then the repeats
    assert ranked.index(copies[0]) < ranked.index("b_moved") < ranked.index(copies[1])


def test_a_question_naming_a_speaker_is_about_them_not_the_owner(store: Store, tmp_path: Path) -> None:  # fmt: skip
    """The owner (the person mentioned most) is implied by "where does … live?" only when
    the question names nobody: a speaker no entity stands for ("elise: …") is somebody."""
    texts = {
        "b_tom": "Melanie: Tom lives in a small flat in Porto, near the river.",
        "b_tom2": "Melanie: Tom says the flat in Porto is cold.",
        "b_elise": "elise: I live in a tiny studio in Denver now.",
        "b_elise2": "elise: The studio is small but I like it.",
        **FILLER,
    }
    tom = [EntityRecord(id="ent_tom", name="Tom", entity_type="person")]
    tom += [MentionRecord(entity="ent_tom", block_id=b, session_id="s1", mentioned_at=SAID) for b in ("b_tom", "b_tom2")]  # fmt: skip
    _fill(store, tmp_path, texts, tom)
    recaller = Recaller(HashingEmbedder())
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    assert recaller.recall(store, "Where does the owner live?", record=False).entities == ["ent_tom"]  # fmt: skip
    got = recaller.recall(store, "Where does Elise live?", record=False)
    assert got.entities == []
    assert got.results[0].block_id == "b_elise"
