"""The graph family (``centrality``, ``communities``, ``edges``): what the graph step computed
of the entities, read by the stages that report on it, and the edges at an entity."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

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
