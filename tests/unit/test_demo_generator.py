"""The demo history generator: realistic, deterministic, consistent with its ground truth."""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import io
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memvault.normalize import utcnow
from memvault.records import ATTITUDE_CATEGORIES, RECORD_ADAPTER
from memvault_demo import (
    PREDICATES,
    DemoConfig,
    DemoHistory,
    GroundTruth,
    generate,
    recall_signature,
    write_jsonl,
)

# A fixed end keeps ids stable between runs; fall back to "yesterday" on a machine whose clock
# is behind it (records may not lie in the future).
END = min(dt.datetime(2026, 11, 1), utcnow().replace(hour=0, minute=0, second=0, microsecond=0))


@pytest.fixture(scope="module")
def default() -> tuple[list[Any], GroundTruth]:
    records, truth = generate(DemoConfig(end=END))
    return list(records), truth


def _by_type(records: list[Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = collections.defaultdict(list)
    for record in records:
        out[record.type].append(record)
    return out


def _digest(config: DemoConfig) -> str:
    buffer = io.StringIO()
    write_jsonl(DemoHistory(config).records(), buffer)
    return hashlib.sha256(buffer.getvalue().encode()).hexdigest()


# --------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_bytes_and_another_seed_does_not() -> None:
    config = DemoConfig(sessions=60, days=60, end=END)
    assert _digest(config) == _digest(config)
    assert _digest(config) != _digest(DemoConfig(sessions=60, days=60, end=END, seed=8))


def test_output_does_not_depend_on_the_hash_seed_of_the_process() -> None:
    """Set iteration order changes with PYTHONHASHSEED; the output must not."""
    config = DemoConfig(sessions=40, days=45, end=END)
    code = (
        "import datetime as dt, hashlib, io;"
        "from memvault_demo import DemoConfig, DemoHistory, write_jsonl;"
        f"b = io.StringIO(); write_jsonl(DemoHistory(DemoConfig(sessions=40, days=45, "
        f"end=dt.datetime.fromisoformat({END.isoformat()!r}))).records(), b);"
        "print(hashlib.sha256(b.getvalue().encode()).hexdigest())"
    )
    root = Path(__file__).resolve().parents[2]
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        digests.add(result.stdout.strip())
    assert digests == {_digest(config)}


def test_records_can_be_iterated_again_from_the_start() -> None:
    history = DemoHistory(DemoConfig(sessions=20, days=30, end=END))
    first = [r.to_json_dict() for r in history.records()]
    assert first == [r.to_json_dict() for r in history.records()]


# --------------------------------------------------------------------------- validity and integrity


def test_every_record_round_trips_through_the_interchange_adapter(default) -> None:
    records, _ = default
    for record in records:
        again = RECORD_ADAPTER.validate_python(record.to_json_dict())
        assert again == record


def test_ids_are_unique(default) -> None:
    records, _ = default
    ids = [record.id for record in records]
    assert len(ids) == len(set(ids))


def test_references_point_to_records_earlier_in_the_stream(default) -> None:
    records, _ = default
    seen: dict[str, str] = {}
    for record in records:
        kind = record.type
        if kind == "block":
            assert seen.get(record.session_id) == "session"
        elif kind == "mention":
            assert seen.get(record.entity) == "entity"
            assert seen.get(record.block_id) == "block"
            assert seen.get(record.session_id) == "session"
        elif kind == "triple":
            assert seen.get(record.subject) == "entity"
            if record.object_id is not None:
                assert seen.get(record.object_id) == "entity"
            assert seen.get(record.source_session) == "session"
            assert seen.get(record.source_block) == "block"
        elif kind == "recall":
            assert all(seen.get(e) == "entity" for e in record.entities)
            assert all(seen.get(b) == "block" for b in record.result_ids)
        elif kind == "feedback":
            assert seen.get(record.target_id) == "block"
        elif kind == "attitude":
            assert all(seen.get(s) == "session" for s in record.evidence)
            if record.previous_id:
                assert seen.get(record.previous_id) == "attitude"
        elif kind == "skill_use":
            assert seen.get(record.session_id) == "session"
        seen[record.id] = kind


def test_times_are_ordered_and_inside_the_history(default) -> None:
    records, truth = default
    t = _by_type(records)
    for session in t["session"]:
        assert truth.start <= session.started_at < session.ended_at <= truth.end
    sessions = {s.id: s for s in t["session"]}
    for block in t["block"]:
        session = sessions[block.session_id]
        assert session.started_at <= block.created_at <= session.ended_at
        if block.last_accessed_at:
            assert block.created_at <= block.last_accessed_at <= truth.end
    for triple in t["triple"]:
        assert triple.valid_at <= triple.created_at


# --------------------------------------------------------------------------- content minimums


def test_sessions_are_spread_like_a_working_life(default) -> None:
    records, truth = default
    sessions = _by_type(records)["session"]
    assert len(sessions) == truth.sessions == 240
    span = sessions[-1].started_at - sessions[0].started_at
    assert span >= dt.timedelta(days=120)
    per_day = collections.Counter(s.started_at.date() for s in sessions)
    assert set(per_day.values()) <= {1, 2, 3, 4}
    weekdays = [n for day, n in per_day.items() if day.weekday() < 5]
    weekend = [n for day, n in per_day.items() if day.weekday() >= 5]
    assert len(weekdays) > 3 * len(weekend)
    days = sorted(per_day)
    assert max(b - a for a, b in itertools.pairwise(days)) >= dt.timedelta(days=5)


def test_sessions_hold_transcripts_and_memories(default) -> None:
    records, truth = default
    blocks = _by_type(records)["block"]
    per_session = collections.Counter(b.session_id for b in blocks)
    assert min(per_session.values()) >= 3 and max(per_session.values()) <= 12
    kinds = collections.Counter(b.kind for b in blocks)
    assert set(kinds) == {"user_turn", "assistant_turn", "memory"}
    assert kinds["memory"] == truth.memory_blocks
    assert len(blocks) == truth.blocks
    texts = [b.text for b in blocks]
    assert len(set(texts)) == len(texts), "no two blocks say exactly the same thing"
    assert not any("lorem" in text.lower() for text in texts)


def test_owner_facts_change_over_time(default) -> None:
    records, truth = default
    owner = truth.owner_id
    triples = [t for t in _by_type(records)["triple"] if t.subject == owner]

    def history(predicate: str) -> list[str]:
        ordered = sorted((t for t in triples if t.predicate == predicate), key=lambda t: t.valid_at)
        return [t.object_id or t.object for t in ordered]

    employers = history("works_at")
    assert len(dict.fromkeys(employers)) >= 3  # at least two changes
    cities = [city for city, _ in itertools.groupby(history("lives_in"))]
    assert len(cities) == 3 and cities[0] == cities[2] != cities[1]  # a move and a move back
    project = [t for t in _by_type(records)["triple"] if t.predicate == "project_status"]
    flagship = sorted(
        (t for t in project if t.subject == truth.project_id), key=lambda t: t.valid_at
    )
    assert [t.object for t in flagship] == ["planning", "active", "paused", "shipped"]
    assert len({t.source_session for t in flagship}) == 4
    stable = collections.Counter(t.predicate for t in _by_type(records)["triple"])
    for predicate in ("uses_tool", "knows", "works_on", "depends_on", "interested_in"):
        assert stable[predicate] > 50


def test_a_fact_arrives_late_and_another_is_restated(default) -> None:
    records, truth = default
    triples = {t.id: t for t in _by_type(records)["triple"]}
    late = triples[truth.late_fact.triple_id]
    assert late.created_at - late.valid_at >= dt.timedelta(days=14)
    already_known_later_fact = [
        t
        for t in triples.values()
        if t.subject == truth.owner_id
        and t.created_at < late.created_at
        and t.valid_at > late.valid_at
    ]
    assert already_known_later_fact, "the late fact's valid time is before facts already known"
    first = triples[truth.restated_fact.original_id]
    again = triples[truth.restated_fact.restated_id]
    assert (first.subject, first.predicate, first.object_id) == (
        again.subject,
        again.predicate,
        again.object_id,
    )
    assert first.object != again.object
    assert first.source_session != again.source_session
    assert first.created_at < again.created_at


def test_near_duplicates_and_bloat_are_present_in_the_right_share(default) -> None:
    records, truth = default
    blocks = {b.id: b for b in _by_type(records)["block"]}
    memories = [b for b in blocks.values() if b.kind == "memory"]
    members = [b for group in truth.near_duplicate_groups for b in group]
    assert len(truth.near_duplicate_groups) >= 5
    assert 0.03 <= len(members) / len(memories) <= 0.08
    for group in truth.near_duplicate_groups:
        assert 2 <= len(group) <= 4
        assert all(blocks[b].kind == "memory" for b in group)
        assert len({blocks[b].session_id for b in group}) == len(group)
        assert len({blocks[b].text for b in group}) == len(group)
    bloated = {b.id for b in blocks.values() if len(b.text) > 750}
    assert bloated == set(truth.bloated_blocks)
    assert 0.015 <= len(bloated) / len(memories) <= 0.05
    assert {b for b in bloated if len(blocks[b].text) > 1500} == set(truth.long_bloated_blocks)
    assert truth.long_bloated_blocks


def test_recalls_fail_for_a_few_signatures_repeatedly(default) -> None:
    records, truth = default
    recalls = _by_type(records)["recall"]
    verdicts = collections.Counter(r.verdict for r in recalls)
    assert verdicts["CORRECT"] > 0.6 * len(recalls)
    assert verdicts["AMBIGUOUS"] > 0
    assert 0.05 <= verdicts["INCORRECT"] / len(recalls) <= 0.15
    assert all(r.intent_label for r in recalls)
    failures = collections.Counter(
        recall_signature(r.intent_label, r.entities) for r in recalls if r.verdict == "INCORRECT"
    )
    repeated = {sig: n for sig, n in failures.items() if n >= 2}
    assert len(repeated) >= 3
    assert repeated == {gap.signature: gap.fail_count for gap in truth.recall_gaps}
    for gap in truth.recall_gaps:
        last = max(
            r.created_at
            for r in recalls
            if r.verdict == "INCORRECT"
            and recall_signature(r.intent_label, r.entities) == gap.signature
        )
        assert last == gap.last_fail_at


def test_attitude_version_chains_are_consistent(default) -> None:
    records, truth = default
    attitudes = {a.id: a for a in _by_type(records)["attitude"]}
    assert {a.category for a in attitudes.values()} == set(ATTITUDE_CATEGORIES)
    assert sum(1 for a in attitudes.values() if a.previous_id) >= 3
    for category, versions in truth.preference_versions.items():
        chain = [attitudes[v.attitude_id] for v in versions]
        assert all(a.category == category for a in chain)
        for older, newer in itertools.pairwise(chain):
            assert newer.previous_id == older.id
            assert older.superseded_at == newer.created_at
            assert older.weight < newer.weight
        assert chain[0].previous_id is None
        assert chain[-1].superseded_at is None
        assert [a.statement for a in chain] == [v.statement for v in versions]


def test_skills_have_realistic_frequencies(default) -> None:
    records, truth = default
    uses = _by_type(records)["skill_use"]
    counts = collections.Counter(u.skill for u in uses)
    assert counts == truth.skill_use_counts
    assert counts["Python"] >= 0.7 * truth.sessions  # used constantly
    assert counts["Rust"] == 1  # once
    last = {u.skill: u.used_at for u in uses}
    assert last == truth.skill_last_used
    assert truth.end - last["Scala"] >= dt.timedelta(days=60)  # stopped months ago
    assert counts["Scala"] >= 5


def test_two_people_share_a_name_with_different_context(default) -> None:
    records, truth = default
    t = _by_type(records)
    pair = truth.same_name_people
    people = {e.id: e for e in t["entity"] if e.name == pair.name}
    assert set(people) == {pair.colleague_id, pair.neighbour_id}
    assert all(e.entity_type == "person" for e in people.values())
    mentioned = collections.defaultdict(set)
    for mention in t["mention"]:
        if mention.entity in people:
            mentioned[mention.entity].add(mention.block_id)
    assert mentioned[pair.colleague_id] == set(pair.colleague_blocks)
    assert mentioned[pair.neighbour_id] == set(pair.neighbour_blocks)
    facts: dict[str, dict[str, str]] = collections.defaultdict(dict)
    for triple in t["triple"]:
        if triple.subject in people:
            facts[triple.subject][triple.predicate] = triple.object
    assert "works_at" in facts[pair.colleague_id] and "lives_in" in facts[pair.neighbour_id]
    assert facts[pair.colleague_id]["has_role"] != facts[pair.neighbour_id]["has_role"]


def test_feedback_and_entities(default) -> None:
    records, truth = default
    t = _by_type(records)
    values = {f.value for f in t["feedback"]}
    assert values == {1.0, -1.0}
    sums: dict[str, float] = collections.defaultdict(float)
    for f in t["feedback"]:
        sums[f.target_id] += f.value
    assert dict(sums) == truth.feedback_by_block
    types = collections.Counter(e.entity_type for e in t["entity"])
    assert set(types) == {"person", "organization", "place", "project", "tool", "concept"}
    assert len(t["mention"]) > len(t["block"])


def test_triples_use_the_declared_predicates(default) -> None:
    records, _ = default
    entities = {e.id: e for e in _by_type(records)["entity"]}
    for triple in _by_type(records)["triple"]:
        spec = PREDICATES[triple.predicate]
        assert entities[triple.subject].entity_type in spec.subject_types, triple
        if spec.object_type == "literal":
            assert triple.object_id is None
        else:
            assert entities[triple.object_id].entity_type == spec.object_type, triple
    for name, spec in PREDICATES.items():
        assert name == name.lower() and " " not in name
        assert spec.cardinality in ("functional", "multi")
        assert spec.volatility in ("volatile", "stable")


# --------------------------------------------------------------------------- ground truth


def test_ground_truth_timelines_match_the_triples(default) -> None:
    records, truth = default
    triples = {t.id: t for t in _by_type(records)["triple"]}
    timelines = (
        truth.employer_timeline,
        truth.city_timeline,
        truth.role_timeline,
        truth.project_status_timeline,
    )
    for timeline in timelines:
        for span, following in zip(timeline, [*timeline[1:], None], strict=True):
            assert span.valid_to == (following.valid_from if following else None)
            for triple_id in span.triple_ids:
                triple = triples[triple_id]
                assert triple.object_id == span.entity_id
            assert triples[span.triple_ids[0]].valid_at == span.valid_from
            assert triples[span.triple_ids[0]].object == span.value
    mid = truth.employer_timeline[1].valid_from + dt.timedelta(days=1)
    assert truth.employer_at(mid) == truth.employer_timeline[1].value
    assert truth.city_at(truth.end) == truth.city_timeline[0].value
    assert truth.project_status_at(truth.end) == "shipped"
    owner_roles = sorted(
        (t for t in triples.values() if t.subject == truth.owner_id and t.predicate == "has_role"),
        key=lambda t: t.valid_at,
    )
    assert [t.object for t in owner_roles] == [s.value for s in truth.role_timeline]


def test_jsonl_writer_counts_lines(tmp_path: Path) -> None:
    history = DemoHistory(DemoConfig(sessions=15, days=20, end=END))
    path = tmp_path / "demo.jsonl"
    count = write_jsonl(history.records(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert count == len(lines) > 15
    assert all(json.loads(line)["type"] for line in lines)
    buffer = io.StringIO()
    assert write_jsonl(history.records(), buffer) == count
    assert buffer.getvalue() == path.read_text(encoding="utf-8")


def test_config_rejects_a_future_end_and_defaults_to_the_hour() -> None:
    with pytest.raises(ValueError, match="future"):
        generate(DemoConfig(end=utcnow() + dt.timedelta(days=3)))
    with pytest.raises(ValueError):
        DemoConfig(sessions=0)
    truth = DemoHistory(DemoConfig(sessions=12, days=10)).truth
    assert truth.end.minute == truth.end.second == truth.end.microsecond == 0


def test_small_histories_still_work() -> None:
    for sessions, days in ((1, 1), (5, 3), (30, 10)):
        history = DemoHistory(DemoConfig(sessions=sessions, days=days, end=END))
        records: list[Any] = list(history.records())
        assert sum(r.type == "session" for r in records) == sessions


# --------------------------------------------------------------------------- scale


def test_scale_grows_proportionally() -> None:
    sessions = 2_000
    history = DemoHistory(DemoConfig(sessions=sessions, end=END))
    started = time.perf_counter()
    counts: collections.Counter[str] = collections.Counter()
    for record in history.records():
        counts[record.type] += 1  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - started
    total = sum(counts.values())
    print(
        f"\n{sessions} sessions: {total} records in {elapsed:.1f}s = {total / elapsed:,.0f} records/s"
    )
    print(dict(counts))
    assert counts["session"] == sessions
    # At 10,000 sessions these rates give >= 100k blocks, >= 20k entities, >= 200k triples.
    assert counts["block"] >= 10.1 * sessions
    assert counts["entity"] >= 2.1 * sessions
    assert counts["triple"] >= 20.5 * sessions
    assert counts["mention"] >= counts["block"]
    assert counts["recall"] >= sessions
    assert len(history.truth.near_duplicate_groups) >= sessions * 0.04
    assert len(history.truth.recall_gaps) >= sessions // 70


def test_the_move_away_is_told_only_after_the_move_back(default) -> None:
    records, truth = default
    triples = {t.id: t for t in _by_type(records)["triple"]}
    late = triples[truth.late_move.triple_id]
    back = triples[truth.city_timeline[2].triple_ids[0]]
    assert late.object == truth.city_timeline[1].value == truth.late_move.value
    assert late.valid_at < back.valid_at < back.created_at < late.created_at


def test_an_early_memory_is_asked_about_lately_and_its_twin_never() -> None:
    records, truth = generate(DemoConfig(sessions=120, days=90, seed=3, end=END))
    recalls = [r for r in records if r.type == "recall"]
    assert truth.reinforced_block and truth.untouched_twin
    assert truth.reinforced_block.split("_")[:3] == truth.untouched_twin.split("_")[:3]
    returned = [r for r in recalls if truth.reinforced_block in r.result_ids]
    since = truth.end - dt.timedelta(days=28)
    assert sum(r.created_at >= since for r in returned) >= 10
    assert not any(truth.untouched_twin in r.result_ids for r in recalls)
    assert truth.untouched_twin not in truth.feedback_by_block
