"""The recall family (``prefetch_cache``, ``recall_log``, ...): what recall keeps between
questions and what it was asked, and what its search index reads of the blocks, their
original texts, vectors, mentions and feedback (:mod:`memvault.recall.index`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import polars as pl

from memvault.paths import sql_text
from memvault.store.backends import ident, in_list
from memvault.store.store import Store

#: What recall searches each block by (keywords and vectors): the original text a digest
#: stands in for (``block_originals``), else the block's text; an expression over blocks ``b``
#: joined by :data:`ORIGINALS_JOIN`, and the derived table :data:`SEARCH_TEXTS_SQL` (id,
#: status, text). An original row of a block whose full text came back (an undone tiering
#: run of a store tiered before originals were kept) is ignored.
SEARCH_TEXT = (
    "CASE WHEN b.digest_kind IS NOT NULL AND o.text IS NOT NULL THEN o.text ELSE b.text END"
)
#: The join :data:`SEARCH_TEXT` needs (blocks are ``b``).
ORIGINALS_JOIN = "LEFT JOIN block_originals o ON o.id = b.id"
SEARCH_TEXTS_SQL = (
    f"(SELECT b.id, b.status, b.created_at, {SEARCH_TEXT} AS text FROM blocks b {ORIGINALS_JOIN})"
)


def live_prefetch_count(store: Store, now: dt.datetime) -> int:
    """How many prefetched answers have not expired at ``now``."""
    return int(
        store.fetch("SELECT count(*) FROM prefetch_cache WHERE expires_at > :now", {"now": now})[0][
            0
        ]
    )


def entity_lists_recalled_between(
    store: Store, since: dt.datetime, until: dt.datetime
) -> pl.DataFrame:
    """The ``entities`` (JSON list text) of each recall logged from ``since`` to ``until``."""
    return store.fetch_df(
        "SELECT entities FROM recall_log WHERE created_at >= :since AND created_at <= :now",
        {"since": since, "now": until},
    )


# -- the search index's reads ----------------------------------------------------------------

_FINGERPRINT_SQL = """
SELECT 1 AS part, count(*), max(created_at), max(updated_at), max(tiered_at),
       sum(CASE WHEN status = 'active' THEN 1 ELSE 0 END)
