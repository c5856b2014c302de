"""An incremental night's dream checks: the same findings as the whole-store pass on the facts
that changed, read from those facts (and their chains and groups), not from the store; and the
scope itself: every fact on the first dream, on demand and once a week, else what the audit log
names since the last dream's checks."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from memvault.dream.check_scope import STAGE, check_scope
from memvault.dream.report import record_stage
from memvault.judge import HeuristicJudge, ScriptedJudge
from memvault.quality import validate_triples
from memvault.store import Store
from memvault.temporal import (
    apply_conflict_plan,
    bitemporal_overlaps,
    data_loss_violations,
    grounding_violations,
    plan_conflicts,
)
from tests.store.temporal_history import NOW, History

#: Facts about other people that no check below is about: the store a scoped check must not read.
BYSTANDERS = 120


def _history(extra: int = BYSTANDERS) -> History:
    h = History()
    h.entity("ada", "Ada Lovelace")
    h.entity("bob", "Bob")
    h.entity("acme", "Acme", "organization")
    h.entity("globex", "Globex", "organization")
    h.entity("london", "London", "place")
    h.fact("a", "ada", "works_at", "Acme", object_id="acme", valid="2024-01-01",
           created="2024-01-02")  # fmt: skip
    h.fact("a2", "ada", "works_at", "ACME", object_id="acme", valid="2024-05-01",
           created="2024-05-02")  # fmt: skip
    h.fact("g", "ada", "works_at", "Globex", object_id="globex", valid="2025-01-01",
           created="2025-01-02")  # fmt: skip
    # Bob's two employers overlap and stay so: a finding outside Ada's facts.
    h.fact("b1", "bob", "works_at", "Acme", object_id="acme", valid="2024-01-01",
           created="2024-01-02")  # fmt: skip
    h.fact("b2", "bob", "works_at", "Globex", object_id="globex", valid="2024-02-01",
           created="2024-02-02")  # fmt: skip
    h.fact("range", "bob", "works_at", "London", object_id="london", created="2024-03-02")
    for i in range(extra):
        person = h.entity(f"p{i}", f"Person {i}")
        h.fact(f"x{i}", person, "works_at", "Acme", object_id="acme", created="2024-06-02")
    return h


@pytest.fixture
def broken(store: Store, tmp_path: Path) -> Store:
    """Ada's facts consolidated (a2 merged into a, a superseded by g), then broken behind the
    store's back: a's lineage and date lost, g deleted; Bob's facts never consolidated."""
    _history().ingest(store, tmp_path)
    ada = store.fetch("SELECT id FROM triples WHERE subject_id = 'ada'")
    assert len(ada) == 3
    # Consolidate Ada only: keep Bob's overlap as a finding outside the scopes below.
    store.backend.execute("UPDATE triples SET status = 'held' WHERE subject_id <> 'ada'")
    plan = plan_conflicts(store, ScriptedJudge({}), now=NOW)
    apply_conflict_plan(store, plan, "dream-checks")
    store.backend.execute(
        "UPDATE triples SET status = 'active' WHERE subject_id <> 'ada' AND status = 'held'"
    )
    execute = store.backend.execute
    execute("UPDATE triples SET lineage = '[]' WHERE id = 'a'")
    execute("UPDATE triples SET invalid_at = NULL WHERE id = 'a'")
    execute("DELETE FROM triples WHERE id = 'g'")
    return store


def _pairs(frame: pl.DataFrame) -> set[tuple[Any, ...]]:
    return {tuple(r.values()) for r in frame.to_dicts()}


@pytest.mark.parametrize(
    ("scope", "covered"),
    [
        (["a"], {"a", "a2"}),  # a2 is merged into a: a's change is a2's problem too
        (["a2"], {"a2"}),
        (["g"], {"g"}),
        (["b1"], {"b1"}),
        ([], set()),
    ],
)
def test_scoped_data_loss_is_the_whole_pass_on_the_changed_facts(
    broken: Store, scope: list[str], covered: set[str]
) -> None:
    whole = data_loss_violations(broken)
    assert {r["triple_id"] for r in whole.to_dicts()} == {"a", "a2", "g"}
    expected = whole.filter(pl.col("triple_id").is_in(sorted(covered)))
    assert _pairs(data_loss_violations(broken, scope)) == _pairs(expected)


@pytest.mark.parametrize("scope", [["a"], ["b2"], ["x3"], ["a", "b1"]])
def test_scoped_overlaps_and_grounding_are_the_whole_pass_on_the_changed_groups(
    broken: Store, scope: list[str]
) -> None:
    subjects = {
        r[0]: r[1] for r in broken.fetch("SELECT id, subject_id || '|' || predicate FROM triples")
    }
    groups = {subjects[t] for t in scope if t in subjects}
    whole = bitemporal_overlaps(broken)
    assert ("b1", "b2") in {(r["triple_a"], r["triple_b"]) for r in whole.to_dicts()}
    expected = whole.filter(
        (pl.col("subject_id") + "|" + pl.col("predicate")).is_in(sorted(groups))
    )
    assert _pairs(bitemporal_overlaps(broken, None, scope)) == _pairs(expected)

    grounded = grounding_violations(broken)
    assert "range" in set(grounded["triple_id"].to_list())
    expected = grounded.filter(pl.col("triple_id").is_in(scope))
    assert _pairs(grounding_violations(broken, None, scope)) == _pairs(expected)
    assert grounding_violations(broken, None, ["range"])["triple_id"].to_list() == ["range"]


