"""The ``entities`` family: the names and types entities go by, for the modules that label ids,
and which entities something refers to."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import polars as pl

from memvault.paths import sql_text
from memvault.store.store import Store


def entity_labels(store: Store) -> dict[str, tuple[str, str]]:
    """Every entity, whatever its status: id → (name, type) (an id in an old fact or mention
    keeps its label after the entity is merged or archived)."""
    rows = store.fetch("SELECT id, name, entity_type FROM entities")
    return {str(i): (str(n), str(t)) for i, n, t in rows}


def entity_labels_of(
    store: Store, ids: Sequence[str], *, active_only: bool = False
) -> dict[str, tuple[str, str]]:
    """The entities among ``ids`` (only active ones if ``active_only``): id → (name, type);
    an id that names no such entity is absent."""
    active = " AND status = 'active'" if active_only else ""
    rows = store.fetch(
        f"SELECT id, name, entity_type FROM entities WHERE id = ANY(:ids){active}",
        {"ids": list(ids)},
    )
    return {str(i): (str(n), str(t)) for i, n, t in rows}


def active_entities(store: Store) -> pl.DataFrame:
    """The active entities: id, name, entity_type."""
    return store.fetch_df("SELECT id, name, entity_type FROM entities WHERE status = 'active'")


def unreferenced_entities(
    store: Store, cutoff: dt.datetime, ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Active entities nothing refers to (no mention, no fact, no connected edge), created
    before ``cutoff``: id, name, entity_type, by id; of ``ids`` only, when given (a lint
    reading what changed)."""
    if ids is None:
        return store.query("unreferenced_entities", {"cutoff": cutoff})
    return store.fetch_df(
        f"SELECT * FROM ({sql_text('queries/unreferenced_entities.sql')}) u "
        "WHERE u.id IN (SELECT unnest(CAST(:ids AS TEXT[]))) ORDER BY u.id",
        {"cutoff": cutoff, "ids": list(ids)},
    )


# Archived entities whose last audited change was ``phase``/``action`` and that something
# refers to again (a mention, a fact, a connected edge).
_REFERRED_AGAIN_SQL = """
SELECT e.id
FROM entities e
JOIN (SELECT target_id, max(id) AS last_change FROM audit_log
      WHERE target_table = 'entities' GROUP BY target_id) l ON l.target_id = e.id
JOIN audit_log a ON a.id = l.last_change
WHERE e.status = 'archived' AND a.phase = :phase AND a.action = :action {only}
  AND (EXISTS (SELECT 1 FROM mentions m WHERE m.entity_id = e.id)
       OR EXISTS (SELECT 1 FROM triples t
                  WHERE (t.subject_id = e.id OR t.object_id = e.id) AND t.status <> 'merged')
       OR EXISTS (SELECT 1 FROM edges g WHERE g.status = 'connected'
                  AND (g.source_id = e.id OR g.target_id = e.id)))
ORDER BY e.id
"""


def archived_and_referred_again(
    store: Store, phase: str, action: str, among: Sequence[str] | None = None
) -> list[str]:
    """Ids of archived entities whose last audited change was ``action`` in ``phase`` and
    that a mention, a fact or a connected edge refers to again (only ``among``, if given)."""
    params: dict[str, object] = {"phase": phase, "action": action}
    only = ""
    if among is not None:
        only, params["ids"] = "AND e.id = ANY(:ids)", sorted(set(among))
    return [r[0] for r in store.fetch(_REFERRED_AGAIN_SQL.format(only=only), params)]


def mentioned_by_blocks_accessed_since(
    store: Store, ids: Sequence[str], since: dt.datetime
) -> set[str]:
    """Of the entities ``ids``, those mentioned by a block accessed at or after ``since``."""
    rows = store.fetch(
        "SELECT DISTINCT m.entity_id FROM mentions m JOIN blocks b ON b.id = m.block_id "
        "WHERE m.entity_id = ANY(:ids) AND b.last_accessed_at >= :since",
        {"ids": list(ids), "since": since},
    )
    return {r[0] for r in rows}


