"""Orphans: entities nothing refers to, and memory items cut off from their place.

An orphan entity is an active entity nothing points at: no mention, no fact with it
as subject or object, no connected edge. The dream archives orphans (never
deletes them). An entity archived that way is *revived* as soon as a later
session mentions it or states a fact about it — by ingest, as the rows
arrive, and by the dream before it looks for orphans, for rows that came in
any other way. Only entities whose last change was the dream's orphan
archive are revived; an entity archived for another reason stays archived.

Orphan memory items (the gardener reconnects them where exactly one place fits): an
active item whose parent was archived (merged away: its survivor is the place), whose
parent does not exist, or that belongs to no session (none, or one that does not exist;
the dangling references are :mod:`memvault.references`' list). An item whose parent's
session exists can go there.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence

import polars as pl

from memvault.memories import IS_MEMORY
from memvault.references import dangling_sql
from memvault.store import Store
from memvault.store.audit import Mutation

#: Audit phase and action of the dream's orphan archive (what revival may undo).
ARCHIVE_PHASE = "dream_prune"
ARCHIVE_ACTION = "archive"

ORPHANS_SQL = """
SELECT e.id, e.name, e.entity_type
FROM entities e
WHERE e.status = 'active'
  AND (e.created_at IS NULL OR e.created_at < :cutoff)
  AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM triples t WHERE t.subject_id = e.id AND t.status <> 'merged')
  AND NOT EXISTS (SELECT 1 FROM triples t WHERE t.object_id = e.id AND t.status <> 'merged')
  AND NOT EXISTS (
      SELECT 1 FROM edges g
      WHERE g.status = 'connected' AND (g.source_id = e.id OR g.target_id = e.id))
ORDER BY e.id
"""

# Archived entities whose last audited change was the dream's orphan archive and that something
# refers to again (a mention, a fact, a connected edge).
_REVIVABLE_SQL = """
SELECT e.id
FROM entities e
JOIN (SELECT target_id, max(id) AS last_change FROM audit_log
      WHERE target_table = 'entities' GROUP BY target_id) l ON l.target_id = e.id
JOIN audit_log a ON a.id = l.last_change
WHERE e.status = 'archived' AND a.phase = :phase AND a.action = :action {only}
  AND (EXISTS (SELECT 1 FROM mentions m WHERE m.entity_id = e.id)
       OR EXISTS (SELECT 1 FROM triples t
                  WHERE (t.subject_id = e.id OR t.object_id = e.id) AND t.status <> 'merged')
       OR EXISTS (SELECT 1 FROM edges g WHERE g.status = 'connected'
                  AND (g.source_id = e.id OR g.target_id = e.id)))
ORDER BY e.id
"""


def find_orphans(store: Store, cutoff: dt.datetime) -> pl.DataFrame:
    """Active entities nothing refers to, created before ``cutoff``: id, name, entity_type."""
    return store.fetch_df(ORPHANS_SQL, {"cutoff": cutoff})


#: Recalls and accesses this recent keep an orphan from being archived.
IN_USE_DAYS = 30


def in_use(
    store: Store, ids: Sequence[str], now: dt.datetime, days: float = IN_USE_DAYS
) -> set[str]:
    """Of ``ids``, the entities the owner still uses: named by a recall of the last ``days``
    days (``recall_log.entities``), or mentioned by a block accessed in that time."""
    if not ids:
        return set()
    since = now - dt.timedelta(days=days)
    asked = store.fetch_df(
        "SELECT entities FROM recall_log WHERE created_at >= :since AND created_at <= :now",
        {"since": since, "now": now},
    )
    used: set[str] = set()
    if asked.height:
        named = (
            asked.select(
                pl.col("entities").cast(pl.Utf8).fill_null("[]").str.json_decode(pl.List(pl.Utf8))
            )
            .explode("entities")
            .drop_nulls()
        )
        used |= set(named["entities"].to_list())
    accessed = store.fetch(
        "SELECT DISTINCT m.entity_id FROM mentions m JOIN blocks b ON b.id = m.block_id "
        "WHERE m.entity_id = ANY(:ids) AND b.last_accessed_at >= :since",
        {"ids": list(ids), "since": since},
    )
    used |= {r[0] for r in accessed}
    return used & set(ids)


def revivable(store: Store, among: Sequence[str] | None = None) -> list[str]:
    """Ids of orphan-archived entities that are referred to again (only ``among``, if given)."""
    if among is not None and not among:
        return []
    params: dict[str, object] = {"phase": ARCHIVE_PHASE, "action": ARCHIVE_ACTION}
    only = ""
    if among is not None:
        only, params["ids"] = "AND e.id = ANY(:ids)", sorted(set(among))
    return [r[0] for r in store.fetch(_REVIVABLE_SQL.format(only=only), params)]


def revive(store: Store, mutation: Mutation, among: Sequence[str] | None = None) -> int:
    """Re-activate the revivable entities, audited in ``mutation``'s run; returns how many."""
    ids = revivable(store, among)
    if not ids:
        return 0
    return mutation.update_many(
        "entities",
        pl.DataFrame({"id": ids, "status": ["active"] * len(ids)}),
        action="revive",
        reason="archived as an orphan, referred to again by a mention or a fact",
    )