def test_scoped_expectations_read_only_the_changed_facts(broken: Store) -> None:
    assert validate_triples(broken, []).rows == 0  # nothing changed: nothing validated
    scoped = validate_triples(broken, ["x1", "b1", "gone"])
    assert (scoped.success, scoped.rows) == (True, 2)
    undated = validate_triples(broken, ["a"])  # superseded, its date lost: the suite fails
    assert (undated.success, undated.rows) == (False, 1)
    assert validate_triples(broken).rows == broken.counts(("triples",))["triples"]


def test_a_scoped_plan_is_the_whole_plan_of_the_changed_groups(
    broken: Store, tmp_path: Path
) -> None:
    """The idempotency check plans again only the groups that changed: their decisions are the
    whole plan's decisions about them (here Bob's two employers at once, never consolidated),
    and Cleo's group, which did not change, is not read."""
    cleo = History()
    cleo.entity("cleo", "Cleo")
    cleo.fact("c1", "cleo", "works_at", "Acme", object_id="acme", valid="2024-01-01",
              created="2024-01-02")  # fmt: skip
    cleo.fact("c2", "cleo", "works_at", "Globex", object_id="globex", valid="2024-03-01",
              created="2024-03-02")  # fmt: skip
    cleo.ingest(broken, tmp_path)

    def decisions(ids: list[str] | None) -> set[str]:
        plan = plan_conflicts(broken, HeuristicJudge(), now=NOW, triple_ids=ids)
        return {a.describe() for a in plan.actions}

    whole = plan_conflicts(broken, HeuristicJudge(), now=NOW)
    about_bob = {a.describe() for a in whole.actions if a.subject_id == "bob"}
    assert about_bob and any(a.subject_id == "cleo" for a in whole.actions)
    assert decisions(["b2"]) == about_bob
    assert decisions(["x1"]) == set()  # a group of one fact: nothing to plan
    assert decisions([]) == set()
    # The facts it reads: Bob's employers (b1, b2, range), not Ada's group too.
    scoped = plan_conflicts(broken, HeuristicJudge(), now=NOW, triple_ids=["b2"])
    assert scoped.stats["candidate_triples"] == 3 < whole.stats["candidate_triples"]


@contextmanager
def _rows_read(store: Store) -> Iterator[list[int]]:
    """Count the rows the store hands back while the block runs."""
    counted: list[int] = []
    fetch, fetch_df = store.fetch, store.fetch_df

    def counting_fetch(*args: Any, **kwargs: Any) -> Any:
        rows = fetch(*args, **kwargs)
        counted.append(len(rows))
        return rows

    def counting_fetch_df(*args: Any, **kwargs: Any) -> Any:
        frame = fetch_df(*args, **kwargs)
        counted.append(frame.height)
        return frame

    store.fetch, store.fetch_df = counting_fetch, counting_fetch_df  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        store.fetch, store.fetch_df = fetch, fetch_df  # type: ignore[method-assign]


def test_a_scoped_pass_reads_the_change_not_the_store(broken: Store) -> None:
    def every_check(ids: list[str] | None) -> None:
        data_loss_violations(broken, ids)
        bitemporal_overlaps(broken, None, ids)
        grounding_violations(broken, None, ids)

    with _rows_read(broken) as whole:
        every_check(None)
    with _rows_read(broken) as scoped:
        every_check(["a", "b1"])
    assert sum(whole) > 2 * BYSTANDERS  # every fact, twice at least
    assert sum(scoped) <= 12  # a, a2 (merged into it), b1 and their groups' few facts


# -- the scope: what the audit log names since the last dream's checks ----------------------


def _dream_run(store: Store, scope: dict[str, Any], *, days_ago: float = 0.0) -> str:
    run_id = store.begin_run("dream")
    record_stage(store, run_id, STAGE, scope)
    store.finish_run(run_id, "succeeded")
    if days_ago:
        store.backend.execute(
            "UPDATE runs SET started_at = started_at - :d WHERE id = :id",
            {"d": dt.timedelta(days=days_ago), "id": run_id},
        )
    return run_id


def test_the_scope_is_every_fact_first_then_the_facts_changed_since(
    store: Store, tmp_path: Path
) -> None:
    _history(extra=3).ingest(store, tmp_path)
    first = check_scope(store, "this-dream")
    assert first.full and first.reason == "no earlier dream recorded what it checked"
    _dream_run(store, first.figures())
    assert check_scope(store, "this-dream").triple_ids == []  # nothing changed since

    later = History()
    later.entity("cleo", "Cleo")
    later.fact("c", "cleo", "works_at", "Acme", object_id="acme", created="2024-07-02")
    later.ingest(store, tmp_path)
    store.backend.execute("UPDATE triples SET confidence = 0.5 WHERE id = 'x1'")  # not audited
    scope = check_scope(store, "this-dream")
    assert scope.triple_ids == ["c"]
    assert scope.since_audit_id == first.audit_id
    assert json.loads(json.dumps(scope.figures()))["scope"] == "changed"

    assert check_scope(store, "this-dream", full=True).full
    assert check_scope(store, "this-dream", full_every_days=0).full
    week_later = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(days=8)
    assert check_scope(store, "this-dream", now=week_later).reason == (
        "no whole-store check in the last 7 days"
    )


def test_the_scope_counts_a_fact_whose_entity_changed(store: Store, tmp_path: Path) -> None:
    _history(extra=3).ingest(store, tmp_path)
    _dream_run(store, check_scope(store, "this-dream").figures())
    with store.mutation("test-retype", "test") as m:
        m.update("entities", "london", {"entity_type": "organization"}, action="retype")
    assert check_scope(store, "this-dream").triple_ids == ["range"]
