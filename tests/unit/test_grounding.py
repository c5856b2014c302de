"""Grounding definitions (L2) and the timeline rule they drive (T6), without a store."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from memvault.temporal.grounding import Grounding, GroundingError
from memvault.temporal.timeline import follow_merges, functional_timeline
from memvault_demo import PREDICATES


def test_packaged_definitions_agree_with_the_demo_generator() -> None:
    grounding = Grounding.load()
    for name, spec in PREDICATES.items():
        definition = grounding.get(name)
        assert definition is not None, f"{name} is not defined in predicates.yaml"
        assert definition.cardinality == spec.cardinality, name
        assert definition.volatility == spec.volatility, name
        assert definition.domain == spec.subject_types, name
        assert definition.range == (spec.object_type,), name
        assert definition.description


def test_lookups_say_how_a_predicate_behaves() -> None:
    grounding = Grounding.load()
    assert grounding.is_functional("works_at") and not grounding.is_functional("knows")
    assert not grounding.is_functional("moved_to") and grounding.get("moved_to") is None
    prefers = grounding.get("prefers")
    assert prefers is not None and prefers.preference and not prefers.is_functional
    status = grounding.get("project_status")
    assert status is not None and status.allowed == ("planning", "active", "paused", "shipped")
    assert status.object_is_literal and status.as_dict()["value_type"] == "enum"
    assert set(grounding.frame()["predicate"]) == set(grounding.predicates)


def test_a_custom_file_loads_and_a_broken_one_names_the_problem(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(
        "predicates:\n  born_in:\n    domain: person\n    range: [place]\n"
        "    cardinality: functional\n    volatility: stable\n"
    )
    born = Grounding.load(good).get("born_in")
    assert born is not None and born.domain == ("person",) and born.value_type == "entity"
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "predicates:\n  born_in:\n    domain: person\n    range: place\n"
        "    cardinality: sometimes\n    volatility: stable\n"
    )
    with pytest.raises(GroundingError, match=r"bad.yaml: predicate 'born_in': cardinality"):
        Grounding.load(bad)
    missing = tmp_path / "missing.yaml"
    missing.write_text("predicates:\n  born_in:\n    domain: person\n    colour: red\n")
    with pytest.raises(GroundingError, match="unknown field"):
        Grounding.load(missing)


def _timeline(*rows: tuple[str, str, int]) -> dict[str, tuple[object, ...]]:
    frame = pl.DataFrame(
        {
            "id": [r[0] for r in rows],
            "subject_id": ["ada"] * len(rows),
            "predicate": ["lives_in"] * len(rows),
            "objkey": [r[1] for r in rows],
            "valid_at": [dt.datetime(2025, r[2], 1) for r in rows],
            "created_at": [dt.datetime(2026, 1, 1)] * len(rows),
        }
    )
    out = functional_timeline(frame)
    return {
        r["id"]: (
            r["span_start_id"],
            r["change_id"],
            r["change_at"] and r["change_at"].month,
            r["tie"],
        )
        for r in out.iter_rows(named=True)
    }


def test_timeline_spans_restatements_moves_back_and_ties() -> None:
    got = _timeline(
        ("home", "london", 1), ("away", "paris", 3), ("again", "paris", 4),
        ("back", "london", 6), ("x", "rome", 9), ("y", "oslo", 9), ("z", "rome", 11),
    )  # fmt: skip
    assert got == {
        "home": ("home", "away", 3, False),
        "away": ("away", "back", 6, False),
        "again": ("away", "back", 6, False),  # a restatement belongs to the span it continues
        "back": ("back", "x", 9, False),  # the move back is a third span, not the first one
        "x": ("x", None, None, True),  # a tie: only a judge says which held; rome continues
        "y": ("y", "z", 11, True),
        "z": ("z", None, None, False),
    }


def test_follow_merges_finds_survivors_and_broken_chains() -> None:
    rows = pl.DataFrame(
        {
            "id": ["a", "b", "c", "d", "e", "f"],
            "status": ["merged", "merged", "active", "merged", "merged", "merged"],
            "superseded_by": ["b", "c", None, "missing", "f", "e"],
        }
    )
    survivors = dict(follow_merges(rows).select("id", "survivor").iter_rows())
    assert survivors == {"a": "c", "b": "c", "c": "c", "d": None, "e": None, "f": None}
