"""The ``review_queue`` family: what waits for a person, and what the queue's intake and its
impact weighing read of the facts, entities and memories a proposal is about."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import polars as pl

from memvault.store.store import Store

_LOW_CONFIDENCE_SQL = """
SELECT t.id, t.subject_id, e.name AS subject, t.predicate, t.object, t.confidence,
       t.valid_at, t.created_at, t.source_session, t.source_block
FROM triples t LEFT JOIN entities e ON e.id = t.subject_id
WHERE t.status = 'active' AND t.confidence < :low
  AND NOT EXISTS (SELECT 1 FROM review_queue q WHERE q.id = 'memory:' || t.id)
ORDER BY t.confidence, t.created_at, t.id
LIMIT :limit
"""


def unqueued_low_confidence_facts(store: Store, low: float, limit: int) -> pl.DataFrame:
    """Up to ``limit`` active facts of confidence below ``low`` not yet queued (item
    ``memory:<id>``), least sure first: id, subject_id, subject (its name), predicate, object,
    confidence, valid_at, created_at, source_session, source_block."""
    return store.fetch_df(_LOW_CONFIDENCE_SQL, {"low": low, "limit": limit})


def queued_targets(store: Store, kind: str, target_ids: Sequence[str]) -> set[str]:
    """Those of ``target_ids`` that an item of ``kind`` (of any status) is about."""
    rows = store.fetch(
        "SELECT target_id FROM review_queue WHERE kind = :k "
        "AND target_id = ANY(CAST(:ids AS TEXT[]))",
        {"k": kind, "ids": list(target_ids)},
    )
    return {r[0] for r in rows}


_UNHELD_SQL = """
SELECT t.id, t.subject_id, e.name AS subject, t.predicate, t.object, t.valid_at,
       t.source_session, t.source_block
FROM triples t LEFT JOIN entities e ON e.id = t.subject_id
WHERE t.id = ANY(CAST(:ids AS TEXT[])) AND t.status = 'active'
  AND NOT EXISTS (SELECT 1 FROM review_queue q WHERE q.id = 'grounding:' || t.id)
ORDER BY t.id
"""


def active_facts_not_held(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """The active facts of ``ids`` no grounding item (``grounding:<id>``) was queued for, by
    id: id, subject_id, subject (its name), predicate, object, valid_at, source_session,
    source_block."""
    return store.fetch_df(_UNHELD_SQL, {"ids": list(ids)})


#: What a change to a row of these tables is about: the entity whose standing it weighs.
_SUBJECT_SQL = {
    "triples": "SELECT subject_id FROM triples WHERE id = :id",
    "entities": "SELECT id FROM entities WHERE id = :id",
    # A memory: the most central entity it mentions (any it mentions before the first dream).
    "blocks": "SELECT m.entity_id FROM mentions m LEFT JOIN centrality c "
    "ON c.entity_id = m.entity_id WHERE m.block_id = :id "
    "ORDER BY c.ppr DESC NULLS LAST, m.entity_id LIMIT 1",
}


def subject_of_row(store: Store, table: str, row_id: str) -> str | None:
    """The entity a row of ``table`` is about: a fact's subject, the entity itself, a memory's
    most central mentioned entity; None for another table or a row the store does not hold."""
    sql = _SUBJECT_SQL.get(table)
    found = store.fetch(sql, {"id": row_id}) if sql else []
    return found[0][0] if found else None


def pending_review_count(store: Store) -> int:
    """How many items wait for a person."""
    return int(store.fetch("SELECT count(*) FROM review_queue WHERE status = 'pending'")[0][0])


def items_of_kind_prefix(store: Store, prefix: str, statuses: Sequence[str]) -> pl.DataFrame:
    """Every column of the items whose kind starts with ``prefix`` and whose status is one of
    ``statuses``, oldest first (ties by id)."""
    return store.fetch_df(
        "SELECT * FROM review_queue WHERE kind LIKE :prefix "
        "AND status IN (SELECT unnest(CAST(:st AS TEXT[]))) ORDER BY created_at, id",
        {"prefix": prefix + "%", "st": list(statuses)},
    )


def items_in(store: Store, statuses: Sequence[str]) -> pl.DataFrame:
    """Every column of the items whose status is one of ``statuses``, oldest first (ties by
    id)."""
    return store.fetch_df(
        "SELECT * FROM review_queue WHERE status IN (SELECT unnest(CAST(:st AS TEXT[]))) "
        "ORDER BY created_at, id",
        {"st": list(statuses)},
    )


def overdue_items(store: Store, now: dt.datetime) -> list[str]:
    """Ids of the pending items whose deadline passed before ``now``, by id."""
    rows = store.fetch(
        "SELECT id FROM review_queue WHERE status = 'pending' AND deadline IS NOT NULL "
        "AND deadline < :now ORDER BY id",
        {"now": now},
    )
    return [r[0] for r in rows]


def decisions_by_decider(store: Store) -> dict[str, int]:
    """How many items each decider decided, by decider."""
    rows = store.fetch(
        "SELECT decided_by, count(*) FROM review_queue "
        "WHERE decided_by IS NOT NULL GROUP BY decided_by ORDER BY decided_by"
    )
    return {str(who): int(n) for who, n in rows}


def human_verdicts(store: Store) -> list[tuple[Any, ...]]:
    """The items a human judged ``correct`` or ``wrong``, in the order decided: (kind,
    confidence, decision), what the calibration replays."""
    return store.fetch(
        "SELECT kind, confidence, decision FROM review_queue "
        "WHERE decided_by = 'human' AND decision IN ('correct', 'wrong') "
        "ORDER BY decided_at, id"
    )


def open_proposals_of_kind(store: Store, kind: str) -> list[tuple[Any, ...]]:
    """(id, proposal JSON text) of the items of ``kind`` still waiting for a person (pending,
    or expired undecided), oldest first (ties by id)."""
    return store.fetch(
        "SELECT id, proposal FROM review_queue WHERE kind = :k "
        "AND status IN ('pending', 'expired') ORDER BY created_at, id",
        {"k": kind},
    )
