"""The ``blocks`` family: memory blocks read by id, tier and digest."""

from __future__ import annotations

from collections.abc import Sequence

from memvault.store.store import Store


def active_blocks_by_tier(store: Store) -> dict[str, int]:
    """How many active blocks each tier holds (tiers without one absent)."""
    rows = store.fetch("SELECT tier, count(*) FROM blocks WHERE status = 'active' GROUP BY tier")
    return {str(tier): int(n) for tier, n in rows}


def tiers_of(store: Store, block_ids: Sequence[str]) -> dict[str, str]:
    """The tier of each of ``block_ids`` the store holds (block id → tier)."""
    rows = store.fetch("SELECT id, tier FROM blocks WHERE id = ANY(:ids)", {"ids": list(block_ids)})
    return dict(rows)


def missing_blocks(store: Store, block_ids: Sequence[str]) -> list[str]:
    """The ids among ``block_ids`` that name no block, in the order given."""
    held = {
        str(r[0])
        for r in store.fetch("SELECT id FROM blocks WHERE id = ANY(:ids)", {"ids": list(block_ids)})
    }
    return [b for b in block_ids if b not in held]


def digested_block_count(store: Store) -> int:
    """How many blocks carry a digest (of any kind)."""
    return int(store.fetch("SELECT count(*) FROM blocks WHERE digest_kind IS NOT NULL")[0][0])
