"""The graph family (``centrality``, ``communities``, ``edges``): what the graph step reads
(the counted mentions, the stored edges, the connected graph), what it computed of the
entities, read by the stages that report on it, and the edges at an entity."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Literal

import polars as pl

from memvault.store.revert import keep_prior
from memvault.store.store import Store


def most_central_entities(store: Store, top: int) -> pl.DataFrame:
    """The ``top`` active entities by personalized PageRank (ties by id): id, name,
    entity_type, pagerank, ppr, facts (their active facts as subject)."""
    return store.fetch_df(
        "SELECT e.id, e.name, e.entity_type, c.pagerank, c.ppr, "
        "(SELECT count(*) FROM triples t WHERE t.subject_id = e.id AND t.status = 'active') AS facts "
        "FROM centrality c JOIN entities e ON e.id = c.entity_id WHERE e.status = 'active' "
        "ORDER BY c.ppr DESC, e.id LIMIT :n",
        {"n": top},
    )


def first_communities(store: Store, count: int) -> pl.DataFrame:
    """The members of the ``count`` lowest-numbered communities: community, size, name,
    ppr (0 without a centrality row), in no particular order."""
    return store.fetch_df(
        "SELECT m.community, m.size, e.name, coalesce(c.ppr, 0) AS ppr FROM communities m "
        "JOIN entities e ON e.id = m.entity_id LEFT JOIN centrality c ON c.entity_id = m.entity_id "
        "WHERE m.community IN (SELECT DISTINCT community FROM communities ORDER BY community LIMIT :n)",
        {"n": count},
    )


def centrality_rank(store: Store, entity_id: str) -> tuple[int, int] | None:
    """(entities of lower personalized PageRank, entities ranked) for ``entity_id``; None when
    it has no centrality row."""
    ppr = store.fetch("SELECT ppr FROM centrality WHERE entity_id = :s", {"s": entity_id})
    if not ppr:
        return None
    below, total = store.fetch(
        "SELECT count(*) FILTER (WHERE ppr < :p), count(*) FROM centrality", {"p": ppr[0][0]}
    )[0]
    return int(below), int(total)


def unarchived_edges_at(store: Store, entity_ids: Sequence[str]) -> list[str]:
    """The ids of the edges not archived with one end among ``entity_ids``."""
    return [
        str(row[0])
        for row in store.fetch(
            "SELECT id FROM edges WHERE status <> 'archived' "
            "AND (source_id = ANY(:ids) OR target_id = ANY(:ids))",
            {"ids": list(entity_ids)},
        )
    ]


# -- what the edge stage reads (:mod:`memvault.graph.inputs`) ---------------------------------

_COUNTED_MENTIONS_SQL = """
SELECT m.entity_id, m.block_id, COALESCE(m.session_id, b.session_id) AS session_id
FROM mentions m
JOIN entities e ON e.id = m.entity_id AND e.status = 'active'
LEFT JOIN blocks b ON b.id = m.block_id
WHERE m.block_id IS NULL OR b.status = 'active'
"""


def counted_mentions(store: Store) -> pl.DataFrame:
    """entity_id, block_id, session_id (the block's when the mention names none) of the
    mentions the graph counts: of active entities, in an active block or in no block (a
    session-level mention)."""
    return store.fetch_df(_COUNTED_MENTIONS_SQL)


def stored_edge_ends(store: Store) -> pl.DataFrame:
    """id, source_id, target_id, status of every stored edge (its values are read apart, for
    the pairs a refresh recomputes only)."""
    return store.fetch_df("SELECT id, source_id, target_id, status FROM edges")


def stored_edge_values(store: Store, ids: Sequence[str] | None = None) -> pl.DataFrame:
    """id and the stored signal values and composite_weight of the edges of ``ids`` (of every
    edge when None)."""
    sql = (
        "SELECT id, co_occurrence, session_overlap, adamic_adar, type_affinity, "
        "semantic_similarity, composite_weight FROM edges"
    )
    if ids is None:
        return store.fetch_df(sql)
    return store.fetch_df(sql + " WHERE id = ANY(CAST(:ids AS TEXT[]))", {"ids": list(ids) or [""]})


def main_entity_model(store: Store) -> str | None:
    """The model most entity vectors are of (ties by name); None without entity vectors."""
    rows = store.fetch(
        "SELECT model, count(*) AS n FROM embeddings WHERE target_kind = 'entity' "
        "GROUP BY model ORDER BY n DESC, model LIMIT 1"
    )
    return str(rows[0][0]) if rows else None


def newest_entity_vector_at(store: Store, model: str) -> dt.datetime | None:
    """When the newest entity vector of ``model`` was made (None without one)."""
    return store.fetch(
        "SELECT max(created_at) FROM embeddings WHERE target_kind = 'entity' AND model = :m",
        {"m": model},
    )[0][0]


def entity_vectors_since(store: Store, model: str, since: dt.datetime | None) -> set[str]:
    """Ids of the entities whose vector of ``model`` was made after ``since`` (all with one
    when ``since`` is None)."""
    sql = "SELECT target_id FROM embeddings WHERE target_kind = 'entity' AND model = :m"
    params: dict[str, object] = {"m": model}
    if since is not None:
        sql += " AND created_at > :t"
        params["t"] = since
    return {str(r[0]) for r in store.fetch(sql, params)}


_WITHOUT_VECTOR_SQL = """
SELECT count(*) FROM entities e
WHERE e.status = 'active' AND NOT EXISTS (
    SELECT 1 FROM embeddings x
    WHERE x.target_kind = 'entity' AND x.model = :m AND x.target_id = e.id)
"""


def entities_without_vector(store: Store, model: str | None) -> int:
    """How many active entities have no vector of ``model`` (all of them without a model)."""
    if not model:
        return int(store.fetch("SELECT count(*) FROM entities WHERE status = 'active'")[0][0])
    return int(store.fetch(_WITHOUT_VECTOR_SQL, {"m": model})[0][0])


def mention_sessions(
    store: Store, by: Literal["id", "block_id"], ids: Sequence[str]
) -> pl.DataFrame:
    """Entity id and the session each mention counts in (its own, else its block's), of the
    mentions with ``by`` (their id, or their block's id) in ``ids``."""
    return store.fetch_df(
        "SELECT m.entity_id, COALESCE(m.session_id, b.session_id) AS session_id "
        f"FROM mentions m LEFT JOIN blocks b ON b.id = m.block_id WHERE m.{by} = ANY(:ids)",
        {"ids": list(ids)},
    )


def block_sessions(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """The sessions of blocks ``ids``, with a null entity id (the session may have lost its
    last mention): columns entity_id, session_id."""
    return store.fetch_df(
        "SELECT NULL AS entity_id, session_id FROM blocks WHERE id = ANY(:ids)",
        {"ids": list(ids)},
    )


# -- the connected graph Leiden, PageRank and discovery read (:mod:`memvault.graph`) ----------


def connected_edges(store: Store, *, with_ids: bool = False) -> pl.DataFrame:
    """source_id, target_id, composite_weight (after the edge's id with ``with_ids``) of the
    connected edges between active entities, in no particular order."""
    return store.fetch_df(
        f"SELECT {'g.id, ' if with_ids else ''}g.source_id, g.target_id, g.composite_weight "
        "FROM edges g JOIN entities s ON s.id = g.source_id AND s.status = 'active' "
        "JOIN entities t ON t.id = g.target_id AND t.status = 'active' "
        "WHERE g.status = 'connected'"
    )


def unarchived_edge_ends(store: Store) -> pl.DataFrame:
    """a, b: the ends (source, target) of every edge not archived, whatever its weight."""
    return store.fetch_df(
        "SELECT source_id AS a, target_id AS b FROM edges WHERE status <> 'archived'"
    )


def edges_audited_by(store: Store, run_id: str) -> pl.DataFrame:
    """target_id, before_image, after_image of the edges the edge refresh of ``run_id``
    (phase ``dream_signal``, any attempt) inserted or updated."""
    return store.fetch_df(
        "SELECT target_id, before_image, after_image FROM audit_log "
        "WHERE run_id = :r AND phase = 'dream_signal' AND target_table = 'edges' "
        "AND action IN ('edge-insert', 'edge-update')",
        {"r": run_id},
    )


def recently_mentioned_entities(store: Store, sessions: int) -> list[str]:
    """The active entities mentioned in the ``sessions`` most recent sessions (latest start,
    then id), by id."""
    rows = store.fetch(
        "SELECT DISTINCT m.entity_id FROM mentions m "
        "JOIN entities e ON e.id = m.entity_id AND e.status = 'active' "
        "WHERE m.session_id IN (SELECT id FROM sessions ORDER BY started_at DESC, id DESC LIMIT :n) "
        "ORDER BY m.entity_id",
        {"n": int(sessions)},
    )
    return [str(r[0]) for r in rows]


def top_central_entities(store: Store, n: int, by: str) -> pl.DataFrame:
    """The ``n`` entities of highest ``by`` (``ppr`` or ``pagerank``; ties by id): entity_id,
    name, entity_type, pagerank, ppr, degree, community (null when it has none)."""
    if by not in ("ppr", "pagerank"):
        raise ValueError(f"top_central orders by 'ppr' or 'pagerank', not {by!r}")
    return store.fetch_df(
        "SELECT c.entity_id, e.name, e.entity_type, c.pagerank, c.ppr, c.degree, m.community "
        "FROM centrality c JOIN entities e ON e.id = c.entity_id "
        "LEFT JOIN communities m ON m.entity_id = c.entity_id "
        f"ORDER BY c.{by} DESC, c.entity_id LIMIT :n",
        {"n": int(n)},
    )


def stored_partition(store: Store) -> pl.DataFrame:
    """entity_id, community, size of every row of table ``communities``, by entity_id."""
    return store.fetch_df("SELECT entity_id, community, size FROM communities ORDER BY entity_id")


def partition_run_ids(store: Store) -> list[str]:
    """The runs that wrote the rows of table ``communities`` (one when a single run did)."""
    return [str(r[0]) for r in store.fetch("SELECT DISTINCT run_id FROM communities")]


def replace_graph_table(
    store: Store, table: Literal["centrality", "communities"], rows: pl.DataFrame, run_id: str
) -> None:
    """Replace every row of ``table`` by ``rows``, in one transaction; the rows it held are
    kept first for ``run_id`` (a dream that fails puts them back)."""
    with store.transaction():
        keep_prior(store, table, run_id)
        store.backend.execute(f"DELETE FROM {table}")
        if rows.height:
            store.backend.insert_df(table, store.conform(table, rows), on_conflict="error")
