"""The ``blocks`` family (with ``sessions`` and ``block_originals``): memory blocks read by id,
tier and digest, the sessions they belong to and the originals of digests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import polars as pl

from memvault.store.store import Store


def active_blocks_by_tier(store: Store) -> dict[str, int]:
    """How many active blocks each tier holds (tiers without one absent)."""
    rows = store.fetch("SELECT tier, count(*) FROM blocks WHERE status = 'active' GROUP BY tier")
    return {str(tier): int(n) for tier, n in rows}


def tiers_of(store: Store, block_ids: Sequence[str]) -> dict[str, str]:
    """The tier of each of ``block_ids`` the store holds (block id → tier)."""
    rows = store.fetch("SELECT id, tier FROM blocks WHERE id = ANY(:ids)", {"ids": list(block_ids)})
    return dict(rows)


def existing_blocks(store: Store, block_ids: Sequence[str]) -> set[str]:
    """The ids among ``block_ids`` that name a block (of any status)."""
    rows = store.fetch("SELECT id FROM blocks WHERE id = ANY(:ids)", {"ids": list(block_ids)})
    return {str(r[0]) for r in rows}


def missing_blocks(store: Store, block_ids: Sequence[str]) -> list[str]:
    """The ids among ``block_ids`` that name no block, in the order given."""
    held = existing_blocks(store, block_ids)
    return [b for b in block_ids if b not in held]


def block_status(store: Store, block_id: str) -> str | None:
    """The block's status (active, archived, ...); None when no block has this id."""
    rows = store.fetch("SELECT status FROM blocks WHERE id = :id", {"id": block_id})
    return str(rows[0][0]) if rows else None


def active_block_ids(store: Store) -> set[str]:
    """The ids of the active blocks."""
    return {str(r[0]) for r in store.fetch("SELECT id FROM blocks WHERE status = 'active'")}


def inactive_block_ids(store: Store) -> set[str]:
    """The ids of the blocks no longer active (archived, superseded, undone, ...)."""
    return {str(r[0]) for r in store.fetch("SELECT id FROM blocks WHERE status <> 'active'")}


def block_ages(store: Store, block_ids: Iterable[str] | None = None) -> pl.DataFrame:
    """block_id, created_at, last_accessed_at of the given blocks (any status), else of every
    active block."""
    if block_ids is None:
        return store.fetch_df(
            "SELECT id AS block_id, created_at, last_accessed_at FROM blocks WHERE status = 'active'"
        )
    return store.fetch_df(
        "SELECT id AS block_id, created_at, last_accessed_at FROM blocks WHERE id = ANY(:ids)",
        {"ids": list(block_ids) or [""]},
    )


def digested_block_count(store: Store) -> int:
    """How many blocks carry a digest (of any kind)."""
    return int(store.fetch("SELECT count(*) FROM blocks WHERE digest_kind IS NOT NULL")[0][0])


def sessions_of(store: Store, block_ids: Sequence[str]) -> list[str]:
    """The sessions the blocks of ``block_ids`` belong to (each once, in no order)."""
    rows = store.fetch(
        "SELECT DISTINCT session_id FROM blocks WHERE id = ANY(:ids) AND session_id IS NOT NULL",
        {"ids": list(block_ids)},
    )
    return [str(r[0]) for r in rows]


# -- blocks with their originals (``block_originals``: the text a digest stands in for) -------


def block_with_original(store: Store, block_id: str) -> dict[str, Any] | None:
    """id, tier, status, digest_kind, text, original, digested_at, run_id (of the digest's
    tiering run) of the block; None when no block has this id."""
    rows = store.fetch_df(
        "SELECT b.id, b.tier, b.status, b.digest_kind, b.text, o.text AS original, "
        "o.digested_at, o.run_id FROM blocks b LEFT JOIN block_originals o ON o.id = b.id "
        "WHERE b.id = :id",
        {"id": block_id},
    )
    return rows.row(0, named=True) if rows.height else None


def blocks_with_kept_originals(store: Store, block_ids: Sequence[str]) -> pl.DataFrame:
    """id, text, digest_kind, status, kept (the original kept for search, if any) of the
    blocks of ``block_ids``."""
    return store.fetch_df(
        "SELECT b.id, b.text, b.digest_kind, b.status, o.text AS kept FROM blocks b "
        "LEFT JOIN block_originals o ON o.id = b.id WHERE b.id = ANY(:ids)",
        {"ids": list(block_ids)},
    )


