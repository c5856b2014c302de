"""Currency on both backends: a block that states a superseded fact ranks below the one that
states what holds now and is marked ``superseded_since``; a prefetched ranking is the fresh
one, and is not served once a fact it rests on changed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from memvault.embed import HashingEmbedder
from memvault.judge import ScriptedJudge
from memvault.recall import Recaller
from memvault.recall.prefetch import run_prefetch
from memvault.recall.result import RecallResult
from memvault.store import Store
from memvault.temporal import apply_conflict_plan, plan_conflicts
from memvault.vectors import embed_missing
from tests.recall_support import (
    JOINED_NEW,
    T0,
    add_records,
    employer_after,
    employer_before,
)

QUESTION = "where does Ada work"


def _dream(store: Store) -> None:
    """Resolve the employer conflict as the nightly dream does (one employer at a time)."""
    apply_conflict_plan(store, plan_conflicts(store, ScriptedJudge({}), now=T0), "dream-test")
    embed_missing(store, HashingEmbedder(), kinds=("block",))


def _changed_employer(store: Store, tmp_path: Path, *, linked: bool = True, noise: int = 0) -> None:
    add_records(store, employer_before(noise=noise) + employer_after(linked=linked), tmp_path / "h.jsonl")  # fmt: skip
    _dream(store)


def _recaller() -> Recaller:
    return Recaller(HashingEmbedder(), refresh_seconds=0)


def _ranking(result: RecallResult) -> list[tuple[str, float, dt.datetime | None]]:
    return [(h.block_id, h.score, h.superseded_since) for h in result.results]


def test_the_block_stating_the_current_employer_comes_first_and_the_old_ones_are_marked(
    store: Store, tmp_path: Path
) -> None:
    _changed_employer(store, tmp_path)
    old = store.get_row("triples", "tri_initech")
    assert old is not None and old["status"] == "superseded" and old["invalid_at"] == JOINED_NEW
    result = _recaller().recall(store, QUESTION, now=T0)
    assert result.intent == "employer_lookup" and result.entities == ["ent_ada"]
    ids = [h.block_id for h in result.results]
    assert ids[0] == "b_tyrell", result.results
    marked = {h.block_id: h.superseded_since for h in result.results}
    # the block the old triple was read from, and the note that only names the old employer
    assert marked["b_initech"] == JOINED_NEW and marked["b_where"] == JOINED_NEW
    assert marked["b_tyrell"] is None
    # the words of the question are the note's: only its staleness puts it below
    words_only = _recaller().search(store, QUESTION, [], 5)[0]
    assert words_only[0].block_id == "b_where"


@pytest.mark.parametrize("linked", [True, False], ids=["triple-linked", "text-only"])
def test_the_current_block_is_found_even_when_the_words_miss_it(
    store: Store, tmp_path: Path, linked: bool
) -> None:
    """60 notes mention Ada and more of the question's words than the new-job block; the block
    that states her current employer is still looked at: as the source of the current fact,
    or (no triple linked to it) as a block mentioning the employer whose text names it."""
    _changed_employer(store, tmp_path, linked=linked, noise=60)
    result = _recaller().recall(store, QUESTION, now=T0)
    assert result.results[0].block_id == "b_tyrell", result.results
    assert result.results[0].superseded_since is None


def test_a_prefetched_ranking_is_the_fresh_one(store: Store, tmp_path: Path) -> None:
    _changed_employer(store, tmp_path)
    recaller = _recaller()
    fresh = recaller.recall(store, QUESTION, now=T0)
    assert not fresh.served_from_prefetch
    run_prefetch(store, recaller, T0 + dt.timedelta(minutes=5))
    entry = store.fetch(
        "SELECT facts FROM prefetch_cache WHERE signature = 'employer_lookup|ent_ada'"
    )
    assert json.loads(entry[0][0]) == {
        "tri_initech": f"superseded:{JOINED_NEW.isoformat()}",
        "tri_tyrell": "current",
    }
    cached = recaller.recall(store, QUESTION, now=T0 + dt.timedelta(minutes=10))
    assert cached.served_from_prefetch
    assert _ranking(cached) == _ranking(fresh)
    assert cached.results[0].block_id == "b_tyrell"


@pytest.mark.parametrize("dream", [True, False], ids=["superseded", "new-fact-only"])
def test_a_prefetched_ranking_is_not_served_once_its_facts_changed(
    store: Store, tmp_path: Path, dream: bool
) -> None:
    """Prefetched while Ada worked at Initech; then she joins Tyrell Systems (and, with
    ``dream``, the nightly dream supersedes the old fact): the entry is not served."""
    add_records(store, employer_before(), tmp_path / "before.jsonl")
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    recaller = _recaller()
    before = recaller.recall(store, QUESTION, now=T0 - dt.timedelta(hours=1))
    assert before.results[0].block_id in {"b_where", "b_initech"}
    run_prefetch(store, recaller, T0)
    assert recaller.recall(store, QUESTION, now=T0 + dt.timedelta(minutes=1)).served_from_prefetch
    add_records(store, employer_after(), tmp_path / "after.jsonl")
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    if dream:
        _dream(store)
    after = recaller.recall(store, QUESTION, now=T0 + dt.timedelta(minutes=30))
    assert not after.served_from_prefetch and after.prefetch_id is None
    row = store.get_row("recall_log", after.recall_id)
    assert row is not None and row["prefetch_id"] is None
    if dream:  # Tyrell Systems is the employer now: its block first, the old ones marked
        assert after.results[0].block_id == "b_tyrell", after.results
        marked = {h.block_id: h.superseded_since for h in after.results}
        assert marked["b_initech"] == JOINED_NEW and marked["b_where"] == JOINED_NEW
    else:  # two current employers until the dream decides: both stated, none marked
        assert "b_tyrell" in [h.block_id for h in after.results]
        assert all(h.superseded_since is None for h in after.results)


def test_an_entry_written_before_facts_were_recorded_is_not_served(
    store: Store, tmp_path: Path
) -> None:
    _changed_employer(store, tmp_path)
    recaller = _recaller()
    recaller.recall(store, QUESTION, now=T0)
    run_prefetch(store, recaller, T0 + dt.timedelta(minutes=5))
    with store.mutation("test-old-entry", "setup") as m:
        for (pid,) in store.fetch("SELECT id FROM prefetch_cache"):
            m.update("prefetch_cache", pid, {"facts": None}, action="forget-facts")
    again = recaller.recall(store, QUESTION, now=T0 + dt.timedelta(minutes=10))
    assert not again.served_from_prefetch and again.results[0].block_id == "b_tyrell"
