"""D5 Prune: archive orphan entities — never delete them — after reviving the ones referred to again.

An orphan is an active entity nothing points at (``memvault.orphans``).
Young orphans are left alone for a grace period, because the facts about
them may still be on their way. Archiving is audited and undoable like every
mutation; an entity archived as an orphan comes back as soon as a later
session mentions it or states a fact about it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import polars as pl

from memvault.dream.config import DreamConfig
from memvault.normalize import utcnow
from memvault.orphans import find_orphans as orphans_created_before
from memvault.orphans import revivable, revive
from memvault.store import Store


@dataclass
class PruneResult:
    orphans: pl.DataFrame
    archived: int
    edges_archived: int
    revived: int = 0


def find_orphans(store: Store, config: DreamConfig | None = None) -> pl.DataFrame:
    """Active entities nothing refers to, older than the grace period: columns id, name, entity_type."""
    config = config or DreamConfig()
    return orphans_created_before(store, utcnow() - dt.timedelta(days=config.orphan_grace_days))


def prune_orphans(
    store: Store, run_id: str, config: DreamConfig | None = None, *, dry_run: bool = False
) -> PruneResult:
    """Revive archived orphans referred to again, then archive the orphans (and their edges);
    a dry run only finds them."""
    if dry_run:
        return PruneResult(find_orphans(store, config), 0, 0, revived=len(revivable(store)))
    with store.mutation(run_id, "dream_prune") as m:
        revived = revive(store, m)
    orphans = find_orphans(store, config)
    if orphans.is_empty():
        return PruneResult(orphans, 0, 0, revived)
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
    return PruneResult(orphans, archived, edges, revived)
