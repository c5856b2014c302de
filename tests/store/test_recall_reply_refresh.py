"""A long-lived index lifts the reply to a question written after it was built (both backends).

Recall scores a turn that answers another speaker's question by that question too. The links
are made when the index is built; a process that keeps its index (``memvault serve``, an
agent) reads new turns into it without a rebuild. Those turns must be linked as a rebuild
would link them: a new answer to a new question, a new answer to an old question, and an
old answer whose question is no longer the turn before it. Each check compares the
refreshed index with one built afresh from the same store.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from memvault.embed import HashingEmbedder
from memvault.recall import Recaller
from memvault.recall.context import REPLY_SHARE
from memvault.recall.index import SearchIndex
from memvault.store import Store
from tests.old_history import turn

EMBEDDER = HashingEmbedder()
START = dt.datetime(2023, 3, 4, 18, 0)
SESSIONS = 6
TURNS = 10


def _write(store: Store, session: str, turns: list[tuple[str, str, dt.datetime]]) -> None:
    """Turns (id, text, when) of ``session``, written audited as a serve ``remember`` would."""
    with store.mutation(f"seed-{session}-{turns[0][0]}", "seed") as m:
        if not store.get_row("sessions", session):
            m.insert("sessions", pl.DataFrame([{"id": session, "source": "jsonl", "started_at": turns[0][2], "metadata": "{}"}]))  # fmt: skip
        rows = [
            {"id": bid, "session_id": session, "kind": "user_turn", "role": "user", "text": text,
             "importance": 0.5, "pinned": False, "tier": "hot", "status": "active", "tags": "[]",
             "created_at": at, "updated_at": at}
            for bid, text, at in turns
        ]  # fmt: skip
        m.insert("blocks", pl.DataFrame(rows))


def _history(store: Store) -> None:
    """Six old conversations of ten turns, the last two ending in a question and its answer."""
    for s in range(SESSIONS):
        at = START + dt.timedelta(days=7 * s)
        turns = [
            (f"s{s}-t{t}", turn(s * TURNS + t), at + dt.timedelta(minutes=t)) for t in range(TURNS)
        ]
        _write(store, f"s{s}", turns)
    later = START + dt.timedelta(days=100)
    _write(store, "s-game", [
        ("game-q", "Melanie: What is your favourite board game these days?", later),
        ("game-a", "Caroline: Catan, every Sunday with the neighbours.", later + dt.timedelta(minutes=1)),
    ])  # fmt: skip
    _write(store, "s-sister", [
        ("sister-q", "Melanie: Which city did your sister move to in the end?", later),
    ])  # fmt: skip


def _ranking(index: SearchIndex, query: str) -> list[tuple[str, float]]:
    return index.score(query, None, [], 8)


def _same_ranking(refreshed: SearchIndex, fresh: SearchIndex, query: str) -> list[str]:
    """The refreshed index ranks as the fresh one (its scores differ a little: the second
    segment is scored with the main segment's term statistics); returns the ranked ids."""
    got, want = _ranking(refreshed, query), _ranking(fresh, query)
    assert [b for b, _ in got] == [b for b, _ in want], (query, got, want)
    return [b for b, _ in got]


def _links(index: SearchIndex) -> dict[str, str]:
    """Reply → question, over the live blocks of both segments."""
    segs = [index.main, index.delta]
    ids = [b for seg in segs for b in seg.ids]
    live = [bool(x) for seg in segs for x in seg.live]
    asked = [int(x) for seg in segs if seg.asked is not None for x in seg.asked]
    asked += [-1] * (len(ids) - len(asked))
    return {ids[i]: ids[q] for i, q in enumerate(asked) if live[i] and q >= 0}


def _score(index: SearchIndex, query: str, block_id: str) -> float:
    return dict(_ranking(index, query)).get(block_id, float("-inf"))


def test_turns_written_after_the_build_are_linked_as_a_rebuild_links_them(store: Store) -> None:
    _history(store)
    long_lived = Recaller(EMBEDDER, refresh_seconds=0)
    built = long_lived.ready(store)
    assert built.main.size == SESSIONS * TURNS + 3
    assert _links(built) == {"game-a": "game-q"}  # (turns of one speaker are no replies)

    now = START + dt.timedelta(days=200)
    # A new conversation: the answer shares no word with a question about it.
    _write(store, "s-kitten", [
        ("kitten-0", "Caroline: I adopted a tiny kitten from the shelter on Friday.", now),
        ("kitten-q", "Melanie: Aww! What did you name the kitten?", now + dt.timedelta(minutes=1)),
        ("kitten-a", "Caroline: Noodle, because of her fur.", now + dt.timedelta(minutes=2)),
        ("kitten-3", "Melanie: Love it.", now + dt.timedelta(minutes=3)),
    ])  # fmt: skip
    # An old question answered now.
    _write(store, "s-sister", [
        ("sister-a", "Caroline: Lisbon, she loves the trams there.", now),
    ])  # fmt: skip
    # A turn that arrives late, between an old question and its old answer.
    _write(store, "s-game", [
        ("game-late", "Melanie: Sorry, the baby was crying.",
         START + dt.timedelta(days=100, seconds=30)),
    ])  # fmt: skip

    refreshed = long_lived.ready(store)
    assert refreshed is built and refreshed.rebuilds == 0 and refreshed.delta.size == 6
    fresh = SearchIndex.build(store, EMBEDDER.model_name)
    assert _links(refreshed) == _links(fresh)
    assert {"kitten-a": "kitten-q", "sister-a": "sister-q"}.items() <= _links(refreshed).items()
    assert "game-a" not in _links(refreshed)  # the late turn now stands between them

    kitten = "what name did the kitten get"
    ranked = _same_ranking(refreshed, fresh, kitten)
    assert ranked[:2] == ["kitten-q", "kitten-a"], ranked  # the answer right behind the question
    assert _score(refreshed, kitten, "kitten-a") >= REPLY_SHARE * _score(refreshed, kitten, "kitten-q")  # fmt: skip

    sister = "which city did the sister move to"
    ranked = _same_ranking(refreshed, fresh, sister)
    assert ranked[:2] == ["sister-q", "sister-a"], ranked  # an old question, a new answer

    game = "favourite board game"
    ranked = _same_ranking(refreshed, fresh, game)
    assert ranked[0] == "game-q" and "game-a" not in ranked  # no longer the reply

    # Through the recall a serving process makes: the answer is among the first results.
    hits = long_lived.recall(store, kitten, limit=3, record=False).results
    assert "kitten-a" in [h.block_id for h in hits]


def test_archiving_a_turn_links_the_turns_it_stood_between(store: Store) -> None:
    _history(store)
    at = START + dt.timedelta(days=150)
    _write(store, "s-trip", [
        ("trip-q", "Melanie: Where did you spend the summer holiday?", at),
        ("trip-aside", "Melanie: I mean the long one in August.", at + dt.timedelta(minutes=1)),
        ("trip-a", "Caroline: Mostly on the Isle of Skye, camping.", at + dt.timedelta(minutes=2)),
    ])  # fmt: skip
    long_lived = Recaller(EMBEDDER, refresh_seconds=0)
    built = long_lived.ready(store)
    holiday = "summer holiday"
    assert "trip-a" not in _links(built) and "trip-a" not in [
        b for b, _ in _ranking(built, holiday)
    ]
    # Archived without a newer timestamp (as a status change by hand would be).
    store.backend.execute("UPDATE blocks SET status = 'archived' WHERE id = 'trip-aside'")
    refreshed = long_lived.ready(store)
    assert refreshed is built and refreshed.rebuilds == 0
    fresh = SearchIndex.build(store, EMBEDDER.model_name)
    assert _links(refreshed) == _links(fresh) and _links(refreshed)["trip-a"] == "trip-q"
    assert _same_ranking(refreshed, fresh, holiday)[:2] == ["trip-q", "trip-a"]


def test_a_serving_process_lifts_the_answer_it_was_just_told(store: Store) -> None:
    from memvault.serve.service import MemoryService

    _history(store)
    service = MemoryService(store, Recaller(EMBEDDER, refresh_seconds=0))
    try:
        service.warm()
        for speaker, text, minute in (
            ("Caroline", "I adopted a tiny kitten from the shelter on Friday.", 0),
            ("Melanie", "Aww! What did you name the kitten?", 1),
            ("Caroline", "Noodle, because of her fur.", 2),
        ):
            at = (START + dt.timedelta(days=300, minutes=minute)).isoformat()
            service.remember(f"{speaker}: {text}", session_id="s-mcp", occurred_at=at)
        kitten = "what name did the kitten get"
        served = [h["block_id"] for h in service.recall(kitten, limit=3)["results"]]
        fresh = Recaller(EMBEDDER).recall(store, kitten, limit=3, record=False).results
        assert served == [h.block_id for h in fresh]
        [answer] = store.fetch("SELECT id FROM blocks WHERE text LIKE '%Noodle%'")
        assert served[1] == answer[0]  # right behind the question, as after a rebuild
    finally:
        service.close()  # its recall writer holds a connection of its own