#: Problems of an orphan memory item, worst first, each with the query that finds them.
_ORPHAN_MEMORIES: tuple[tuple[str, str], ...] = (
    (
        "parent archived",
        "SELECT b.id, b.text FROM blocks b JOIN blocks p ON p.id = b.parent_id "
        "WHERE b.status = 'active' AND p.status <> 'active'",
    ),
    (
        "parent missing",
        f"SELECT b.id, b.text FROM ({dangling_sql('block.parent_id')}) d "
        "JOIN blocks b ON b.id = d.row_id WHERE b.status = 'active'",
    ),
    (
        "no session",
        f"SELECT b.id, b.text FROM blocks b WHERE b.status = 'active' AND {IS_MEMORY} "
        "AND (b.session_id IS NULL OR b.id IN "
        f"(SELECT row_id FROM ({dangling_sql('block.session_id')}) d))",
    ),
)


def orphan_memories(store: Store, limit: int = 10) -> list[tuple[str, str, str]]:
    """Up to ``limit`` orphan memory items as (id, text, problem): worst problem first, then
    by id."""
    found: list[tuple[str, str, str]] = []
    for problem, sql in _ORPHAN_MEMORIES:
        if len(found) >= limit:
            break
        rows = store.fetch(f"{sql} ORDER BY 1 LIMIT {int(limit - len(found))}")
        found.extend((str(r[0]), str(r[1]), problem) for r in rows)
    return found


def merged_parent(store: Store, block_id: str) -> tuple[str, str] | None:
    """(parent, survivor) when the parent of ``block_id`` was merged into an item that is
    active: its last ``merged-into:`` tag and its parent pointer agree on the survivor."""
    rows = store.fetch(
        "SELECT p.id, p.parent_id, p.tags, s.status FROM blocks b "
        "JOIN blocks p ON p.id = b.parent_id LEFT JOIN blocks s ON s.id = p.parent_id "
        "WHERE b.id = :id",
        {"id": block_id},
    )
    if not rows:
        return None
    parent_id, pointer, tags, survivor_status = rows[0]
    merged = [t.split(":", 1)[1] for t in json.loads(tags or "[]") if t.startswith("merged-into:")]
    if not merged or merged[-1] != pointer or survivor_status != "active":
        return None
    return str(parent_id), str(pointer)


def parent_session(store: Store, block_id: str) -> str | None:
    """The session of the parent of ``block_id``, when that session exists."""
    rows = store.fetch(
        "SELECT p.session_id FROM blocks b JOIN blocks p ON p.id = b.parent_id "
        "JOIN sessions s ON s.id = p.session_id WHERE b.id = :id",
        {"id": block_id},
    )
    return str(rows[0][0]) if rows else None
