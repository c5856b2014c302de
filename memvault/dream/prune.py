"""D5 Prune: archive orphan entities — never delete them.

An orphan is an active entity nothing points at: no mention, no fact with
it as subject or object, no connected edge. Young orphans are left alone for
a grace period, because the facts about them may still be on their way.
Archiving is audited and undoable like every mutation.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import polars as pl

from memvault.dream.config import DreamConfig
from memvault.normalize import utcnow
from memvault.store import Store

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


@dataclass
class PruneResult:
    orphans: pl.DataFrame
    archived: int
    edges_archived: int


def find_orphans(store: Store, config: DreamConfig | None = None) -> pl.DataFrame:
    """Active entities nothing refers to, older than the grace period: columns id, name, entity_type."""
    config = config or DreamConfig()
    cutoff = utcnow() - dt.timedelta(days=config.orphan_grace_days)
    return store.fetch_df(ORPHANS_SQL, {"cutoff": cutoff})


def prune_orphans(
    store: Store, run_id: str, config: DreamConfig | None = None, *, dry_run: bool = False
) -> PruneResult:
    """Archive the orphans (and their pending edges); a dry run only finds them."""
    orphans = find_orphans(store, config)
    if dry_run or orphans.is_empty():
        return PruneResult(orphans, 0, 0)
    ids = orphans["id"].to_list()
    with store.mutation(run_id, "dream_prune") as m:
        archived = m.update_many(
            "entities",
            pl.DataFrame({"id": ids, "status": ["archived"] * len(ids)}),
            action="archive",
            reason="orphan: no mention, fact or connected edge",
        )
        edge_ids = [
            row[0]
            for row in store.fetch(
                "SELECT id FROM edges WHERE status <> 'archived' "
                "AND (source_id = ANY(:ids) OR target_id = ANY(:ids))",
                {"ids": ids},
            )
        ]
        edges = (
            m.update_many(
                "edges",
                pl.DataFrame({"id": edge_ids, "status": ["archived"] * len(edge_ids)}),
                action="archive",
                reason="endpoint archived as an orphan",
            )
            if edge_ids
            else 0
        )
    return PruneResult(orphans, archived, edges)
