"""Point-in-time queries on both backends: valid time, store time, names, and the demo's truth."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memvault.ingest import ingest_file
from memvault.judge import HeuristicJudge, ScriptedJudge
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.temporal import (
    AmbiguousSubjectError,
    FactAt,
    SubjectNotFoundError,
    apply_conflict_plan,
    asof,
    bitemporal_overlaps,
    data_loss_violations,
    grounding_violations,
    plan_conflicts,
)
from memvault_demo import DemoConfig, GroundTruth, generate, write_jsonl
from memvault_demo.generator import Span
from tests.store.temporal_history import NOW, History, when

END = min(dt.datetime(2026, 11, 1), utcnow().replace(hour=0, minute=0, second=0, microsecond=0))


def _objects(facts: list[FactAt]) -> list[str]:
    return sorted(f.object for f in facts)


def _jobs(store: Store, tmp_path: Path) -> History:
    h = History()
    h.entity("ada", "Ada Lovelace")
    h.entity("acme", "Acme", "organization")
    h.entity("globex", "Globex", "organization")
    h.fact(
        "a", "ada", "works_at", "Acme", object_id="acme", valid="2024-01-01", created="2024-01-05"
    )
    h.fact("a2", "ada", "works_at", "ACME.", object_id="acme", valid="2024-09-01",
           created="2024-09-01")  # fmt: skip
    # Learned late: the change to Globex happened in June, the store heard of it in September.
    h.fact("g", "ada", "works_at", "Globex", object_id="globex", valid="2025-06-01",
           created="2025-09-01")  # fmt: skip
    h.ingest(store, tmp_path)
    return h


def _dream(store: Store) -> None:
    plan = plan_conflicts(store, ScriptedJudge({}), now=NOW)
    apply_conflict_plan(store, plan, "dream-asof")


def test_valid_time_answers_are_the_same_before_and_after_a_dream(
    store: Store, tmp_path: Path
) -> None:
    _jobs(store, tmp_path)
    questions = [when("2023-06-01"), when("2024-03-01"), when("2024-10-01"), when("2025-07-01")]
    expected = [[], ["Acme"], ["Acme"], ["Globex"]]
    before = [asof(store, "ada", "works_at", at) for at in questions]
    assert [_objects(f) for f in before] == expected
    # The restatement is shown once, standing for both statements.
    assert before[2][0].triple_id == "a" and before[2][0].merged_ids == ["a2"]
    _dream(store)
    after = [asof(store, "ada", "works_at", at) for at in questions]
    assert [_objects(f) for f in after] == expected
    assert after[2][0].merged_ids == ["a2"] and after[3][0].invalid_at is None
    assert after[2][0].invalid_at == when("2025-06-01")


def test_known_at_answers_what_the_store_believed_then(store: Store, tmp_path: Path) -> None:
    _jobs(store, tmp_path)
    july = when("2025-07-01")
    for dreamt in (False, True):
        if dreamt:
            _dream(store)
        # In August the store did not know of the move yet: it believed Acme still held.
        assert _objects(asof(store, "ada", "works_at", july, known_at=when("2025-08-01"))) == [
            "Acme"
        ]
        assert _objects(asof(store, "ada", "works_at", july, known_at=when("2025-10-01"))) == [
            "Globex"
        ]
        assert asof(store, "ada", "works_at", july, known_at=when("2023-12-01")) == []
        assert _objects(asof(store, "ada", "works_at", july)) == ["Globex"]


def test_subjects_by_name_and_a_clear_error_for_an_ambiguous_one(
    store: Store, tmp_path: Path
) -> None:
    h = _jobs(store, tmp_path)
    h.entity("sam_1", "Sam Lee")
    h.entity("sam_2", "Sam Lee")
    h.ingest(store, tmp_path)
    facts = asof(store, "ada lovelace", "works_at", dt.date(2025, 7, 1))
    assert _objects(facts) == ["Globex"] and facts[0].subject == "Ada Lovelace"
    assert FactAt.model_validate_json(facts[0].model_dump_json()) == facts[0]
    assert _objects(asof(store, "ada", at=dt.datetime(2025, 7, 1, tzinfo=dt.UTC))) == ["Globex"]
    assert _objects(asof(store, "ada", "works_at", "2024-03-01T12:00")) == ["Acme"]
    with pytest.raises(AmbiguousSubjectError) as err:
        asof(store, "Sam Lee", "works_at", when("2025-01-01"))
    assert "sam_1" in str(err.value) and "sam_2" in str(err.value)
    assert [c[0] for c in err.value.candidates] == ["sam_1", "sam_2"]
    with pytest.raises(SubjectNotFoundError):
        asof(store, "Nobody", at=when("2025-01-01"))


# --------------------------------------------------------------------------- the demo's truth


def _check_truth(store: Store, truth: GroundTruth) -> list[str]:
    """Ask around every change of the timelines (and every ten days between) against the truth."""
    timelines = [
        ("works_at", truth.owner_id, truth.employer_timeline),
        ("lives_in", truth.owner_id, truth.city_timeline),
        ("has_role", truth.owner_id, truth.role_timeline),
        ("project_status", truth.project_id, truth.project_status_timeline),
    ]
    wrong = []
    for predicate, subject, spans in timelines:
        days = {
            truth.start + dt.timedelta(days=k)
            for k in range(-3, (truth.end - truth.start).days, 10)
        }
        for span in spans:
            for edge in (span.valid_from, span.valid_to):
                if edge is not None and truth.start - dt.timedelta(days=3) <= edge < truth.end:
                    days |= {edge - dt.timedelta(seconds=1), edge, edge + dt.timedelta(hours=12)}
        for day in sorted(days):
            expected = _value_at(spans, day)
            got = _objects(asof(store, subject, predicate, day))
            if got != ([expected] if expected else []):
                wrong.append(f"{day:%Y-%m-%d %H:%M} {predicate}: {got} != {expected}")
    return wrong


def _value_at(spans: list[Span], day: dt.datetime) -> str | None:
    for span in spans:
        if span.valid_from <= day and (span.valid_to is None or day < span.valid_to):
            return span.value
    return None


def test_demo_history_answers_match_the_ground_truth_after_any_number_of_dreams(
    store: Store, tmp_path: Path
) -> None:
    records, truth = generate(DemoConfig(sessions=60, days=90, end=END))
    path = tmp_path / "demo.jsonl"
    write_jsonl(records, path)
    ingest_file(store, path)
    assert _check_truth(store, truth) == []
    judge = HeuristicJudge()
    plan = plan_conflicts(store, judge)
    counts = apply_conflict_plan(store, plan, "dream-demo-1")
    assert counts["supersede"] >= 8 and counts["merge"] >= 1
    late = store.get_row("triples", truth.late_fact.triple_id)
    assert late is not None and late["status"] == "superseded"  # history, not current
    restated = store.get_row("triples", truth.restated_fact.restated_id)
    assert restated is not None and restated["superseded_by"] == truth.restated_fact.original_id
    assert _check_truth(store, truth) == []
    # A second dream right after finds nothing and asks nothing.
    second = HeuristicJudge()
    assert plan_conflicts(store, second).is_empty() and second.stats.heuristic_answers == 0
    for check in (
        data_loss_violations(store),
        bitemporal_overlaps(store),
        grounding_violations(store),
    ):
        assert check.is_empty(), check
