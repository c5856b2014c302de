"""What a judge may change is bounded by the data, whatever it says and however sure a second
judgment is: a MERGE joins only restatements of one value, a SUPERSEDE only where the
predicate's definition allows one value to end where another begins. The refusals are
counted and nothing of it reaches the store (DuckDB and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memvault.embed import make_embedder
from memvault.errors import MemvaultError
from memvault.judge import ScriptedJudge
from memvault.lint.run import begin_lint, run_confirm, run_semantic
from memvault.lint.semantic import ContradictionRequest
from memvault.review import ReviewPolicy, decide, list_items
from memvault.store import Store
from memvault.temporal import apply_conflict_plan, plan_conflicts
from memvault.temporal.conflict.judge import (
    ConflictReply,
    ConflictStatement,
    ResolveConflictRequest,
    merge_refusal,
)
from memvault.temporal.conflict.verdicts import verdict_problem
from memvault.temporal.grounding import Grounding
from tests.helpers import table_dump
from tests.store.temporal_history import CONFIRM, NOW, History, when

RUN = "dream-bounds-0001"
#: The review rules let a confirmed change through, so only the data check stands in the way.
OPEN = ReviewPolicy(impact_thresholds={"conflict": 0.99, "lint": 0.99})
#: Audit actions that would mean a judged merge or supersede touched a fact.
CHANGES = ("merge", "absorb", "supersede", "retime")


def _changes_audited(store: Store) -> list[tuple[str, str]]:
    rows = store.fetch(
        "SELECT action, target_id FROM audit_log WHERE target_table = 'triples' "
        "AND action = ANY(CAST(:a AS TEXT[])) ORDER BY target_id",
        {"a": list(CHANGES)},
    )
    return [(r[0], r[1]) for r in rows]


def _merge_everything(request: ResolveConflictRequest) -> dict[str, Any]:
    """A judge that obeys a planted instruction: every pair is 'the same thing'."""
    return {"verdict": "MERGE", "confidence": 0.97, "reason": "the same thing, worded anew",
            "merged_object": request.a.object}  # fmt: skip


# --------------------------------------------------------------------------- MERGE (dream)


def _attacks(h: History) -> None:
    h.entity("ada", "Ada Lovelace")
    h.entity("evilcorp", "EvilCorp", "organization")
    # Two employers stated for the same day (a tie: judged); only one is an entity.
    h.fact("w_acme", "ada", "works_at", "Acme", valid="2024-01-01", created="2024-01-02")
    h.fact("w_evil", "ada", "works_at", "EvilCorp", object_id="evilcorp", valid="2024-01-01",
           created="2024-02-01")  # fmt: skip
    # Two titles for the same day.
    h.fact("r1", "ada", "has_role", "staff engineer", valid="2025-01-01", created="2025-01-02")
    h.fact("r2", "ada", "has_role", "principal engineer and tech lead", valid="2025-01-01",
           created="2025-01-20")  # fmt: skip
    # Two interests that share a word.
    h.fact("i1", "ada", "interested_in", "stream processing", created="2024-07-01")
    h.fact("i2", "ada", "interested_in", "batch processing systems", created="2024-08-01")


def test_a_merge_of_different_values_is_refused_whoever_confirms_it(
    store: Store, tmp_path: Path
) -> None:
    h = History()
    _attacks(h)
    h.ingest(store, tmp_path)
    before = table_dump(store, "triples")
    judge = ScriptedJudge({**CONFIRM, "resolve_conflict": _merge_everything})
    plan = plan_conflicts(store, judge, now=NOW, policy=OPEN)
    applied = apply_conflict_plan(store, plan, RUN)
    assert applied == Counter(review=3)
    summary = plan.summary()
    assert summary["judged"] == 3
    assert summary["refused_merges"] == 3 and summary["invalid_verdicts"] == 3
    assert not judge.requests_for("confirm_change"), "refused before a second judgment is asked"
    assert table_dump(store, "triples") == before  # every fact as it was, all still current
    assert {r["status"] for r in before} == {"active"}
    assert _changes_audited(store) == []
    reasons = {r["target_id"]: r["reason"] for r in table_dump(store, "review_queue")}
    assert len(reasons) == 3
    assert all("not the same value" in why for why in reasons.values()), reasons
    # A person who approves the proposal anyway is told why it cannot be applied.
    item = next(i for i in list_items(store) if i.target_id in ("r1", "r2"))
    with pytest.raises(MemvaultError, match="not the same value"):
        decide(store, item.id, "correct")
    assert table_dump(store, "triples") == before and _changes_audited(store) == []


def test_a_genuine_restatement_is_still_merged(store: Store, tmp_path: Path) -> None:
    h = History()
    h.entity("ada", "Ada Lovelace")
    h.entity("globex", "Globex", "organization", aliases=["GX Systems Group"])
    h.fact("m1", "ada", "works_at", "ACME Corporation", valid="2023-01-01", created="2023-01-02")
    h.fact("m2", "ada", "works_at", "Acme Corp", valid="2023-01-01", created="2023-03-01")
    # A literal wording and an entity, the same thing by the entity's alias.
    h.fact("g1", "ada", "works_at", "Globex", object_id="globex", valid="2024-06-01",
           created="2024-06-02")  # fmt: skip
    h.fact("g2", "ada", "works_at", "GX Systems Group", valid="2024-06-01", created="2024-06-20")
    h.ingest(store, tmp_path)
    judge = ScriptedJudge({**CONFIRM, "resolve_conflict": _merge_everything})
    plan = plan_conflicts(store, judge, now=NOW, policy=OPEN)
    assert plan.summary()["refused_merges"] == 0
    applied = apply_conflict_plan(store, plan, RUN)
    assert applied["merge"] == 2 and "refused_merges" not in applied
    loser = store.get_row("triples", "m2")
    assert loser is not None and (loser["status"], loser["superseded_by"]) == ("merged", "m1")
    survivor = store.get_row("triples", "m1")
    assert survivor is not None and {e["id"] for e in json.loads(survivor["lineage"])} >= {"m2"}
    assert store.get_row("triples", "g2")["status"] == "merged"  # type: ignore[index]


# --------------------------------------------------------------------------- SUPERSEDE (dream)


def test_a_judged_supersede_of_a_functional_predicate_with_a_later_start_applies(
    store: Store, tmp_path: Path
) -> None:
    h = History()
    h.entity("globex", "Globex", "organization")
    for city in ("paris", "berlin"):
        h.entity(city, city.capitalize(), "place")
    h.fact("hq1", "globex", "located_in", "Paris", object_id="paris", valid="2020-01-01",
           created="2024-05-01")  # fmt: skip
    h.fact("hq2", "globex", "located_in", "Berlin", object_id="berlin", valid="2024-06-01",
           created="2024-06-02")  # fmt: skip
    h.ingest(store, tmp_path)
    moved = {"verdict": "SUPERSEDE", "confidence": 0.95, "reason": "the office moved",
             "newer": "b"}  # fmt: skip
    judge = ScriptedJudge({**CONFIRM, "resolve_conflict": [moved]})
    plan = plan_conflicts(store, judge, now=NOW, policy=OPEN)
    assert plan.summary()["refused_by_definitions"] == 0
    assert apply_conflict_plan(store, plan, RUN) == Counter(supersede=1)
    old = store.get_row("triples", "hq1")
    assert old is not None
    assert (old["status"], old["invalid_at"], old["superseded_by"]) == (
        "superseded", when("2024-06-01"), "hq2"
    )  # fmt: skip


def test_a_judged_supersede_of_a_multi_valued_predicate_is_refused_by_its_definition(
    store: Store, tmp_path: Path
) -> None:
    h = History()
    h.entity("ada", "Ada Lovelace")
    h.fact("i1", "ada", "interested_in", "stream processing", created="2024-07-01")
    h.fact("i2", "ada", "interested_in", "stream processing at scale", created="2024-08-01")
    h.ingest(store, tmp_path)
    before = table_dump(store, "triples")
    retire = {"verdict": "SUPERSEDE", "confidence": 0.95, "reason": "the newer replaces it"}
    judge = ScriptedJudge(
        {**CONFIRM, "resolve_conflict": lambda r: retire | {"newer": "a" if r.a.triple_id == "i2" else "b"}}
    )  # fmt: skip
    plan = plan_conflicts(store, judge, now=NOW, policy=OPEN)
    assert apply_conflict_plan(store, plan, RUN) == Counter(review=1)
    assert plan.summary()["refused_by_definitions"] == 1
    assert table_dump(store, "triples") == before and _changes_audited(store) == []


# --------------------------------------------------------------------------- the lint


def _interests(store: Store, tmp_path: Path) -> None:
    h = History()
    h.entity("ada", "Ada")
    h.fact("d1", "ada", "interested_in", "data attribution", valid="2024-03-01",
           created="2024-03-02")  # fmt: skip
    h.fact("d2", "ada", "interested_in", "data isolation", valid="2024-03-01",
           created="2024-03-05")  # fmt: skip
    h.fact("p1", "ada", "interested_in", "stream processing", valid="2024-04-01",
           created="2024-04-02")  # fmt: skip
    h.fact("p2", "ada", "interested_in", "batch processing systems", valid="2024-05-01",
           created="2024-05-02")  # fmt: skip
    h.ingest(store, tmp_path)


def _obeying(request: ContradictionRequest) -> dict[str, Any]:
    """A first judgment that retires one interest by the other, or merges them."""
    both = {request.a.triple_id, request.b.triple_id}
    later = "a" if request.a.triple_id in ("d2", "p2") else "b"
    resolution = "SUPERSEDE" if both == {"d1", "d2"} else "MERGE"
    return {"contradicts": True, "confidence": 0.95, "reason": "one replaces the other",
            "resolution": resolution, "newer": later}  # fmt: skip


def test_the_lint_applies_no_change_the_definitions_or_the_data_forbid(
    store: Store, tmp_path: Path
) -> None:
    _interests(store, tmp_path)
    before = table_dump(store, "triples")
    judge = ScriptedJudge({"detect_contradiction": _obeying, **CONFIRM})
    since = begin_lint(store, "lint-bounds")
    semantic = run_semantic(store, judge, make_embedder("hashing"), "lint-bounds", since,
                            pairs_per_100=100)  # every similar pair is asked about  # fmt: skip
    proposed = {(p.reply.verdict, p.triple_a, p.triple_b) for p in semantic.proposals}
    assert ("SUPERSEDE", "d1", "d2") in proposed and ("MERGE", "p1", "p2") in proposed
    report, applied = run_confirm(store, judge, "lint-bounds", OPEN)
    assert "supersede" not in applied and "merge" not in applied
    assert report.auto_applied == 0 and report.queued == len(proposed)
    assert table_dump(store, "triples") == before
    assert {r["status"] for r in before} == {"active"}
    assert _changes_audited(store) == []
    figures = store.run("lint-bounds")["cursor"]["stages"]["L4"]  # type: ignore[index]
    assert figures["refused_by_definitions"] >= 1 and figures["refused_merges"] >= 1
    assert (
        figures["invalid_verdicts"] == figures["refused_by_definitions"] + figures["refused_merges"]
    )
    assert not judge.requests_for("confirm_change"), "refused before a second judgment"


# --------------------------------------------------------------------------- the rule itself


def _s(
    object_: str, object_id: str | None = None, names: tuple[str, ...] = ()
) -> ConflictStatement:
    return ConflictStatement(triple_id=object_, object=object_, object_id=object_id,
                             created_at=when("2024-01-01"), confidence=0.9, status="active",
                             object_names=list(names))  # fmt: skip


@pytest.mark.parametrize(
    ("a", "b", "restatement"),
    [
        ("ACME Corporation", "Acme Corp", True),
        ("Acme, Inc.", "acme", True),
        ("the Acme company", "ACME", True),
        ("stream processing", "Stream-Processing", True),
        ("stream processing", "stream processing topics", True),
        ("stream processing", "stream processing systems", False),  # software, not the field
        ("dark mode in the editor", "dark mode in the editors", True),
        ("principal engineer", "staff engineer", False),
        ("principal engineer and tech lead", "staff engineer", False),
        ("senior staff engineer", "staff engineer", False),
        ("batch processing systems", "stream processing", False),
        ("data attribution", "data isolation", False),
        ("EvilCorp", "Acme", False),
        ("co founder", "founder", False),
        ("coffee", "no coffee", False),
    ],
)
def test_what_counts_as_a_restatement(a: str, b: str, restatement: bool) -> None:
    assert (merge_refusal(_s(a), _s(b)) is None) == restatement
    assert (merge_refusal(_s(b), _s(a)) is None) == restatement


def test_entities_are_compared_by_id_then_by_name_and_aliases() -> None:
    assert merge_refusal(_s("Sam Lee", "sam_1"), _s("Sam Lee", "sam_2")) is not None
    assert merge_refusal(_s("Acme", "acme"), _s("ACME", "acme")) is None
    gx = _s("Globex", "globex", ("Globex", "GX"))
    assert merge_refusal(gx, _s("GX")) is None
    assert merge_refusal(_s("EvilCorp", "evil", ("EvilCorp",)), _s("Acme")) is not None


def _request(predicate: str, a: ConflictStatement, b: ConflictStatement) -> ResolveConflictRequest:
    definition = Grounding.load().get(predicate)
    assert definition is not None
    return ResolveConflictRequest(subject="Ada", predicate=definition.as_dict(), why_asked="t",
                                  a=a, b=b)  # fmt: skip


@pytest.mark.parametrize(
    ("predicate", "old_valid", "new_valid", "allowed"),
    [
        ("works_at", "2024-01-01", "2024-06-01", True),  # one value at a time, later start
        ("works_at", "2024-01-01", "2024-01-01", True),  # a same-day correction of one value
        ("interested_in", "2024-01-01", "2024-06-01", True),  # several values, strictly later
        ("interested_in", "2024-01-01", "2024-01-01", False),  # would be valid for no time
        ("interested_in", None, "2024-06-01", False),  # undated: no start to end it at
        ("works_at", "2024-06-01", "2024-01-01", False),  # before it began
    ],
)
def test_a_supersede_is_bounded_by_the_predicate_definition(
    predicate: str, old_valid: str | None, new_valid: str, allowed: bool
) -> None:
    def stated(tid: str, valid: str | None) -> ConflictStatement:
        return ConflictStatement(triple_id=tid, object=tid, created_at=dt.datetime(2024, 1, 1),
                                 valid_at=when(valid) if valid else None, confidence=0.9,
                                 status="active")  # fmt: skip

    reply = ConflictReply(verdict="SUPERSEDE", confidence=0.99, reason="x", newer="b")
    problem, newer = verdict_problem(
        reply, _request(predicate, stated("old", old_valid), stated("new", new_valid))
    )
    assert (problem is None) == allowed and (newer == "b") == allowed
