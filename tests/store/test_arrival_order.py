"""Point-in-time answers do not depend on whether the history arrived at once or night by night.

A fact stated again after an intervening value (A, then B, then A) must keep
its three spans even when a dream merged the second A into the first before a
late statement about B arrived.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import memvault
from memvault.ingest import ingest_file
from memvault.judge import HeuristicJudge, ScriptedJudge
from memvault.store import Store
from memvault.temporal import apply_conflict_plan, asof, data_loss_violations, plan_conflicts
from memvault.temporal.checks import bitemporal_overlaps
from memvault.temporal.grounding import Grounding
from memvault_demo.generator import DemoConfig, by_night, generate, write_jsonl
from tests.helpers import TEST_NOW
from tests.store.temporal_history import NOW, History, when

NO_CALLS: dict[str, Any] = {}


def _consolidate(store: Store, judge: Any = None, run: str = "dream-order-1") -> Counter[str]:
    plan = plan_conflicts(store, judge or ScriptedJudge(NO_CALLS), now=NOW)
    return apply_conflict_plan(store, plan, run)


def _answers(store: Store, subject: str, predicate: str, probes: list[dt.datetime]) -> list:
    return [[f.object for f in asof(store, subject, predicate, at)] for at in probes]


def _moves(h: History) -> None:
    h.entity("ada", "Ada Lovelace")
    h.entity("london", "London", "place")
    h.entity("paris", "Paris", "place")


PROBES = [when(d) for d in ("2024-02-01", "2024-05-01", "2024-08-01", "2024-10-01", "2025-06-01")]
EXPECTED = [["London"], ["Paris"], ["Paris"], ["London"], ["London"]]


def test_a_late_statement_between_two_restatements_splits_the_merged_run(
    store: Store, tmp_path: Path
) -> None:
    h = History()
    _moves(h)
    h.fact("l1", "ada", "lives_in", "London", object_id="london", valid="2024-01-01",
           created="2024-01-01")  # fmt: skip
    h.fact("l2", "ada", "lives_in", "London", object_id="london", valid="2024-09-01",
           created="2024-09-01")  # fmt: skip
    h.ingest(store, tmp_path)
    # Nothing is known between the two Londons yet: a true restatement, merged.
    assert _consolidate(store) == Counter(merge=1)
    assert store.get_row("triples", "l2")["status"] == "merged"

    h.fact("p", "ada", "lives_in", "Paris", object_id="paris", valid="2024-04-01",
           created="2024-10-01")  # fmt: skip
    h.ingest(store, tmp_path)
    # Before any dream re-plans, the answers already see three spans.
    assert _answers(store, "ada", "lives_in", PROBES) == EXPECTED

    assert _consolidate(store, run="dream-order-2") == Counter(unmerge=1, supersede=2)
    l1, p, l2 = (store.get_row("triples", i) for i in ("l1", "p", "l2"))
    assert (l1["status"], l1["invalid_at"], l1["superseded_by"]) == (
        "superseded", when("2024-04-01"), "p"
    )  # fmt: skip
    assert (p["status"], p["invalid_at"], p["superseded_by"]) == (
        "superseded", when("2024-09-01"), "l2"
    )  # fmt: skip
    assert (l2["status"], l2["superseded_by"], l2["invalid_at"]) == ("active", None, None)
    assert "l2" not in (l1["lineage"] or "")  # the split-off statement left the lineage
    assert _answers(store, "ada", "lives_in", PROBES) == EXPECTED
    assert data_loss_violations(store).is_empty()
    assert bitemporal_overlaps(store, Grounding.load()).is_empty()
    assert plan_conflicts(store, ScriptedJudge(NO_CALLS), now=NOW).is_empty()


def test_the_same_facts_in_one_batch_give_the_same_answers(store: Store, tmp_path: Path) -> None:
    h = History()
    _moves(h)
    h.fact("l1", "ada", "lives_in", "London", object_id="london", valid="2024-01-01",
           created="2024-01-01")  # fmt: skip
    h.fact("l2", "ada", "lives_in", "London", object_id="london", valid="2024-09-01",
           created="2024-09-01")  # fmt: skip
    h.fact("p", "ada", "lives_in", "Paris", object_id="paris", valid="2024-04-01",
           created="2024-10-01")  # fmt: skip
    h.ingest(store, tmp_path)
    assert _answers(store, "ada", "lives_in", PROBES) == EXPECTED
    assert _consolidate(store) == Counter(supersede=2)
    assert _answers(store, "ada", "lives_in", PROBES) == EXPECTED


def test_a_restatement_chain_folds_into_an_earlier_start_without_splitting(
    store: Store, tmp_path: Path
) -> None:
    """A restatement that is still in its run stays merged even when its run gets a new start."""
    h = History()
    _moves(h)
    h.fact("l1", "ada", "lives_in", "London", object_id="london", valid="2024-03-01",
           created="2024-03-01")  # fmt: skip
    h.fact("l2", "ada", "lives_in", "London", object_id="london", valid="2024-06-01",
           created="2024-06-01")  # fmt: skip
    h.ingest(store, tmp_path)
    assert _consolidate(store) == Counter(merge=1)
    h.fact("l0", "ada", "lives_in", "London", object_id="london", valid="2024-01-01",
           created="2024-07-01")  # fmt: skip
    h.ingest(store, tmp_path)
    assert _consolidate(store, run="dream-order-2") == Counter(merge=1)
    assert store.get_row("triples", "l1")["superseded_by"] == "l0"
    assert store.get_row("triples", "l2")["superseded_by"] == "l1"  # the chain ends at l0
    assert data_loss_violations(store).is_empty()


# --------------------------------------------------------------------------- the demo history


def _probes(store: Store, subject: str) -> list[dt.datetime | None]:
    """Where answers can change: each valid_at of the subject's facts, the day before, and now."""
    starts = [r[0] for r in store.fetch(
        "SELECT DISTINCT valid_at FROM triples WHERE subject_id = :s AND valid_at IS NOT NULL",
        {"s": subject})]  # fmt: skip
    days = sorted({d + delta for d in starts for delta in (dt.timedelta(0), dt.timedelta(-1))})
    return [*days, None]


