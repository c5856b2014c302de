"""Tiers decide what is shown, never what can be found (both backends).

An old conversation (60 turns from 2023) goes frozen in one tiering pass: each turn's text
becomes a one-line headline, yet recall finds every turn by its original words as before,
shows the headline, and says the original is archived. Undo brings the text back and drops
the originals the run kept; a re-run writes nothing; the first original wins over a later,
shorter digest; a store tiered before originals were kept gets them from the audit log.
"""

from __future__ import annotations

import datetime as dt

from memvault.embed import HashingEmbedder
from memvault.judge import HeuristicJudge
from memvault.lifecycle.originals import block_view, findability
from memvault.lifecycle.tiering import run_tiering
from memvault.normalize import utcnow
from memvault.paths import data_dir
from memvault.recall import Recaller
from memvault.store import Store
from memvault.store.audit import undo_run
from memvault.vectors import embed_missing, stale_texts
from tests.lifecycle_support import LONG_TEXT, add_blocks, block
from tests.old_history import add_history, hit_at, questions

EMBEDDER = HashingEmbedder()


def originals(store: Store) -> dict[str, str]:
    rows = store.fetch("SELECT id, text FROM block_originals ORDER BY id")
    return {str(i): str(t) for i, t in rows}


def audit_rows(store: Store) -> int:
    return int(store.fetch("SELECT count(*) FROM audit_log")[0][0])


def test_an_old_conversation_stays_findable_after_one_night_of_tiering(store: Store) -> None:
    texts = add_history(store)
    embed_missing(store, EMBEDDER, kinds=("block",))
    long_lived = Recaller(EMBEDDER, refresh_seconds=0)
    before = hit_at(store, long_lived)
    assert before >= 0.9  # the questions are answerable at all

    result = run_tiering(store, HeuristicJudge(), now=utcnow())
    assert result.summary()["tiers_after"]["frozen"] == len(texts)

    after = hit_at(store, Recaller(EMBEDDER))  # a fresh process
    assert after >= before - 0.01, f"hit@5 fell from {before:.2f} to {after:.2f}"
    assert hit_at(store, long_lived) >= before - 0.01  # an agent's index, refreshed

    # Shown: the digest, one line that is not the original; found: by the original.
    question, answer = questions()[0]
    row = block(store, answer)
    assert row["tier"] == "frozen" and row["digest_kind"] == "headline"
    assert row["text"] == "Melanie: Thanks, Caroline!" and row["text"] != texts[answer]
    assert originals(store) == texts
    assert result.summary()["originals_kept"] == len(texts)
    # Tiering re-embeds nothing: each block's vector is still the one of its original.
    assert stale_texts(store, "block", EMBEDDER.model_name).is_empty()
    [hit] = [
        h
        for h in Recaller(EMBEDDER).recall(store, question, record=False).results
        if h.block_id == answer
    ]
    assert hit.text == row["text"] and hit.original_archived and hit.digest_kind == "headline"
    view = block_view(store, answer)
    assert view.original_text == texts[answer] and view.original_archived
    assert view.run_id == result.run_id

    # The findability check passes: the rarest words of each original find its block.
    check = findability(store, result.run_id, Recaller(EMBEDDER))
    assert check.passed and check.sampled == 50 and check.found == 50, check

    # A re-run writes nothing.
    audited = audit_rows(store)
    again = run_tiering(store, HeuristicJudge(), now=utcnow())
    assert again.run_id is None and again.written == 0 and audit_rows(store) == audited
    assert originals(store) == texts


def test_undo_brings_the_text_back_and_drops_the_originals_it_kept(store: Store) -> None:
    texts = add_history(store, turns=6)
    result = run_tiering(store, HeuristicJudge(), now=utcnow())
    assert result.run_id is not None and originals(store) == texts
    undo_run(store, result.run_id)
    for block_id, text in texts.items():
        row = block(store, block_id)
        assert row["text"] == text and row["digest_kind"] is None and row["tier"] == "hot"
        assert not block_view(store, block_id).original_archived
    assert originals(store) == {}
    hits = Recaller(EMBEDDER).recall(store, questions()[0][0], record=False).results
    assert hits and not any(h.original_archived for h in hits)
    # Tiered again: the originals are back, with the new run.
    again = run_tiering(store, HeuristicJudge(), now=utcnow())
    assert originals(store) == texts
    assert block_view(store, "turn-00").run_id == again.run_id


