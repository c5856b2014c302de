"""Lineage as stored, canonicalized for a whole batch at once: the same text as row by row."""

from __future__ import annotations

import json
import random

from memvault.temporal.conflict.apply import canonical_lineages


def _one_at_a_time(entries: list[dict]) -> str:
    """The definition: de-duplicated, ordered by (valid_at, created_at, id, object), absent as ''."""
    unique = {json.dumps(e, sort_keys=True, ensure_ascii=False): e for e in entries}
    ordered = sorted(
        unique.values(),
        key=lambda e: tuple(
            str(e.get(k) or "") for k in ("valid_at", "created_at", "id", "object")
        ),
    )
    return json.dumps(ordered, ensure_ascii=False, sort_keys=True)


def _entry(rng: random.Random) -> dict:
    return {
        "id": rng.choice(["t1", "t2", "t3", None]),
        "object": rng.choice(["Zürich", "Acme", "acme", None]),
        "valid_at": rng.choice(["2026-01-01T00:00:00", "2025-06-01T00:00:00", None]),
        "created_at": rng.choice(["2026-02-01T10:00:00", None]),
        "confidence": rng.choice([0.5, 0.9]),
    }


def test_a_batch_is_canonicalized_as_each_row_alone_would_be() -> None:
    rng = random.Random(7)
    rows = {f"row{k}": [_entry(rng) for _ in range(rng.randint(0, 12))] for k in range(40)}
    rows["twice"] = [rows["row1"][0], rows["row1"][0]] if rows["row1"] else []
    got = canonical_lineages(rows)
    assert got == {row: _one_at_a_time(entries) for row, entries in rows.items()}
