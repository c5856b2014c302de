"""The ``lint_findings`` family: what the lint's layers found, kept open until it is gone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import polars as pl

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


# -- what an incremental lint's scope reads around the rows that changed (memvault.lint.scope) --


def _among(column: str, name: str = "ids") -> str:
    """``column`` is one of the ids bound as ``:name`` (a join, not a scan of the list per
    row: thousands of ids cost what a few do)."""
    return f"{column} IN (SELECT unnest(CAST(:{name} AS TEXT[])))"


def _as_text(store: Store, sql: str, ids: Iterable[str]) -> pl.DataFrame:
    """``sql`` (with ``:ids``) for the given ids, every column as text; no ids, no rows."""
    wanted = sorted(set(ids))
    if not wanted:
        return pl.DataFrame()
    frame = store.fetch_df(sql, {"ids": wanted})
    return frame.cast({c: pl.Utf8 for c in frame.columns}) if frame.height else frame


def facts_by_id_as_text(store: Store, ids: Iterable[str]) -> pl.DataFrame:
    """The facts among ``ids``: id, subject_id, object_id, predicate (text)."""
    sql = f"SELECT id, subject_id, object_id, predicate FROM triples WHERE {_among('id')}"
    return _as_text(store, sql, ids)


def facts_at_entities_as_text(store: Store, entity_ids: Iterable[str]) -> pl.DataFrame:
    """The ids of the facts whose subject or object is among ``entity_ids``."""
    sql = f"SELECT id FROM triples WHERE {_among('subject_id')} OR {_among('object_id')}"
    return _as_text(store, sql, entity_ids)


def mentions_touching_as_text(store: Store, ids: Iterable[str]) -> pl.DataFrame:
    """The mentions whose id, entity or block is among ``ids``: id, entity_id (text)."""
    sql = (
        f"SELECT id, entity_id FROM mentions WHERE {_among('id')} OR {_among('entity_id')} "
        f"OR {_among('block_id')}"
    )
    return _as_text(store, sql, ids)


def edge_ends_as_text(store: Store, ids: Iterable[str]) -> pl.DataFrame:
    """The ends of the edges among ``ids``: source_id, target_id (text)."""
    return _as_text(store, f"SELECT source_id, target_id FROM edges WHERE {_among('id')}", ids)


def blocks_under_as_text(store: Store, ids: Iterable[str]) -> pl.DataFrame:
    """The ids of the blocks whose session or parent is among ``ids``."""
    sql = f"SELECT id FROM blocks WHERE {_among('session_id')} OR {_among('parent_id')}"
    return _as_text(store, sql, ids)
