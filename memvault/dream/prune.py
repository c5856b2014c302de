"""D5 Prune: archive orphan entities — never delete them — after reviving the ones referred to again.

An orphan is an active entity nothing points at (``memvault.orphans``).
Young orphans are left alone for a grace period, because the facts about
them may still be on their way, and so are orphans the owner still uses: named
by a recall, or mentioned by a block read, in the last 30 days. Archiving is audited and undoable like every
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
from memvault.orphans import in_use, revivable, revive
from memvault.store import Store
from memvault.store.queries.graph import unarchived_edges_at


@dataclass
class PruneResult:
    orphans: pl.DataFrame
    archived: int
    edges_archived: int
    revived: int = 0
    kept_by_use: int = 0


def find_orphans(store: Store, config: DreamConfig | None = None) -> pl.DataFrame:
    """Active entities nothing refers to, older than the grace period, that the owner does not
    use (no recall named them and no block mentioning them was read in the last 30 days):
    columns id, name, entity_type."""
    return _orphans(store, config)[0]


def _orphans(store: Store, config: DreamConfig | None) -> tuple[pl.DataFrame, int]:
    """The orphans to archive, and how many more were kept because the owner uses them."""
    config = config or DreamConfig()
    now = utcnow()
    found = orphans_created_before(store, now - dt.timedelta(days=config.orphan_grace_days))
    if found.is_empty():
        return found, 0
    used = in_use(store, found["id"].to_list(), now)
    return found.filter(~pl.col("id").is_in(list(used))), len(used)


def prune_orphans(
    store: Store, run_id: str, config: DreamConfig | None = None, *, dry_run: bool = False
) -> PruneResult:
    """Revive archived orphans referred to again, then archive the orphans (and their edges);
    a dry run only finds them."""
    if dry_run:
        orphans, kept = _orphans(store, config)
        return PruneResult(orphans, 0, 0, revived=len(revivable(store)), kept_by_use=kept)
    with store.mutation(run_id, "dream_prune") as m:
        revived = revive(store, m)
    orphans, kept = _orphans(store, config)
    if orphans.is_empty():
        return PruneResult(orphans, 0, 0, revived, kept)
    ids = orphans["id"].to_list()
    with store.mutation(run_id, "dream_prune") as m:
        archived = m.update_many(
            "entities",
            pl.DataFrame({"id": ids, "status": ["archived"] * len(ids)}),
            action="archive",
            reason="orphan: no mention, fact or connected edge",
        )
        edge_ids = unarchived_edges_at(store, ids)
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
    return PruneResult(orphans, archived, edges, revived, kept)
