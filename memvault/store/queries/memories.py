"""Memory items (the ``blocks`` family read as memories, not transcript turns): listing them
by recency, staleness or length, counting them, the entities they name, and those cut off
from their place (the rules that use these are :mod:`memvault.memories` and
:mod:`memvault.orphans`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Literal

import polars as pl

from memvault.store.queries.references import dangling_sql
from memvault.store.store import Store

#: Block kinds that are transcript, not memory.
TRANSCRIPT_KINDS: tuple[str, ...] = ("user_turn", "assistant_turn", "system_turn", "tool_turn")

_KINDS = "(" + ", ".join(f"'{k}'" for k in TRANSCRIPT_KINDS) + ")"
#: ``WHERE`` condition (on blocks ``b``) of a memory item.
IS_MEMORY = f"b.kind NOT IN {_KINDS}"

#: Audit actions that start a new untouched period of a block.
DECAY_ACTIONS: tuple[str, ...] = ("decay", "expire")

_COLUMNS = (
    "id", "session_id", "kind", "text", "importance", "pinned", "tags", "status", "parent_id",
    "created_at", "updated_at", "last_accessed_at", "access_count", "feedback_score", "expires_at",
)  # fmt: skip

# Every block with when it was last touched (``touched``) and its length (``chars``).
_BLOCKS_TOUCHED = (
    f"SELECT {', '.join('b.' + c for c in _COLUMNS)}, "
    "GREATEST(b.updated_at, COALESCE(b.last_accessed_at, b.updated_at), "
    "COALESCE(d.decayed_at, b.updated_at)) AS touched, length(b.text) AS chars "
    "FROM blocks b LEFT JOIN (SELECT target_id, max(created_at) AS decayed_at FROM audit_log "
    "WHERE target_table = 'blocks' AND action IN ("
    + ", ".join(f"'{a}'" for a in DECAY_ACTIONS)
    + ") GROUP BY target_id) d ON d.target_id = b.id"
)

Order = Literal["oldest", "newest", "stalest", "longest"]
#: Listing order → (sort key, direction); ties go by id in the same direction.
ORDERS: dict[str, tuple[str, str]] = {
    "oldest": ("updated_at", "ASC"),
    "newest": ("updated_at", "DESC"),
    "stalest": ("touched", "ASC"),
    "longest": ("(-chars)", "ASC"),
}


def memory_items(
    store: Store,
    *,
    status: str | None = "active",
    include_pinned: bool = True,
    min_chars: int | None = None,
    decay_floor: float | None = None,
    changed_since: dt.datetime | None = None,
    changed_before: dt.datetime | None = None,
    untouched_before: dt.datetime | None = None,
    order: Order = "oldest",
    after: str | None = None,
    limit: int = 200,
) -> pl.DataFrame:
    """Memory items, one row each (the block's columns, ``touched`` and ``chars``).

    ``status`` None: any status. ``min_chars``: longer than this. ``decay_floor``: only items
    with something left to decay (importance above the floor, or no expiry yet).
    ``changed_since`` / ``changed_before`` bound ``updated_at``; ``untouched_before`` bounds
    the last touch. ``after`` is a keyset cursor: the id of the last item of a previous page
    in this ``order`` (an id that is not there is ignored).
    """
    where = [f"kind NOT IN {_KINDS}"]
    params: dict[str, object] = {}
    if status is not None:
        where.append("status = :status")
        params["status"] = status
    if not include_pinned:
        where.append("NOT pinned")
    if min_chars is not None:
        where.append("chars > :min_chars")
        params["min_chars"] = min_chars
    if decay_floor is not None:
        where.append("(importance > :floor OR expires_at IS NULL)")
        params["floor"] = decay_floor
    if changed_since is not None:
        where.append("updated_at >= :since")
        params["since"] = changed_since
    if changed_before is not None:
        where.append("updated_at < :before")
        params["before"] = changed_before
    if untouched_before is not None:
        where.append("touched < :untouched")
        params["untouched"] = untouched_before
    key, direction = ORDERS[order]
    if after is not None:
        found = store.fetch(
            f"SELECT {key} FROM ({_BLOCKS_TOUCHED}) i WHERE id = :after", {"after": after}
        )
        if found:
            cmp = ">" if direction == "ASC" else "<"
            where.append(f"({key} {cmp} :after_key OR ({key} = :after_key AND id {cmp} :after))")
            params["after_key"] = found[0][0]
            params["after"] = after
    return store.fetch_df(
        f"SELECT * FROM ({_BLOCKS_TOUCHED}) i WHERE {' AND '.join(where)} "
        f"ORDER BY {key} {direction}, id {direction} LIMIT {int(limit)}",
        params,
    )


def blocks_by_id(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """The blocks of ``ids`` (any kind, any status), as :func:`memory_items` lists them."""
    if not ids:
        return pl.DataFrame()
    return store.fetch_df(
        f"SELECT * FROM ({_BLOCKS_TOUCHED}) i WHERE id IN (SELECT unnest(CAST(:ids AS TEXT[])))",
        {"ids": list(ids)},
    )


def active_memory_ids(store: Store) -> list[str]:
    """Ids of the active memory items, in id order."""
    return [
        str(r[0])
        for r in store.fetch(
            f"SELECT id FROM blocks b WHERE b.status = 'active' AND {IS_MEMORY} ORDER BY id"
        )
    ]


def memory_counts(store: Store) -> dict[str, int]:
    """Memory items: ``active``, ``archived``, ``expiring`` (with an expiry date) and ``all``."""
    row = store.fetch(
        "SELECT count(*) FILTER (WHERE status = 'active'), "
        "count(*) FILTER (WHERE status = 'archived'), "
        f"count(*) FILTER (WHERE expires_at IS NOT NULL), count(*) FROM blocks b WHERE {IS_MEMORY}"
    )[0]
    return {
        "active": int(row[0]),
        "archived": int(row[1]),
        "expiring": int(row[2]),
        "all": int(row[3]),
    }


def entity_spread(store: Store, block_ids: Sequence[str]) -> pl.DataFrame:
    """The active entities the blocks of ``block_ids`` mention: name, n (blocks among them
    that mention it), df (memory items that mention it), total (memory items in all)."""
    return store.fetch_df(
        "WITH named AS (SELECT m.entity_id, count(DISTINCT m.block_id) AS n FROM mentions m "
        "WHERE m.block_id IN (SELECT unnest(CAST(:ids AS TEXT[]))) GROUP BY 1), "
        "spread AS (SELECT m.entity_id, count(DISTINCT m.block_id) AS df FROM mentions m "
        f"JOIN blocks b ON b.id = m.block_id WHERE {IS_MEMORY} "
        "AND m.entity_id IN (SELECT entity_id FROM named) GROUP BY 1) "
        "SELECT e.name, n.n, COALESCE(s.df, n.n) AS df, "
        f"(SELECT count(*) FROM blocks b WHERE {IS_MEMORY}) AS total "
        "FROM named n JOIN entities e ON e.id = n.entity_id "
        "LEFT JOIN spread s ON s.entity_id = n.entity_id WHERE e.status = 'active'",
        {"ids": list(block_ids)},
    )


#: Problems of an orphan memory item, worst first, each with the query that finds them.
_ORPHAN_MEMORIES: dict[str, str] = {
    "parent archived": (
        "SELECT b.id, b.text FROM blocks b JOIN blocks p ON p.id = b.parent_id "
        "WHERE b.status = 'active' AND p.status <> 'active'"
    ),
    "parent missing": (
        f"SELECT b.id, b.text FROM ({dangling_sql('block.parent_id')}) d "
        "JOIN blocks b ON b.id = d.row_id WHERE b.status = 'active'"
    ),
    "no session": (
        f"SELECT b.id, b.text FROM blocks b WHERE b.status = 'active' AND {IS_MEMORY} "
        "AND (b.session_id IS NULL OR b.id IN "
        f"(SELECT row_id FROM ({dangling_sql('block.session_id')}) d))"
    ),
}
#: The problems an orphan memory item can have, worst first.
ORPHAN_PROBLEMS: tuple[str, ...] = tuple(_ORPHAN_MEMORIES)


def orphan_memories_with(store: Store, problem: str, limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` active items with ``problem`` (one of :data:`ORPHAN_PROBLEMS`) as
    (id, text), by id."""
    rows = store.fetch(f"{_ORPHAN_MEMORIES[problem]} ORDER BY 1 LIMIT {int(limit)}")
    return [(str(r[0]), str(r[1])) for r in rows]


def parent_and_grandparent(
    store: Store, block_id: str
) -> tuple[str, str | None, str | None, str | None] | None:
    """(parent id, the parent's own parent, the parent's tags as JSON text, that grandparent's
    status) of ``block_id``; None when it has no parent that exists."""
    rows = store.fetch(
        "SELECT p.id, p.parent_id, p.tags, s.status FROM blocks b "
        "JOIN blocks p ON p.id = b.parent_id LEFT JOIN blocks s ON s.id = p.parent_id "
        "WHERE b.id = :id",
        {"id": block_id},
    )
    if not rows:
        return None
    parent_id, pointer, tags, status = rows[0]
    return str(parent_id), pointer, tags, status


def parent_session(store: Store, block_id: str) -> str | None:
    """The session of the parent of ``block_id``, when that session exists."""
    rows = store.fetch(
        "SELECT p.session_id FROM blocks b JOIN blocks p ON p.id = b.parent_id "
        "JOIN sessions s ON s.id = p.session_id WHERE b.id = :id",
        {"id": block_id},
    )
    return str(rows[0][0]) if rows else None
