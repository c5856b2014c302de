"""The ``asof`` tool's answer on both backends: the subject named as recall names it (a first
name, any case, an alias), the predicates listed, an unknown predicate refused with them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memvault.ingest import Numbered, ingest_records
from memvault.recall.entities import EntityMatcher
from memvault.records import EntityRecord, TripleRecord
from memvault.serve.facts import UnknownPredicateError, answer_asof
from memvault.store import Store
from memvault.temporal.asof import SubjectNotFoundError
from tests.recall_support import T0, fill


@pytest.fixture
def filled(store: Store, tmp_path: Path) -> Store:
    fill(store, tmp_path)
    extra = [
        EntityRecord(id="ent_bob", name="Robert Tables", entity_type="person", aliases=["Bobby"]),
        TripleRecord(subject="ent_bob", predicate="lives_in", object="Lisbon",
                     valid_at=T0 - dt.timedelta(days=30), created_at=T0 - dt.timedelta(days=1)),
    ]  # fmt: skip
    ingest_records(store, [Numbered(k + 1, r) for k, r in enumerate(extra)], source="extra.jsonl")
    return store


@pytest.mark.parametrize("name", ["Ada", "ada", "ADA LOVELACE", "ent_ada"])
def test_asof_takes_the_names_recall_takes(filled: Store, name: str) -> None:
    found = answer_asof(filled, EntityMatcher.load(filled), name)
    assert (found["subject"], found["subject_id"]) == ("Ada Lovelace", "ent_ada")
    assert {(f["predicate"], f["object"]) for f in found["facts"]} == {
        ("works_at", "Acme Software"), ("uses_tool", "pytest"),
    }  # fmt: skip
    assert found["predicates"] == {"uses_tool": 1, "works_at": 1}


def test_an_alias_names_its_entity(filled: Store) -> None:
    found = answer_asof(filled, EntityMatcher.load(filled), "bobby")
    assert found["subject_id"] == "ent_bob"
    assert [f["object"] for f in found["facts"]] == ["Lisbon"]


def test_one_predicate_is_answered_and_every_kind_still_listed(filled: Store) -> None:
    found = answer_asof(filled, EntityMatcher.load(filled), "Ada", predicate="works_at")
    assert [f["object"] for f in found["facts"]] == ["Acme Software"]
    assert found["predicates"] == {"uses_tool": 1, "works_at": 1}
    none_yet = answer_asof(filled, EntityMatcher.load(filled), "Ada", predicate="lives_in")
    assert none_yet["facts"] == []  # a kind memory knows, of which Ada has no fact


def test_an_unknown_predicate_is_refused_with_the_known_ones(filled: Store) -> None:
    with pytest.raises(UnknownPredicateError) as refused:
        answer_asof(filled, EntityMatcher.load(filled), "Ada", predicate="editor")
    message = str(refused.value)
    assert "'editor'" in message
    for known in ("works_at", "uses_tool", "lives_in", "has_status"):  # defined, and held
        assert known in message


def test_an_unknown_subject_says_how_to_name_one(filled: Store) -> None:
    with pytest.raises(SubjectNotFoundError, match="Nobody At All") as refused:
        answer_asof(filled, EntityMatcher.load(filled), "Nobody At All")
    assert "memvault" not in str(refused.value)
