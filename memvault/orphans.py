"""Orphan entities: what makes one, and bringing one back when it is referred to again.

An orphan is an active entity nothing points at: no mention, no fact with it
as subject or object, no connected edge. The dream archives orphans (never
deletes them). An entity archived that way is *revived* as soon as a later
session mentions it or states a fact about it — by ingest, as the rows
arrive, and by the dream before it looks for orphans, for rows that came in
any other way. Only entities whose last change was the dream's orphan
archive are revived; an entity archived for another reason stays archived.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import polars as pl

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
