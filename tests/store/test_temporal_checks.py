"""The temporal checks find deliberately broken data, on both backends, and pass on clean data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memvault.judge import ScriptedJudge
from memvault.store import Store
from memvault.temporal import (
    apply_conflict_plan,
    bitemporal_overlaps,
    data_loss_violations,
    grounding_violations,
    plan_conflicts,
)
from tests.store.temporal_history import NOW, History


def _world(h: History) -> None:
    h.entity("ada", "Ada Lovelace")
    h.entity("acme", "Acme", "organization")
    h.entity("globex", "Globex", "organization")
    h.entity("london", "London", "place")
    h.entity("flux", "Flux", "project")


@pytest.fixture
def jobs(store: Store, tmp_path: Path) -> Store:
    h = History()
    _world(h)
    h.fact(
        "a", "ada", "works_at", "Acme", object_id="acme", valid="2024-01-01", created="2024-01-02"
    )
    h.fact("a2", "ada", "works_at", "ACME", object_id="acme", valid="2024-05-01",
           created="2024-05-02")  # fmt: skip
    h.fact("g", "ada", "works_at", "Globex", object_id="globex", valid="2025-01-01",
           created="2025-01-02")  # fmt: skip
    h.ingest(store, tmp_path)
    return store


def _dream(store: Store) -> None:
    apply_conflict_plan(store, plan_conflicts(store, ScriptedJudge({}), now=NOW), "dream-checks")


def test_overlapping_functional_facts_are_found_until_resolved(jobs: Store) -> None:
    found = bitemporal_overlaps(jobs)
    pairs = {(r["triple_a"], r["triple_b"]): r["problem"] for r in found.to_dicts()}
    assert pairs == {
        ("a", "a2"): "the same object stated twice over the same time (not merged)",
        ("a", "g"): "different objects hold at the same time",
        ("a2", "g"): "different objects hold at the same time",
    }
    _dream(jobs)
    assert bitemporal_overlaps(jobs).is_empty()
    assert data_loss_violations(jobs).is_empty()


def test_data_loss_finds_lost_lineage_undated_retirement_and_deleted_rows(jobs: Store) -> None:
    _dream(jobs)
    assert data_loss_violations(jobs).is_empty()
    execute = jobs.backend.execute
    # A merged triple whose survivor forgot it; a superseded one without its date; a deleted one.
    execute("UPDATE triples SET lineage = '[]' WHERE id = 'a'")
    execute("UPDATE triples SET invalid_at = NULL WHERE id = 'a'")
    execute("DELETE FROM triples WHERE id = 'g'")
    problems = {(r["triple_id"], r["problem"]) for r in data_loss_violations(jobs).to_dicts()}
    assert problems == {
        ("a", "superseded without invalid_at"),
        ("a2", "merged into a, whose lineage lacks its id and wording"),
        ("g", "ingested triple no longer exists"),
    }


def test_data_loss_finds_a_broken_merge_chain(jobs: Store) -> None:
    jobs.backend.execute(
        "UPDATE triples SET status = 'merged', superseded_by = 'gone' WHERE id = 'g'"
    )
    lineage = json.dumps([{"id": "a2", "object": "ACME"}])
    jobs.backend.execute(
        "UPDATE triples SET status = 'merged', superseded_by = 'a' WHERE id = 'a2'"
    )
    jobs.backend.execute("UPDATE triples SET lineage = :l WHERE id = 'a'", {"l": lineage})
    problems = {(r["triple_id"], r["problem"]) for r in data_loss_violations(jobs).to_dicts()}
    assert problems == {("g", "merged, but its chain of survivors is broken or loops")}


def test_grounding_violations_name_each_problem(store: Store, tmp_path: Path) -> None:
    h = History()
    _world(h)
    h.fact("ok", "ada", "works_at", "Acme", object_id="acme", created="2024-01-02")
    h.fact("unknown", "ada", "moved_to", "London", object_id="london", created="2024-01-02")
    h.fact("domain", "acme", "lives_in", "London", object_id="london", created="2024-01-02")
    h.fact("literal", "ada", "works_at", "some startup", created="2024-01-02")
    h.fact("range", "ada", "works_at", "London", object_id="london", created="2024-01-02")
    h.fact("entity", "ada", "has_role", "Acme", object_id="acme", created="2024-01-02")
    h.fact("allowed", "flux", "project_status", "Done!", created="2024-01-02")
    h.fact("fine", "flux", "project_status", "Shipped.", created="2024-01-03")
    h.ingest(store, tmp_path)
    found = {r["triple_id"]: r["problem"] for r in grounding_violations(store).to_dicts()}
    assert found == {
        "unknown": "unknown predicate 'moved_to' (not in the grounding definitions)",
        "domain": "subject type 'organization' not in domain (person)",
        "literal": "literal 'some startup' where an entity of type organization is required",
        "range": "object type 'place' not in range (organization)",
        "entity": "object is the entity acme where a literal value is expected",
        "allowed": "value 'Done!' not allowed (planning, active, paused, shipped)",
    }
