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

from memvault.store import Store
from memvault.store.audit import Mutation
from memvault.store.queries import entities as entity_rows
from memvault.store.queries import memories as memory_rows
from memvault.store.queries.recall import entity_lists_recalled_between

#: Audit phase and action of the dream's orphan archive (what revival may undo).
ARCHIVE_PHASE = "dream_prune"
ARCHIVE_ACTION = "archive"


def find_orphans(
    store: Store, cutoff: dt.datetime, ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Active entities nothing refers to, created before ``cutoff``: id, name, entity_type
    (of ``ids`` only, when given: a lint reading what changed)."""
    return entity_rows.unreferenced_entities(store, cutoff, ids)


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
    asked = entity_lists_recalled_between(store, since, now)
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
    used |= entity_rows.mentioned_by_blocks_accessed_since(store, ids, since)
    return used & set(ids)


def revivable(store: Store, among: Sequence[str] | None = None) -> list[str]:
    """Ids of orphan-archived entities that are referred to again (only ``among``, if given)."""
    if among is not None and not among:
        return []
    return entity_rows.archived_and_referred_again(store, ARCHIVE_PHASE, ARCHIVE_ACTION, among)


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


def orphan_memories(store: Store, limit: int = 10) -> list[tuple[str, str, str]]:
    """Up to ``limit`` orphan memory items as (id, text, problem): worst problem first, then
    by id."""
    found: list[tuple[str, str, str]] = []
    for problem in memory_rows.ORPHAN_PROBLEMS:
        if len(found) >= limit:
            break
        rows = memory_rows.orphan_memories_with(store, problem, limit - len(found))
        found.extend((block_id, text, problem) for block_id, text in rows)
    return found


def merged_parent(store: Store, block_id: str) -> tuple[str, str] | None:
    """(parent, survivor) when the parent of ``block_id`` was merged into an item that is
    active: its last ``merged-into:`` tag and its parent pointer agree on the survivor."""
    found = memory_rows.parent_and_grandparent(store, block_id)
    if found is None:
        return None
    parent_id, pointer, tags, survivor_status = found
    merged = [t.split(":", 1)[1] for t in json.loads(tags or "[]") if t.startswith("merged-into:")]
    if not merged or merged[-1] != pointer or survivor_status != "active":
        return None
    return str(parent_id), str(pointer)


def parent_session(store: Store, block_id: str) -> str | None:
    """The session of the parent of ``block_id``, when that session exists."""
    return memory_rows.parent_session(store, block_id)