def test_the_first_original_wins_over_a_later_shorter_digest(store: Store) -> None:
    now = utcnow()
    add_blocks(store, now, {"c": 45})
    first = run_tiering(store, HeuristicJudge(), now=now)
    cold = block(store, "c")
    assert cold["tier"] == "cold" and cold["text"] != LONG_TEXT
    later = run_tiering(store, HeuristicJudge(), now=now + dt.timedelta(days=60))
    frozen = block(store, "c")
    assert frozen["tier"] == "frozen" and frozen["digest_kind"] == "headline"
    view = block_view(store, "c")
    assert view.original_text == LONG_TEXT and view.run_id == first.run_id
    assert later.summary()["originals_kept"] == 0
    # Undoing the later run leaves the first run's original alone.
    assert later.run_id is not None
    undo_run(store, later.run_id)
    assert block(store, "c")["text"] == cold["text"] and originals(store) == {"c": LONG_TEXT}


def test_a_store_tiered_before_originals_were_kept_gets_them_from_the_audit_log(
    store: Store,
) -> None:
    now = utcnow()
    add_blocks(store, now, {"u": 45})
    undone = run_tiering(store, HeuristicJudge(), now=now)
    assert undone.run_id is not None
    undo_run(store, undone.run_id)  # its before-images no longer stand
    add_blocks(store, now, {"c": 45, "f": 200})
    kept = run_tiering(store, HeuristicJudge(), now=now)
    assert kept.run_id is not None
    # As before this version: no originals table rows at all.
    store.backend.execute("DELETE FROM block_originals")
    later = run_tiering(store, HeuristicJudge(), now=now + dt.timedelta(days=60))
    assert later.run_id is not None
    store.backend.execute("DELETE FROM block_originals")
    migration = data_dir("sql").joinpath("migrations", "0009_block_originals.sql")
    with store.transaction():
        store.backend.execute_script(migration.read_text(encoding="utf-8"))
    rows = store.fetch_df("SELECT id, text, run_id FROM block_originals ORDER BY id")
    # The oldest before-image of each digested block: the full text, not the cold summary.
    assert rows.to_dicts() == [
        {"id": "c", "text": LONG_TEXT, "run_id": kept.run_id},
        {"id": "f", "text": LONG_TEXT, "run_id": kept.run_id},
        {"id": "u", "text": LONG_TEXT, "run_id": kept.run_id},
    ]
    # Search the originals again: the check and the stale vectors see them.
    assert findability(store, later.run_id, Recaller(EMBEDDER)).passed
    assert set(stale_texts(store, "block", EMBEDDER.model_name)["text"]) == {LONG_TEXT}


def test_the_findability_check_fails_when_an_original_is_not_kept(store: Store) -> None:
    texts = add_history(store, turns=12)
    result = run_tiering(store, HeuristicJudge(), now=utcnow())
    assert findability(store, result.run_id, Recaller(EMBEDDER)).passed
    store.backend.execute("DELETE FROM block_originals WHERE id = 'turn-03'")
    check = findability(store, result.run_id, Recaller(EMBEDDER))
    assert not check.passed and check.missing_originals == ["turn-03"]
    assert len(texts) == check.sampled
    # The check searched without recording a recall.
    assert store.fetch("SELECT count(*) FROM recall_log")[0][0] == 0


def test_the_check_fails_when_more_than_one_in_twenty_sampled_blocks_is_lost() -> None:
    from memvault.lifecycle.originals import Findability

    assert Findability(run_id="r", sampled=50, found=48).passed
    assert not Findability(run_id="r", sampled=50, found=47).passed
    assert not Findability(run_id="r", sampled=50, found=50, missing_originals=["b"]).passed
