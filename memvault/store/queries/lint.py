"""The ``lint_findings`` family: what the lint's layers found, kept open until it is gone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Any

from memvault.store.store import Store


def open_findings_of_rules(
    store: Store, layer: str, rules: Collection[str]
) -> list[tuple[Any, ...]]:
    """The open findings of ``layer`` under ``rules``: (id, rule, subject, evidence)."""
    return store.fetch(
        "SELECT id, rule, subject, evidence FROM lint_findings WHERE layer = :l "
        "AND status = 'open' AND rule = ANY(CAST(:rules AS TEXT[]))",
        {"l": layer, "rules": list(rules)},
    )


def resolve_findings(store: Store, ids: Sequence[str], at: dt.datetime) -> None:
    """Mark the findings ``ids`` resolved at ``at``."""
    store.backend.execute(
        "UPDATE lint_findings SET status = 'resolved', resolved_at = :t "
        "WHERE id = ANY(CAST(:ids AS TEXT[]))",
        {"t": at, "ids": list(ids)},
    )


def reopen_findings(store: Store, ids: Sequence[str], run_id: str) -> None:
    """Open again, under ``run_id``, those of the findings ``ids`` that were resolved."""
    store.backend.execute(
        "UPDATE lint_findings SET status = 'open', resolved_at = NULL, run_id = :r "
        "WHERE id = ANY(CAST(:ids AS TEXT[])) AND status = 'resolved'",
        {"r": run_id, "ids": list(ids)},
    )


def open_finding_counts(store: Store, layer: str | None = None) -> dict[str, int]:
    """Open findings per rule (of ``layer``, or of every layer), by rule."""
    rows = store.fetch(
        "SELECT rule, count(*) FROM lint_findings WHERE status = 'open' "
        "AND (CAST(:l AS TEXT) IS NULL OR layer = :l) GROUP BY rule ORDER BY rule",
        {"l": layer},
    )
    return {str(rule): int(n) for rule, n in rows}


def open_contradictions(store: Store, run_id: str | None = None) -> list[tuple[str, str]]:
    """The open contradictions (layer L3; of ``run_id`` when given) by id: (id, evidence)."""
    only = "" if run_id is None else " AND run_id = :r"
    return [
        (str(fid), str(evidence))
        for fid, evidence in store.fetch(
            "SELECT id, evidence FROM lint_findings WHERE layer = 'L3' AND status = 'open'"
            f"{only} ORDER BY id",
            {} if run_id is None else {"r": run_id},
        )
    ]