@pytest.mark.parametrize("store_url", ["duckdb"], indirect=True)
def test_nightly_and_batch_arrival_give_the_same_answers_on_the_demo_history(
    store_url: str, tmp_path: Path
) -> None:
    records, truth = generate(DemoConfig(sessions=36, days=90, seed=11, end=TEST_NOW))
    records = list(records)
    nightly_url = f"duckdb://{tmp_path / 'nightly.duckdb'}"
    judge = HeuristicJudge()
    nights = 0
    with memvault.open(nightly_url) as nightly:
        for day, batch in by_night(records):
            path = tmp_path / f"night-{day}.jsonl"
            write_jsonl(batch, path)
            ingest_file(nightly, path)
            _consolidate(nightly, judge, run=f"dream-night-{day}")
            nights += 1
    with memvault.open(store_url) as batch_store:
        path = tmp_path / "all.jsonl"
        write_jsonl(records, path)
        ingest_file(batch_store, path)
        _consolidate(batch_store, judge)

    compared = 0
    with memvault.open(nightly_url) as nightly, memvault.open(store_url) as batch_store:
        functional = [p.name for p in Grounding.load().predicates.values() if p.is_functional]
        subjects = [r[0] for r in batch_store.fetch(
            "SELECT DISTINCT subject_id FROM triples WHERE predicate = ANY(:p) ORDER BY 1",
            {"p": functional})]  # fmt: skip
        for subject in subjects:
            for at in _probes(batch_store, subject):
                a = sorted((f.predicate, f.object) for f in asof(nightly, subject, None, at))
                b = sorted((f.predicate, f.object) for f in asof(batch_store, subject, None, at))
                assert a == b, (subject, at)
                compared += 1
        # The owner moved away and back (three spans of one functional predicate).
        assert truth.city_timeline[0].value == truth.city_timeline[-1].value
        for span in truth.city_timeline:
            facts = asof(nightly, truth.owner_id, "lives_in", span.valid_from + dt.timedelta(1))
            assert [f.object for f in facts] == [span.value]
        assert data_loss_violations(nightly).is_empty()
    print(f"\nnightly ({nights} nights) vs batch: {compared} point-in-time answers compared, equal")
