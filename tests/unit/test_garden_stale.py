"""Stale facts on a garden store mean what they mean on memvault's own timeline: the
gardener's supersessions are :func:`memvault.temporal.timeline.stale_statements`."""

from __future__ import annotations

import datetime as dt

from memvault.gardener.adapter import Fact
from memvault.gardener.phases.invalidate import supersessions


def _fact(fid: str, obj: str, valid: int | None = None, created: int | None = None) -> Fact:
    day = lambda n: dt.datetime(2025, 1, n) if n else None  # noqa: E731
    return Fact(
        id=fid, subject="priya", predicate="works_at", object=obj, subject_label=None,
        object_label=None, valid_at=day(valid), invalid_at=None, created_at=day(created),
        expired_at=None, status="active", confidence=None, superseded_by=None, source=None,
    )  # fmt: skip


def _pairs(facts: list[Fact]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    clear, uncertain = supersessions(facts)
    return [(a.id, b.id) for a, b in clear], [(a.id, b.id) for a, b in uncertain]


def test_a_later_object_ends_every_restatement_and_a_case_change_is_no_change() -> None:
    # "acme" restates "Acme" (the timeline compares normalized wording): it does not retire it.
    facts = [_fact("a1", "Acme", 1), _fact("a2", "acme", 2), _fact("g", "Globex", 3)]
    assert _pairs(facts) == ([("a1", "g"), ("a2", "g")], [])


def test_a_return_to_an_old_object_is_a_new_span() -> None:
    facts = [_fact("a", "Acme", 1), _fact("g", "Globex", 2), _fact("a2", "Acme", 3)]
    assert _pairs(facts) == ([("a", "g"), ("g", "a2")], [])


def test_two_objects_at_one_time_are_uncertain_until_a_later_one_ends_both() -> None:
    # No valid time: the time the store first had them (an MCP store's relations).
    assert _pairs([_fact("a", "Acme", None, 1), _fact("g", "Globex", None, 1)]) == (
        [],
        [("a", "g")],
    )
    tie_then_change = [_fact("a", "Acme", 1), _fact("g", "Globex", 1), _fact("i", "Initech", 2)]
    assert _pairs(tie_then_change) == ([("a", "i"), ("g", "i")], [])


def test_a_fact_with_no_time_at_all_is_uncertain() -> None:
    assert _pairs([_fact("x", "Acme"), _fact("g", "Globex", 2)]) == ([], [("x", "g")])