def audited_originals(store: Store, block_ids: Sequence[str]) -> dict[str, str]:
    """Each of ``block_ids`` that a standing tiering run digested → the text it had before,
    per the audit log (sql/queries/audited_originals.sql)."""
    found = store.query("audited_originals", {"ids": list(block_ids)})
    return dict(zip(found["id"], found["text"], strict=True)) if found.height else {}


def memories_mentioning(store: Store, entity_ids: Sequence[str]) -> pl.DataFrame:
    """entity_id, id, text, created_at of each active block other than an insight that
    mentions one of ``entity_ids`` (once per mention)."""
    return store.fetch_df(
        "SELECT m.entity_id, b.id, b.text, b.created_at FROM mentions m "
        "JOIN blocks b ON b.id = m.block_id "
        "WHERE m.entity_id = ANY(:ids) AND b.status = 'active' AND b.kind <> 'insight'",
        {"ids": list(entity_ids)},
    )


def active_non_insight_texts(store: Store, block_ids: Sequence[str]) -> dict[str, str]:
    """The text of each of ``block_ids`` that is an active block other than an insight."""
    rows = store.fetch(
        "SELECT id, text FROM blocks WHERE id = ANY(:ids) AND status = 'active' "
        "AND kind <> 'insight'",
        {"ids": list(block_ids) or [""]},
    )
    return dict(rows)


def blocks_as_shown(store: Store, block_ids: Sequence[str]) -> pl.DataFrame:
    """What a reviewer is shown of the blocks of ``block_ids``: id, kind, role, text, status,
    session_id, created_at, pinned."""
    return store.fetch_df(
        "SELECT id, kind, role, text, status, session_id, created_at, pinned FROM blocks "
        "WHERE id = ANY(CAST(:ids AS TEXT[]))",
        {"ids": list(block_ids)},
    )


def session_exists(store: Store, session_id: str) -> bool:
    """Whether the store holds the session ``session_id``."""
    return bool(store.fetch("SELECT 1 FROM sessions WHERE id = :id", {"id": session_id}))


def block_and_parts(store: Store, block_id: str) -> list[str]:
    """``block_id`` and the blocks whose parent it is (the parts of a long text), by id; empty
    when none exists."""
    rows = store.fetch(
        "SELECT id FROM blocks WHERE id = :id OR parent_id = :id ORDER BY id", {"id": block_id}
    )
    return [str(r[0]) for r in rows]


def active_blocks_to_tidy(store: Store) -> pl.DataFrame:
    """The active blocks with what content normalisation reads and writes of them: id,
    session_id, kind, role, text, importance, pinned, tier, status, tags, created_at."""
    return store.fetch_df(
        "SELECT id, session_id, kind, role, text, importance, pinned, tier, status, tags, "
        "created_at FROM blocks WHERE status = 'active'"
    )


# -- what tiering reads (:mod:`memvault.lifecycle.tiering`) ----------------------------------


def active_blocks_to_tier(store: Store) -> pl.DataFrame:
    """The active blocks with what their tier is planned from: id, tier, pinned, digest_kind,
    created_at."""
    return store.fetch_df(
        "SELECT id, tier, pinned, digest_kind, created_at FROM blocks WHERE status = 'active'"
    )


def block_texts_and_summaries(store: Store, block_ids: Sequence[str]) -> pl.DataFrame:
    """The text and summary of the blocks among ``block_ids``: id, text, summary."""
    return store.fetch_df(
        "SELECT id, text, summary FROM blocks WHERE id = ANY(:ids)", {"ids": list(block_ids)}
    )


def digested_blocks_with_tiering_audit(store: Store) -> pl.DataFrame:
    """The blocks whose text is a digest, with the number of tiering audit rows each has (None
    when none): id, tier, digest_kind, text, summary, audited."""
    return store.fetch_df(
        "SELECT b.id, b.tier, b.digest_kind, b.text, b.summary, a.n AS audited "
        "FROM blocks b LEFT JOIN (SELECT target_id, count(*) AS n FROM audit_log "
        "WHERE target_table = 'blocks' AND phase = 'tiering' GROUP BY target_id) a "
        "ON a.target_id = b.id WHERE b.digest_kind IS NOT NULL"
    )
