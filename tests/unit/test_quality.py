"""The Great Expectations suite on triples: it passes on sound data and names what is broken."""

from __future__ import annotations

import datetime as dt

import polars as pl

from memvault.quality import _triple_expectations, validate_frame

T0 = dt.datetime(2026, 1, 1)


def triples(**overrides: list) -> pl.DataFrame:
    base = {
        "id": ["t1", "t2", "t3"],
        "subject_id": ["p1", "p1", "p1"],
        "predicate": ["works_at", "works_at", "works_at"],
        "object": ["Acme", "Globex", "ACME"],
        "valid_at": [T0, T0 + dt.timedelta(days=30), T0],
        "invalid_at": [T0 + dt.timedelta(days=30), None, None],
        "created_at": [T0, T0, T0],
        "expired_at": [T0 + dt.timedelta(days=40), None, T0 + dt.timedelta(days=40)],
        "status": ["superseded", "active", "merged"],
        "superseded_by": ["t2", None, "t1"],
        "confidence": [0.9, 0.8, 1.0],
    }
    return pl.DataFrame(base | overrides)


def test_sound_triples_pass() -> None:
    result = validate_frame(triples(), _triple_expectations(), "triples")
    assert result.success and result.failed == [] and result.rows == 3


def test_broken_triples_are_named() -> None:
    broken = triples(
        status=["superseded", "active", "vanished"],
        invalid_at=[None, T0 - dt.timedelta(days=1), None],
        confidence=[0.9, 1.5, 1.0],
    )
    result = validate_frame(broken, _triple_expectations(), "triples")
    assert not result.success
    assert set(result.failed) == {
        "expect_column_values_to_be_in_set(status)",
        "expect_column_values_to_be_between(confidence)",
        "expect_column_values_to_not_be_null(invalid_at)",
        "expect_column_pair_values_a_to_be_greater_than_b(invalid_at)",
    }