def entities_as_shown(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """What a reviewer is shown of the entities of ``ids``: id, name, entity_type, aliases,
    status, created_at."""
    return store.fetch_df(
        "SELECT id, name, entity_type, aliases, status, created_at FROM entities "
        "WHERE id = ANY(CAST(:ids AS TEXT[]))",
        {"ids": list(ids)},
    )


def most_mentioned_between(
    store: Store, after: dt.datetime, until: dt.datetime, limit: int
) -> list[tuple[str, int]]:
    """The ``limit`` entities mentioned most after ``after`` up to ``until``, as (entity id,
    mentions), most first (ties by id)."""
    rows = store.fetch(
        "SELECT entity_id, count(*) AS n FROM mentions WHERE mentioned_at > :a AND "
        f"mentioned_at <= :b GROUP BY entity_id ORDER BY n DESC, entity_id LIMIT {int(limit)}",
        {"a": after, "b": until},
    )
    return [(str(e), int(n)) for e, n in rows]


def entity_name(store: Store, entity_id: str) -> str | None:
    """The name of the entity ``entity_id`` (any status); None when there is none."""
    rows = store.fetch("SELECT id, name FROM entities WHERE id = :s", {"s": entity_id})
    return rows[0][1] if rows else None


def entities_named(store: Store, canonical: str) -> list[tuple[str, str, str]]:
    """(id, name, entity_type) of the entities whose canonical name is ``canonical``, by id."""
    rows = store.fetch(
        "SELECT id, name, entity_type FROM entities WHERE canonical_name = :k ORDER BY id",
        {"k": canonical},
    )
    return [(r[0], r[1], r[2]) for r in rows]


def entities_with_aliases_like(store: Store, text: str) -> list[tuple[str, str, str, str]]:
    """(id, name, entity_type, aliases JSON) of the entities whose aliases (lower-cased)
    contain ``text``, by id: candidates a caller checks alias by alias."""
    rows = store.fetch(
        "SELECT id, name, entity_type, aliases FROM entities WHERE aliases <> '[]' "
        "AND lower(aliases) LIKE :pattern ORDER BY id",
        {"pattern": f"%{text}%"},
    )
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def active_entities_with_mentions(store: Store) -> pl.DataFrame:
    """The active entities with how often they are mentioned: id, name, entity_type,
    aliases, mentions."""
    return store.fetch_df(
        "SELECT e.id, e.name, e.entity_type, e.aliases, COALESCE(m.n, 0) AS mentions "
        "FROM entities e "
        "LEFT JOIN (SELECT entity_id, count(*) AS n FROM mentions GROUP BY entity_id) m "
        "ON m.entity_id = e.id WHERE e.status = 'active'"
    )


# -- what the lint's grounding layer reads (:mod:`memvault.lint.grounding_layer`) -------------

#: The entities to look at, bound as ``:ids`` (an incremental lint).
_ONLY = "WHERE {column} IN (SELECT unnest(CAST(:ids AS TEXT[])))"

_STALE_SQL = """
WITH touched AS (
    SELECT subject_id AS id, status FROM triples {subjects}
    UNION ALL
    SELECT object_id, status FROM triples {objects}
), facts AS (
    SELECT id, bool_or(status = 'active') AS current, bool_or(status <> 'merged') AS kept
    FROM touched WHERE id IS NOT NULL GROUP BY id
)
SELECT e.id, e.name FROM entities e JOIN facts f ON f.id = e.id
WHERE e.status = 'active' AND f.kept AND NOT f.current
  AND e.id NOT IN (SELECT entity_id FROM mentions WHERE entity_id IS NOT NULL)
ORDER BY e.id
"""


def entities_with_only_retired_facts(
    store: Store, ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Active entities whose facts (as subject or object, merged ones aside) are all retired
    and that nothing mentions, of ``ids`` when given: id, name, by id."""
    if ids is None:
        return store.fetch_df(_STALE_SQL.format(subjects="", objects=""))
    sql = _STALE_SQL.format(
        subjects=_ONLY.format(column="subject_id"), objects=_ONLY.format(column="object_id")
    )
    return store.fetch_df(sql, {"ids": list(ids)})
