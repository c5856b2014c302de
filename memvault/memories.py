"""Memory items: the blocks an agent wrote as memories (memories, summaries, insights), not
the raw transcript turns.

One home for the reads that treat blocks as memories: listing them by recency, staleness
or length, counting them, and the entities they name. The gardener tends these (through
its adapter onto this store); transcript turns are the lifecycle track's.

*Last touched* is the latest of: the last edit (``updated_at``), the last access
(``last_accessed_at``) and the last audited decay or expiry of the block. A decay starts a
new untouched period, so an item is decayed once per period, never twice in a row.

The queries are the data layer's (:mod:`memvault.store.queries.memories`); the ranking of what
items are about is this module's.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from memvault.store import Store
from memvault.store.queries.memories import (
    DECAY_ACTIONS,
    IS_MEMORY,
    ORDERS,
    TRANSCRIPT_KINDS,
    Order,
    active_memory_ids,
    blocks_by_id,
    entity_spread,
    memory_counts,
    memory_items,
)

__all__ = [
    "DECAY_ACTIONS",
    "IS_MEMORY",
    "ORDERS",
    "TRANSCRIPT_KINDS",
    "Order",
    "active_memory_ids",
    "blocks_by_id",
    "memory_counts",
    "memory_items",
    "named_entities",
]


def named_entities(store: Store, block_ids: Sequence[str], limit: int = 5) -> list[tuple[str, int]]:
    """What the blocks of ``block_ids`` are about: the active entities they mention, as
    (name, blocks among them that mention it), most telling first.

    Ranked by how many of the blocks mention an entity, weighted by how rare the entity is
    among all memory items (tf-idf): the owner, named by nearly every memory, does not hide
    what sets these blocks apart. Ties by name.
    """
    if not block_ids:
        return []
    frame = entity_spread(store, block_ids)
    if frame.is_empty():
        return []
    ranked = frame.with_columns(
        (pl.col("n") * (1.0 + pl.col("total").cast(pl.Float64) / pl.col("df")).log()).alias("s")
    ).sort(["s", "n", "name"], descending=[True, True, False])
    return [(str(name), int(n)) for name, n in ranked.select("name", "n").head(limit).iter_rows()]
