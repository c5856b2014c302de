"""The read path on both backends: recall, feedback, gap hints, the index, prefetch."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import memvault
from memvault.embed import HashingEmbedder
from memvault.profile.gaps import refresh_gaps
from memvault.recall import FeedbackError, Recaller, feedback, recall
from memvault.recall.prefetch import hit_rate, predict, run_prefetch
from memvault.store import Store, undo_run
from memvault.vectors import embed_missing
from tests.recall_support import T0, fill


@pytest.fixture(autouse=True)
def hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")


@pytest.fixture
def filled(store: Store, tmp_path: Path) -> Store:
    fill(store, tmp_path)
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    return store


def _access(store: Store) -> dict[str, tuple[int, dt.datetime | None]]:
    return {r[0]: (int(r[1]), r[2]) for r in store.fetch("SELECT id, access_count, last_accessed_at FROM blocks")}  # fmt: skip


def test_a_recall_is_logged_with_the_contract_fields_and_undone_by_its_id(filled: Store) -> None:
    before = _access(filled)
    result = recall(filled, "status of Quill", limit=3, session_id="s1", now=T0)
    assert result.intent == "project_status"
    assert result.entities == ["ent_quill"]
    assert result.signature == "project_status|ent_quill"
    assert result.search_mode == "hybrid"
    ids = [h.block_id for h in result.results]
    assert ids[0] == "b_quill_status" and "b_archived" not in ids
    assert [(f.predicate, f.object) for f in result.facts] == [("has_status", "paused")]
    row = filled.get_row("recall_log", result.recall_id)
    assert row is not None
    assert json.loads(row["result_ids"]) == ids
    assert json.loads(row["scores"]) == pytest.approx([h.score for h in result.results])
    assert json.loads(row["entities"]) == ["ent_quill"]
    assert (row["intent_label"], row["signature"], row["verdict"]) == (
        "project_status", "project_status|ent_quill", None,
    )  # fmt: skip
    assert row["created_at"] == T0 and row["session_id"] == "s1" and row["latency_ms"] > 0
    after = _access(filled)
    for bid, (count, at) in after.items():
        assert (count, at) == ((before[bid][0] + 1, T0) if bid in ids else before[bid])
    phases = {r[0] for r in filled.fetch("SELECT DISTINCT phase FROM audit_log WHERE run_id = :r", {"r": result.recall_id})}  # fmt: skip
    assert phases == {"recall"}
    undo_run(filled, result.recall_id)
    assert _access(filled) == before
    assert filled.get_row("recall_log", result.recall_id) is None


def test_verdicts_and_boosts_write_what_the_owner_said(filled: Store) -> None:
    first = recall(filled, "status of Quill", limit=2, now=T0)
    ids = [h.block_id for h in first.results]
    feedback(filled, first.recall_id, "correct", now=T0)
    row = filled.get_row("recall_log", first.recall_id)
    assert row is not None and (row["verdict"], row["verdict_at"]) == ("CORRECT", T0)
    verdicts = filled.fetch("SELECT target_id, value FROM feedback WHERE kind = 'verdict'")
    assert verdicts == [(first.recall_id, 1.0)]
    feedback(filled, first.recall_id, "+", note="right context")
    feedback(filled, first.recall_id, "-", block_id=ids[1])
    scores = dict(filled.fetch("SELECT id, feedback_score FROM blocks WHERE id = ANY(:ids)", {"ids": ids}))  # fmt: skip
    assert scores == {ids[0]: 1.0, ids[1]: 0.0}
    boosts = sorted(filled.fetch("SELECT target_id, value FROM feedback WHERE kind = 'boost'"))
    assert boosts == sorted([(ids[0], 1.0), (ids[1], 1.0), (ids[1], -1.0)])
    second = recall(filled, "how do we use pytest", now=T0)
    feedback(filled, second.recall_id, "incorrect")
    assert filled.fetch("SELECT value FROM feedback WHERE target_id = :r", {"r": second.recall_id}) == [(-1.0,)]  # fmt: skip
    assert filled.get_row("recall_log", second.recall_id)["verdict"] == "INCORRECT"  # type: ignore[index]


def test_unknown_recall_verdict_or_block_is_refused_and_writes_nothing(filled: Store) -> None:
    done = recall(filled, "status of Quill", now=T0)
    counts = filled.counts(("feedback", "audit_log", "recall_log", "blocks"))
    with pytest.raises(FeedbackError, match="no recall with id"):
        feedback(filled, "recall-nope", "correct")
    with pytest.raises(FeedbackError, match="unknown verdict"):
        feedback(filled, done.recall_id, "great")
    with pytest.raises(FeedbackError, match="did not return block"):
        feedback(filled, done.recall_id, "+", block_id="b_nope")
    assert filled.counts(("feedback", "audit_log", "recall_log", "blocks")) == counts
    assert filled.get_row("recall_log", done.recall_id)["verdict"] is None  # type: ignore[index]


def test_a_question_that_failed_twice_comes_with_a_gap_hint(filled: Store) -> None:
    assert recall(filled, "what does Quill depend on", now=T0).gap_hint is None
    for k in range(2):
        failed = recall(filled, "dependencies of Quill", now=T0 + dt.timedelta(hours=k + 1))
        feedback(filled, failed.recall_id, "incorrect")
    again = recall(filled, "which services does Quill need", now=T0 + dt.timedelta(hours=5))
    assert again.signature == "dependency_lookup|ent_quill"
    assert again.gap_hint is not None
    assert (again.gap_hint.status, again.gap_hint.fail_count) == ("failed_before", 2)
    assert again.gap_hint.last_failed_at == T0 + dt.timedelta(hours=2)
    refresh_gaps(filled, "gaps-test")
    recorded = recall(filled, "dependencies of Quill", now=T0 + dt.timedelta(hours=6))
    assert recorded.gap_hint is not None and recorded.gap_hint.status == "open"
    assert "failed 2 times" in recorded.gap_hint.message
    row = filled.get_row("recall_log", recorded.recall_id)
    assert row is not None and json.loads(row["gap_hint"])["status"] == "open"


def test_without_vectors_of_the_model_the_search_is_by_keywords_and_says_so(
    store: Store, tmp_path: Path
) -> None:
    fill(store, tmp_path)
    result = recall(store, "pytest xdist plugin", now=T0)
    assert result.search_mode == "keywords"
    assert result.results[0].block_id == "b_pytest"


def test_a_cold_block_comes_back_as_its_digest_with_its_tier(filled: Store) -> None:
    result = recall(filled, "where does Ada work", now=T0)
    assert result.signature == "employer_lookup|ent_ada"
    top = result.results[0]
    assert (top.block_id, top.tier, top.digest_kind) == ("b_ada_work", "cold", "extractive")
    assert top.text.startswith("Digest: Ada")
    # The fact that answers the question comes first, though another is newer.
    facts = [(f.predicate, f.object) for f in result.facts]
    assert facts == [("works_at", "Acme Software"), ("uses_tool", "pytest")]


def test_the_index_reads_new_and_archived_blocks_without_a_rebuild(
    filled: Store, tmp_path: Path
) -> None:
    from memvault.records import BlockRecord

    recaller = Recaller(HashingEmbedder(), refresh_seconds=0)
    recaller.ready(filled)
    hits, _ = recaller.search(filled, "kubernetes helm chart", [], 3)
    assert "b_helm" not in [h.block_id for h in hits]
    from memvault.ingest import ingest_file
    from memvault_demo.generator import write_jsonl

    new = BlockRecord(id="b_helm", session_id="s1", text="The kubernetes helm chart lives in deploy/.", created_at=T0)  # fmt: skip
    write_jsonl([new], tmp_path / "new.jsonl")
    ingest_file(filled, tmp_path / "new.jsonl")
    embed_missing(filled, HashingEmbedder(), kinds=("block",))
    hits, mode = recaller.search(filled, "kubernetes helm chart", [], 3)
    assert [h.block_id for h in hits] == ["b_helm"] and mode == "hybrid"
    with filled.mutation("test-archive", "setup") as m:
        m.update("blocks", "b_pytest", {"status": "archived"}, action="archive")
    hits, _ = recaller.search(filled, "pytest xdist plugin", [], 3)
    assert "b_pytest" not in [h.block_id for h in hits]
    assert recaller.index is not None and recaller.index.rebuilds == 0
    assert recaller.index.delta.size >= 1


def test_prefetch_predicts_from_the_recall_log_and_a_later_recall_is_served(
    filled: Store,
) -> None:
    # A replayed recall log: the owner asks about Quill's status every morning, and once
    # about pytest; the answers about Quill were right.
    for day in range(4):
        at = T0 - dt.timedelta(days=4 - day)
        asked = recall(filled, "status of Quill", now=at)
        feedback(filled, asked.recall_id, "correct", now=at)
    recall(filled, "how do we use pytest", now=T0 - dt.timedelta(days=2))
    recaller = Recaller(HashingEmbedder())
    now = T0 + dt.timedelta(minutes=30)
    predictions = {p.signature: p for p in predict(filled, now)}
    assert predictions["project_status|ent_quill"].source == "recent_recalls"
    assert (
        predictions["project_status|ent_quill"].weight > predictions["tool_usage|ent_pytest"].weight
    )
    report = run_prefetch(filled, recaller, now)
    assert report.written == len(predictions) and report.refreshed == 0
    assert report.by_source.get("recent_recalls") == 2
    served_at = now + dt.timedelta(minutes=40)
    served = recall(filled, "where are we with Quill", limit=2, now=served_at)
    assert served.served_from_prefetch and served.prefetch_id
    assert served.results[0].block_id == "b_quill_status"
    row = filled.get_row("recall_log", served.recall_id)
    assert row is not None and row["prefetch_id"] == served.prefetch_id
    cache = filled.get_row("prefetch_cache", served.prefetch_id)
    assert cache is not None and (cache["hits"], cache["last_hit_at"]) == (1, served_at)
    missed = recall(filled, "where does Ada live", now=served_at + dt.timedelta(minutes=1))
    assert not missed.served_from_prefetch
    rate = hit_rate(filled, now, now + dt.timedelta(hours=2))
    assert rate["entries_created"] == len(predictions) and rate["entries_used"] == 1
    assert (rate["recalls"], rate["recalls_from_prefetch"], rate["recall_hit_rate"]) == (2, 1, 0.5)
    audit = filled.counts(("audit_log", "prefetch_cache"))
    again = run_prefetch(filled, recaller, now + dt.timedelta(minutes=5))
    assert (again.written, again.refreshed) == (0, 0) and again.unchanged == again.predictions
    assert filled.counts(("audit_log", "prefetch_cache")) == audit
    later = now + dt.timedelta(hours=4)
    expired = recall(filled, "status of Quill", now=later)
    assert not expired.served_from_prefetch
    renewed = run_prefetch(filled, recaller, later)
    assert renewed.written == renewed.predictions and renewed.unchanged == 0
    kept = filled.get_row("prefetch_cache", served.prefetch_id)
    assert kept is not None and kept["hits"] == 1, "an expired entry stays, with its hits"
    assert recall(
        filled, "status of Quill", now=later + dt.timedelta(minutes=1)
    ).served_from_prefetch


def test_memvault_exposes_recall_and_feedback(filled: Store) -> None:
    result = memvault.recall(filled, "notes on pytest", now=T0)
    report = memvault.feedback(filled, result.recall_id, "ambiguous")
    assert filled.get_row("recall_log", result.recall_id)["verdict"] == "AMBIGUOUS"  # type: ignore[index]
    assert report.feedback_ids and filled.fetch(
        "SELECT value FROM feedback WHERE kind = 'verdict'"
    ) == [(0.0,)]


def test_an_intent_puts_its_current_facts_first_and_the_block_that_states_them_above(
    store: Store, tmp_path: Path
) -> None:
    """Asked where the owner works, the current employer comes first, not last spring's."""
    from memvault.ingest import ingest_file
    from memvault.records import (
        BlockRecord,
        EntityRecord,
        MentionRecord,
        SessionRecord,
        TripleRecord,
    )
    from memvault_demo.generator import write_jsonl

    old, new = T0 - dt.timedelta(days=200), T0 - dt.timedelta(days=2)
    records = [
        SessionRecord(id="s-old", started_at=old),
        SessionRecord(id="s-new", started_at=new),
        EntityRecord(id="ent_ada", name="Ada Lovelace", entity_type="person"),
        BlockRecord(id="b_initech", session_id="s-old", created_at=old,
                    text="Where Ada Lovelace works: Initech, as an analyst."),
        BlockRecord(id="b_tyrell", session_id="s-new", created_at=new,
                    text="Ada Lovelace started at Tyrell Systems this week."),
        MentionRecord(entity="ent_ada", block_id="b_initech", session_id="s-old", mentioned_at=old),
        MentionRecord(entity="ent_ada", block_id="b_tyrell", session_id="s-new", mentioned_at=new),
        TripleRecord(subject="ent_ada", predicate="works_at", object="Initech", valid_at=old,
                     invalid_at=new, created_at=old, source_session="s-old"),
        TripleRecord(subject="ent_ada", predicate="works_at", object="Tyrell Systems",
                     valid_at=new, created_at=new, source_session="s-new"),
        TripleRecord(subject="ent_ada", predicate="uses_tool", object="pytest",
                     valid_at=T0, created_at=T0, source_session="s-new"),
    ]  # fmt: skip
    path = tmp_path / "employers.jsonl"
    write_jsonl(records, path)
    ingest_file(store, path)
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    result = recall(store, "where does Ada Lovelace work", now=T0)
    assert result.intent == "employer_lookup"
    assert [(f.predicate, f.object) for f in result.facts][:2] == [
        ("works_at", "Tyrell Systems"),
        ("uses_tool", "pytest"),
    ]
    assert [h.block_id for h in result.results] == ["b_tyrell", "b_initech"], result.results