FROM blocks
UNION ALL
SELECT 2, count(*), max(created_at), NULL, NULL, NULL
FROM embeddings WHERE target_kind = 'block' AND model = :m
UNION ALL
SELECT 3, (SELECT count(*) FROM entities), NULL, NULL, NULL, (SELECT count(*) FROM mentions)
UNION ALL
SELECT 4, count(*), NULL, NULL, NULL, sum(feedback_score * (1 + abs(feedback_score)))
FROM blocks WHERE feedback_score <> 0
"""


def index_fingerprint_rows(store: Store, model: str) -> list[tuple[Any, ...]]:
    """Four rows (part, then five figures), in part order: 1 blocks (count, max created,
    updated, tiered, active), 2 block vectors of ``model`` (count, max created), 3 entities
    and mentions counts, 4 rated blocks (count, a checksum of their feedback)."""
    return sorted(store.fetch(_FINGERPRINT_SQL, {"m": model}), key=lambda r: r[0])


_CURRENT_VECTORS_SQL = (
    "SELECT e.target_id, e.vector FROM embeddings e "
    f"JOIN {SEARCH_TEXTS_SQL} b ON b.id = e.target_id AND e.text_hash = md5(b.text) "
    "WHERE e.target_kind = 'block' AND e.model = :m AND b.status = 'active' {extra}"
)


def current_block_vectors(
    store: Store, model: str, ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """target_id, vector of the active blocks' vectors of ``model`` made from the text they are
    searched by (of ``ids`` only, if given)."""
    if ids is None:
        return store.fetch_df(_CURRENT_VECTORS_SQL.format(extra=""), {"m": model})
    return store.fetch_df(
        _CURRENT_VECTORS_SQL.format(extra="AND e.target_id = ANY(:ids)"),
        {"m": model, "ids": list(ids)},
    )


#: What a hit shows of a block (a digest for a cold or frozen block), and whether the original
#: the digest stands in for is archived (``memvault show BLOCK --original`` prints it); the
#: owner's feedback is kept apart (:func:`feedback_scores`).
SHOWN_COLUMNS = (
    "b.id, b.text, b.tier, b.digest_kind, b.kind, b.tags, b.session_id, b.created_at, "
    "(b.digest_kind IS NOT NULL AND o.id IS NOT NULL) AS original_archived"
)


def searched_blocks(store: Store) -> pl.DataFrame:
    """The active blocks by id, with the text they are searched by (``search_text``) and
    what they show (:data:`SHOWN_COLUMNS`)."""
    return store.fetch_df(
        f"SELECT {SEARCH_TEXT} AS search_text, {SHOWN_COLUMNS} FROM blocks b {ORIGINALS_JOIN} "
        "WHERE b.status = 'active' ORDER BY b.id"
    )


def shown_blocks(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """What the blocks of ``ids`` show (:data:`SHOWN_COLUMNS`), in no particular order."""
    return store.fetch_df(
        f"SELECT {SHOWN_COLUMNS} FROM blocks b {ORIGINALS_JOIN} WHERE b.id = ANY(:ids)",
        {"ids": list(ids)},
    )


def feedback_scores(store: Store) -> dict[str, float]:
    """The blocks the owner rated: block id → the sum of their boosts (``feedback_score``)."""
    rows = store.fetch("SELECT id, feedback_score FROM blocks WHERE feedback_score <> 0")
    return {str(b): float(v) for b, v in rows}


#: The times by which a refresh finds the blocks that changed.
CHANGE_TIMES = ("created_at", "updated_at", "tiered_at")


def blocks_at_times(store: Store, times: dict[str, dt.datetime]) -> list[tuple[Any, ...]]:
    """(id, created_at, updated_at, tiered_at) of the blocks whose time in a column of
    ``times`` (some of :data:`CHANGE_TIMES`) equals that time."""
    if not times:
        return []
    where = " OR ".join(f"{c} = :{c}" for c in times)
    return store.fetch(
        f"SELECT id, {', '.join(CHANGE_TIMES)} FROM blocks WHERE {where}", dict(times)
    )


def blocks_changed_since(
    store: Store, created: dt.datetime, updated: dt.datetime, tiered: dt.datetime
) -> list[tuple[Any, ...]]:
    """(id, created_at, updated_at, tiered_at) of the blocks created, edited or re-tiered at
    or after these times."""
    return store.fetch(
        "SELECT id, created_at, updated_at, tiered_at FROM blocks "
        "WHERE created_at >= :c OR updated_at >= :u OR tiered_at >= :t",
        {"c": created, "u": updated, "t": tiered},
    )


def search_texts_of(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """id, text (searched by), status, created_at of the blocks of ``ids``."""
    return store.fetch_df(
        f"SELECT b.id, {SEARCH_TEXT} AS text, b.status, b.created_at FROM blocks b "
        f"{ORIGINALS_JOIN} WHERE b.id = ANY(:ids)",
        {"ids": list(ids)},
    )


def block_vectors_made_since(store: Store, model: str, since: dt.datetime) -> list[tuple[Any, ...]]:
    """(block id, created_at) of the block vectors of ``model`` made at or after ``since``."""
    return store.fetch(
        "SELECT target_id, created_at FROM embeddings "
        "WHERE target_kind = 'block' AND model = :m AND created_at >= :since",
        {"m": model, "since": since},
    )


def block_vectors_made_at(store: Store, model: str, at: dt.datetime) -> list[tuple[Any, ...]]:
    """(block id, created_at) of the block vectors of ``model`` made at ``at``."""
    return store.fetch(
        "SELECT target_id, created_at FROM embeddings "
        "WHERE target_kind = 'block' AND model = :m AND created_at = :at",
        {"m": model, "at": at},
    )


def block_mentions(store: Store, ids: Sequence[str] | None = None) -> pl.DataFrame:
    """entity_id, block_id of every mention in a block (of blocks ``ids`` only, if given)."""
    if ids is None:
        return store.fetch_df("SELECT entity_id, block_id FROM mentions WHERE block_id IS NOT NULL")
    return store.fetch_df(
        "SELECT entity_id, block_id FROM mentions WHERE block_id IS NOT NULL "
        "AND block_id = ANY(:ids)",
        {"ids": list(ids)},
    )


# -- what prefetch reads (memvault.recall.prefetch) ------------------------------------------


def recalls_after(store: Store, after: dt.datetime, until: dt.datetime) -> pl.DataFrame:
    """The recalls logged after ``after`` up to ``until``, oldest first: query, intent_label,
    entities (JSON list text), verdict, signature, created_at."""
    return store.fetch_df(
        "SELECT query, intent_label, entities, verdict, signature, created_at FROM recall_log "
        "WHERE created_at > :a AND created_at <= :b ORDER BY created_at",
        {"a": after, "b": until},
    )


def served_prefetch_entries(store: Store, now: dt.datetime) -> pl.DataFrame:
    """The prefetched entries made by ``now`` that have not expired, oldest first (a later
    entry of a signature is the one served): id, signature, result_ids, facts, created_at."""
    return store.fetch_df(
        "SELECT id, signature, result_ids, facts, created_at FROM prefetch_cache "
        "WHERE expires_at > :now AND created_at <= :now ORDER BY created_at, id",
        {"now": now},
    )


def prefetch_entries_used(store: Store, since: dt.datetime, until: dt.datetime) -> pl.DataFrame:
    """The prefetched entries created in [since, until) with how many later recalls used
    them: id, created_at, used."""
    return store.fetch_df(
        "SELECT p.id, p.created_at, count(r.id) AS used FROM prefetch_cache p "
        "LEFT JOIN recall_log r ON r.prefetch_id = p.id AND r.created_at >= p.created_at "
        "WHERE p.created_at >= :a AND p.created_at < :b GROUP BY p.id, p.created_at",
        {"a": since, "b": until},
    )


def recalls_served(store: Store, since: dt.datetime, until: dt.datetime) -> tuple[int, int]:
    """(recalls logged in [since, until), of which served from the prefetch cache)."""
    total, served = store.fetch(
        "SELECT count(*), sum(CASE WHEN prefetch_id IS NOT NULL THEN 1 ELSE 0 END) "
        "FROM recall_log WHERE created_at >= :a AND created_at < :b",
        {"a": since, "b": until},
    )[0]
    return int(total or 0), int(served or 0)


def blocks_without_current_vector(
    store: Store, block_ids: Sequence[str], model: str
) -> pl.DataFrame:
    """Those of ``block_ids`` that are active and have no vector of ``model`` made from the
    text they are searched by, by id: id, text, text_hash."""
    where, params = in_list("b.id", "b", block_ids)
    return store.fetch_df(
        f"SELECT b.id, {SEARCH_TEXT} AS text, md5({SEARCH_TEXT}) AS text_hash "
        f"FROM blocks b {ORIGINALS_JOIN} LEFT JOIN embeddings e ON e.target_kind = 'block' "
        "AND e.target_id = b.id AND e.model = :m "
        f"WHERE {where} AND b.status = 'active' "
        f"AND (e.target_id IS NULL OR e.text_hash <> md5({SEARCH_TEXT})) ORDER BY b.id",
        params | {"m": model},
    )


def served_prefetch_entry(store: Store, signature: str, now: dt.datetime) -> tuple[Any, ...] | None:
    """(id, result_ids, scores, facts) of the newest entry of ``signature`` made by ``now``
    that has not expired; None without one."""
    rows = store.fetch(
        "SELECT id, result_ids, scores, facts FROM prefetch_cache "
        "WHERE signature = :s AND expires_at > :now AND created_at <= :now "
        "ORDER BY created_at DESC, id LIMIT 1",
        {"s": signature, "now": now},
    )
    return rows[0] if rows else None


def session_turns(store: Store, sessions: Sequence[str] | None = None) -> pl.DataFrame:
    """Each active block of a session (of ``sessions`` only, if given) with the text it is
    searched by (a tiered block's original: a digest may have lost the question mark): id,
    session_id, created_at, text."""
    sql = (
        f"SELECT b.id, b.session_id, b.created_at, {SEARCH_TEXT} AS text FROM blocks b "
        f"{ORIGINALS_JOIN} WHERE b.status = 'active' AND b.session_id IS NOT NULL"
    )
    if sessions is None:
        return store.fetch_df(sql)
    return store.fetch_df(sql + " AND b.session_id = ANY(:sessions)", {"sessions": list(sessions)})


def recalled_results(store: Store, recall_id: str) -> tuple[Any, Any] | None:
    """(result_ids JSON text, session_id) of the recall ``recall_id``; None if none."""
    rows = store.fetch(
        "SELECT result_ids, session_id FROM recall_log WHERE id = :id", {"id": recall_id}
    )
    return (rows[0][0], rows[0][1]) if rows else None


def boost_sums(store: Store, target_ids: Sequence[str]) -> pl.DataFrame:
    """The sum of the owner's boosts of each of ``target_ids`` that has one: id,
    feedback_score."""
    return store.fetch_df(
        "SELECT target_id AS id, sum(value) AS feedback_score FROM feedback "
        "WHERE kind = 'boost' AND target_id = ANY(:ids) GROUP BY target_id",
        {"ids": list(target_ids)},
    )


# -- what a recall leaves (:mod:`memvault.recall.log`) ----------------------------------------

_FAILED_BEFORE_SQL = """
SELECT 'gap' AS part, count(*) AS n, NULL AS last FROM knowledge_gap WHERE query_signature = :s
UNION ALL
SELECT 'fail', count(*), max(created_at) FROM recall_log
WHERE signature = :s AND verdict = 'INCORRECT'
"""


def failures_before(store: Store, signature: str) -> dict[str, tuple[int, Any]]:
    """How a question failed before, by part: ``gap`` (knowledge gaps recorded for its
    signature: count, None) and ``fail`` (recalls judged INCORRECT: count, the last one's time)."""
    rows = store.fetch(_FAILED_BEFORE_SQL, {"s": signature})
    return {str(part): (int(n or 0), last) for part, n, last in rows}


def rows_to_bump(store: Store, table: str, ids: Sequence[str]) -> pl.DataFrame:
    """The whole rows of ``table`` (``blocks``, ``prefetch_cache``) a recall's use bumps."""
    return store.backend.fetch_df(
        f"SELECT * FROM {ident(table)} WHERE id IN (SELECT unnest(CAST(:ids AS TEXT[])))",
        {"ids": list(ids)},
    )


def bump_uses(store: Store, table: str, changes: pl.DataFrame, count: str, when: str) -> None:
    """Set ``count`` and ``when`` of ``table``'s rows to ``changes``' (id, count, when): one
    UPDATE from a staged frame (the caller appends the audit rows)."""
    backend = store.backend
    with backend.staged(table, changes) as staging:
        backend.execute(
            f"UPDATE {ident(table)} SET {ident(count)} = s.{ident(count)}, "
            f"{ident(when)} = s.{ident(when)} FROM {staging} s WHERE {ident(table)}.id = s.id"
        )


# -- the vectors (:mod:`memvault.vectors`) ---------------------------------------------------


def stale_vector_texts(
    store: Store,
    kind: str,
    model: str,
    table: str,
    column: str,
    ids: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Active rows of ``table`` (a table or derived table with id and status; of ``ids`` when
    given) without a current ``model`` vector of ``kind``: id, ``column`` as text, text_hash
    (``sql/queries/stale_embeddings.sql``)."""
    sql = sql_text("queries/stale_embeddings.sql").format(table=table, column=column)
    if ids is None:
        return store.fetch_df(sql, {"kind": kind, "model": model})
    return store.fetch_df(
        f"SELECT * FROM ({sql}) s WHERE s.id = ANY(CAST(:ids AS TEXT[])) ORDER BY s.id",
        {"kind": kind, "model": model, "ids": list(ids) or [""]},
    )


def vector_count(store: Store, kind: str, model: str) -> int:
    """How many vectors of ``kind`` and ``model`` are stored."""
    return int(
        store.fetch(
            "SELECT count(*) FROM embeddings WHERE target_kind = :k AND model = :m",
            {"k": kind, "m": model},
        )[0][0]
    )


def stored_vectors(
    store: Store, kind: str, model: str, ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """The stored vectors of ``kind`` and ``model`` (of ``ids`` when given) by target id:
    target_id, vector (bytes)."""
    only = "" if ids is None else " AND target_id = ANY(CAST(:ids AS TEXT[]))"
    return store.fetch_df(
        "SELECT target_id, vector FROM embeddings WHERE target_kind = :k AND model = :m"
        f"{only} ORDER BY target_id",
        {"k": kind, "m": model} | ({} if ids is None else {"ids": list(ids) or [""]}),
    )


# -- what the usage weights read (:mod:`memvault.lifecycle.weights`) ---------------------------


def recalls_until(store: Store, now: dt.datetime) -> pl.DataFrame:
    """Every recall logged up to ``now``: created_at, verdict, result_ids (JSON list text)."""
    return store.fetch_df(
        "SELECT created_at, verdict, result_ids FROM recall_log WHERE created_at <= :now",
        {"now": now},
    )


def boosts_until(
    store: Store, now: dt.datetime, block_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """The sum of the owner's ``boost`` and ingested ``thumbs`` feedback per block up to
    ``now`` (of ``block_ids`` when given): block_id, feedback_boost."""
    only = "" if block_ids is None else "AND target_id = ANY(:ids)"
    params: dict[str, Any] = {"now": now}
    if block_ids is not None:
        params["ids"] = list(block_ids) or [""]
    return store.fetch_df(
        "SELECT target_id AS block_id, sum(value) AS feedback_boost FROM feedback "
        f"WHERE kind IN ('boost', 'thumbs') AND created_at <= :now {only} GROUP BY target_id",
        params,
    )
