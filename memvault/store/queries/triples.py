"""The ``triples`` family: facts read by id, whatever module weighs them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Sequence

import polars as pl

from memvault.paths import sql_text
from memvault.store.backends import in_list
from memvault.store.store import Store


def triples_by_id(store: Store, ids: Sequence[str], columns: str | Iterable[str]) -> pl.DataFrame:
    """The triples among ``ids``, of any status, with ``columns`` (a list, or one SQL column
    list such as ``"id, subject_id"``), in no particular order."""
    listed = columns if isinstance(columns, str) else ", ".join(columns)
    return store.fetch_df(
        f"SELECT {listed} FROM triples WHERE id = ANY(CAST(:ids AS TEXT[]))", {"ids": list(ids)}
    )


def triples_by_id_in_order(
    store: Store, columns: Iterable[str], ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Every triple (those among ``ids`` when given), of any status, with ``columns``, by id."""
    where, params = "", None
    if ids is not None:
        where, params = "WHERE id = ANY(CAST(:ids AS TEXT[]))", {"ids": list(ids)}
    return store.fetch_df(f"SELECT {', '.join(columns)} FROM triples {where} ORDER BY id", params)


def active_triple_ids(store: Store, ids: Sequence[str]) -> set[str]:
    """The ids among ``ids`` whose triple is active (believed now)."""
    rows = store.fetch(
        "SELECT id FROM triples WHERE status = 'active' AND id = ANY(CAST(:ids AS TEXT[]))",
        {"ids": list(ids)},
    )
    return {str(r[0]) for r in rows}


# -- what the temporal checks read (memvault.temporal.checks) ---------------------------------

# Ingested triples that no longer exist, unless an undo of their ingest removed them on purpose.
_MISSING_SQL = """
SELECT a.target_id AS triple_id
FROM audit_log a
WHERE a.target_table = 'triples' AND a.action = 'ingest'
  AND NOT EXISTS (SELECT 1 FROM triples t WHERE t.id = a.target_id)
  AND NOT EXISTS (SELECT 1 FROM audit_log u WHERE u.target_table = 'triples'
                  AND u.target_id = a.target_id AND u.action = 'undo-remove' AND u.id > a.id)
"""


def missing_ingested_triples(store: Store, ids: Sequence[str] | None = None) -> pl.DataFrame:
    """triple_id of each ingested triple that no longer exists (once per ingest; an undo of
    its ingest that removed it on purpose is not missing), of ``ids`` only if given."""
    if ids is None:
        return store.fetch_df(_MISSING_SQL)
    return store.fetch_df(
        _MISSING_SQL + " AND a.target_id = ANY(CAST(:ids AS TEXT[]))", {"ids": list(ids)}
    )


_STATES_SQL = (
    "SELECT id, status, invalid_at, superseded_by, "
    "CASE WHEN status = 'merged' THEN object END AS object FROM triples"
)


def triple_states(store: Store, ids: Sequence[str] | None = None) -> pl.DataFrame:
    """id, status, invalid_at, superseded_by and (of a merged one) object of every triple (of
    ``ids`` only, if given)."""
    if ids is None:
        return store.fetch_df(_STATES_SQL)
    return store.fetch_df(_STATES_SQL + " WHERE id = ANY(CAST(:ids AS TEXT[]))", {"ids": list(ids)})


def merged_into(store: Store, ids: Sequence[str]) -> set[str]:
    """The ids of the merged triples whose survivor (``superseded_by``) is one of ``ids``."""
    rows = store.fetch(
        "SELECT id FROM triples WHERE status = 'merged' "
        "AND superseded_by = ANY(CAST(:ids AS TEXT[]))",
        {"ids": list(ids)},
    )
    return {str(r[0]) for r in rows}


def non_empty_lineages(store: Store, ids: Sequence[str] | None = None) -> pl.DataFrame:
    """id, lineage (JSON text) of the triples whose lineage holds something (of ``ids`` only,
    if given): an empty lineage holds nothing, and leaving it out keeps the transfer small."""
    sql = "SELECT id, lineage FROM triples WHERE lineage IS NOT NULL AND lineage <> '[]'"
    if ids is None:
        return store.fetch_df(sql)
    return store.fetch_df(sql + " AND id = ANY(CAST(:ids AS TEXT[]))", {"ids": list(ids)})


# Current (not merged, not retired) statements of the same functional predicate whose valid
# times overlap, unless a judge accepted both (COEXIST). Undated statements start when learned.
# The current functional statements are picked before the self-join: joining all triples of a
# subject first pairs up every multi-valued fact too (tens of millions of rows at 200k triples).
_OVERLAP_SQL = """
WITH current_facts AS (
    SELECT t.id, t.subject_id, t.predicate, t.object, t.object_id,
           COALESCE(t.valid_at, t.created_at) AS starts,
           COALESCE(t.invalid_at, TIMESTAMP '9999-12-31') AS ends
    FROM triples t {scope}
    WHERE t.predicate = ANY(:predicates)
      AND t.status NOT IN ('merged', 'invalidated', 'archived', 'held') AND t.expired_at IS NULL
)
SELECT a.subject_id, a.predicate, a.id AS triple_a, b.id AS triple_b,
       a.object AS object_a, b.object AS object_b, a.object_id AS object_id_a,
       b.object_id AS object_id_b
FROM current_facts a
JOIN current_facts b
  ON a.subject_id = b.subject_id AND a.predicate = b.predicate AND a.id < b.id
WHERE a.starts < b.ends AND b.starts < a.ends
  AND NOT EXISTS (SELECT 1 FROM conflict_verdicts v
                  WHERE (v.verdict = 'COEXIST' OR v.status IN ('review', 'expired', 'rejected')) AND v.id = a.id || '|' || b.id)
  AND NOT EXISTS (SELECT 1 FROM conflict_verdicts v
                  WHERE (v.verdict = 'COEXIST' OR v.status IN ('review', 'expired', 'rejected')) AND v.id = b.id || '|' || a.id)
"""
#: An incremental night's overlaps: the (subject, predicate) groups of the facts it changed.
_SCOPE_GROUPS = """
JOIN (SELECT DISTINCT subject_id, predicate FROM triples
      WHERE id = ANY(CAST(:ids AS TEXT[]))) g
  ON g.subject_id = t.subject_id AND g.predicate = t.predicate"""


def overlapping_current_facts(
    store: Store, predicates: Sequence[str], ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Pairs of current facts of ``predicates`` whose valid times overlap and that no verdict
    lets stand or holds for review: subject_id, predicate, triple_a, triple_b, object_a,
    object_b, object_id_a, object_id_b (``ids``: only in the (subject, predicate) groups of
    those facts, and only their facts are read)."""
    params: dict[str, object] = {"predicates": list(predicates)}
    scope = ""
    if ids is not None:
        params["ids"], scope = list(ids), _SCOPE_GROUPS
    return store.fetch_df(_OVERLAP_SQL.format(scope=scope), params)


def triples_changed_between(store: Store, lo: int, hi: int) -> list[str]:
    """The ids of the facts audit rows ``lo`` (exclusive) to ``hi`` (inclusive) name: facts
    written, facts of entities written, both facts of conflict verdicts written; sorted."""
    found = store.query("triples_changed_between", {"lo": lo, "hi": hi})
    return sorted(str(i) for i in found.to_series(0).to_list() if i is not None)


# -- what conflict resolution reads (memvault.temporal.conflict) ------------------------------

_CANDIDATES_SQL = """
SELECT t.id, t.subject_id, t.predicate, t.object, t.object_id, t.valid_at, t.invalid_at,
       t.created_at, t.expired_at, t.status, t.superseded_by, t.confidence,
       t.source_session, t.source_block
FROM triples t
JOIN (SELECT x.subject_id, x.predicate FROM triples x {scope}
      WHERE x.status IN ('active', 'superseded')
      GROUP BY x.subject_id, x.predicate HAVING count(*) > 1) g
  ON g.subject_id = t.subject_id AND g.predicate = t.predicate
WHERE t.status IN ('active', 'superseded')
   OR (t.status = 'merged' AND t.valid_at IS NOT NULL
       AND t.predicate = ANY(CAST(:functional AS TEXT[])))
"""
#: Only the (subject, predicate) groups of some facts (a check of what changed).
_CANDIDATE_GROUPS = """JOIN (SELECT DISTINCT subject_id, predicate FROM triples
      WHERE id = ANY(CAST(:ids AS TEXT[]))) s
  ON s.subject_id = x.subject_id AND s.predicate = x.predicate"""


def conflict_candidates(
    store: Store, functional: Sequence[str], ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """The triples of the (subject, predicate) groups with two or more live (active or
    superseded) statements, and the dated merged statements of ``functional`` predicates
    (``ids``: only the groups of those facts; an empty list reads none)."""
    params: dict[str, object] = {"functional": list(functional)}
    scope = ""
    if ids is not None:
        params["ids"], scope = list(ids) or [""], _CANDIDATE_GROUPS
    return store.fetch_df(_CANDIDATES_SQL.format(scope=scope), params)


def statement_context(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """What a judge reads around each fact of ``ids``: id, session_started_at, source_text
    (its source block's), object_type, object_name, object_aliases (its object entity's)."""
    return store.fetch_df(
        "SELECT t.id, s.started_at AS session_started_at, b.text AS source_text, "
        "o.entity_type AS object_type, o.name AS object_name, o.aliases AS object_aliases "
        "FROM triples t "
        "LEFT JOIN sessions s ON s.id = t.source_session "
        "LEFT JOIN blocks b ON b.id = t.source_block "
        "LEFT JOIN entities o ON o.id = t.object_id WHERE t.id = ANY(:ids)",
        {"ids": list(ids)},
    )


def superseded_by_predicate(store: Store) -> dict[str, int]:
    """How many superseded facts each predicate has (predicates without one absent)."""
    rows = store.fetch(
        "SELECT predicate, count(*) FROM triples WHERE status = 'superseded' GROUP BY predicate"
    )
    return {str(p): int(n) for p, n in rows}


# -- what a reviewer is shown of a fact (memvault.review.evidence) -----------------------------

_FACTS_SHOWN_SQL = """
SELECT t.id, e.name AS subject, t.predicate, t.object, t.status, t.confidence, t.valid_at,
       t.invalid_at, t.created_at, t.expired_at, t.source_session, t.source_block,
       b.text AS source_text
FROM triples t
LEFT JOIN entities e ON e.id = t.subject_id
LEFT JOIN blocks b ON b.id = t.source_block
WHERE {where}
ORDER BY t.created_at, t.id
"""


def facts_as_shown(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """The facts of ``ids`` as a reviewer sees them, oldest first: id, subject (its name),
    predicate, object, status, confidence, valid_at, invalid_at, created_at, expired_at,
    source_session, source_block, source_text."""
    return store.fetch_df(
        _FACTS_SHOWN_SQL.format(where="t.id = ANY(CAST(:ids AS TEXT[]))"), {"ids": list(ids)}
    )


def facts_of_entity_as_shown(store: Store, entity_id: str | None, limit: int) -> pl.DataFrame:
    """The first ``limit`` facts with ``entity_id`` as subject or object, as
    :func:`facts_as_shown` shows them."""
    return store.fetch_df(
        _FACTS_SHOWN_SQL.format(where="t.subject_id = :id OR t.object_id = :id")
        + f" LIMIT {int(limit)}",
        {"id": entity_id},
    )


def dependent_fact_count(store: Store, entity_id: str) -> int:
    """How many live (active or superseded) facts have ``entity_id`` as subject or object."""
    return int(
        store.fetch(
            "SELECT count(*) FROM triples WHERE (subject_id = :s OR object_id = :s) "
            "AND status IN ('active', 'superseded')",
            {"s": entity_id},
        )[0][0]
    )


def active_fact_count(store: Store) -> int:
    """How many facts are active (believed now)."""
    return int(store.fetch("SELECT count(*) FROM triples WHERE status = 'active'")[0][0])


# -- facts with their entities' names (memvault.temporal.facts) -------------------------------

#: ``WHERE`` condition (on triples ``t``) of a current fact: active, not ended in the world
#: (``invalid_at``) and not retired by the store (``expired_at``).
IS_CURRENT = "t.status = 'active' AND t.invalid_at IS NULL AND t.expired_at IS NULL"

_FACTS = (
    "SELECT t.id, t.subject_id, t.predicate, t.object, t.object_id, t.valid_at, t.invalid_at, "
    "t.created_at, t.expired_at, t.status, t.confidence, t.superseded_by, t.source_block, "
    "es.name AS subject_label, eo.name AS object_label FROM triples t "
    "LEFT JOIN entities es ON es.id = t.subject_id LEFT JOIN entities eo ON eo.id = t.object_id"
)
#: Timeline order: valid time (undated first), then when the store learned it, then id.
_TIMELINE_ORDER = "ORDER BY t.valid_at ASC NULLS FIRST, t.created_at, t.id"


def named_facts(
    store: Store,
    *,
    subject: str | None = None,
    predicate: str | None = None,
    learned_since: dt.datetime | None = None,
    current_only: bool = True,
    newest_first: bool = False,
    limit: int = 1000,
) -> pl.DataFrame:
    """Facts with ``subject_label`` / ``object_label`` (the entities' names), in timeline
    order, or newest learned first (``newest_first``). ``learned_since`` bounds
    ``created_at``."""
    where: list[str] = []
    params: dict[str, object] = {}
    if subject is not None:
        where.append("t.subject_id = :s")
        params["s"] = subject
    if predicate is not None:
        where.append("t.predicate = :p")
        params["p"] = predicate
    if learned_since is not None:
        where.append("t.created_at >= :since")
        params["since"] = learned_since
    if current_only:
        where.append(IS_CURRENT)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    order = "ORDER BY t.created_at DESC, t.id DESC" if newest_first else _TIMELINE_ORDER
    return store.fetch_df(f"{_FACTS} {clause} {order} LIMIT {int(limit)}", params)


def fact_timeline(store: Store, subject: str, predicate: str) -> pl.DataFrame:
    """Every statement of ``subject`` and ``predicate``, retired ones included, in timeline
    order (columns as :func:`named_facts`)."""
    return store.fetch_df(
        f"{_FACTS} WHERE t.subject_id = :s AND t.predicate = :p {_TIMELINE_ORDER}",
        {"s": subject, "p": predicate},
    )


def fact_counts(store: Store) -> dict[str, int]:
    """Facts: ``current`` and ``all``."""
    row = store.fetch(f"SELECT count(*) FILTER (WHERE {IS_CURRENT}), count(*) FROM triples t")[0]
    return {"current": int(row[0]), "all": int(row[1])}


def triple_count(store: Store) -> int:
    """How many facts the store holds, whatever their status."""
    return int(store.fetch("SELECT count(*) FROM triples")[0][0])


def held_predicates(store: Store) -> set[str]:
    """Every predicate a fact of any status uses."""
    return {str(r[0]) for r in store.fetch("SELECT DISTINCT predicate FROM triples")}


def subject_statements(
    store: Store, subject_id: str, columns: Sequence[str], predicate: str | None = None
) -> pl.DataFrame:
    """Every statement (any status) with ``subject_id`` as subject (of ``predicate`` only, if
    given): ``columns`` and note."""
    only = " AND predicate = :p" if predicate else ""
    params = {"s": subject_id, "p": predicate} if predicate else {"s": subject_id}
    return store.fetch_df(
        f"SELECT {', '.join(columns)}, note FROM triples WHERE subject_id = :s{only}", params
    )


_WITH_TYPES_SQL = """
SELECT t.id AS triple_id, t.predicate, t.object, t.object_id,
       s.entity_type AS subject_type, t.subject_id, o.entity_type AS object_type
FROM triples t
LEFT JOIN entities s ON s.id = t.subject_id
LEFT JOIN entities o ON o.id = t.object_id
WHERE t.status NOT IN ('merged', 'held', 'invalidated')
"""


def believed_triples_with_types(store: Store, ids: Sequence[str] | None = None) -> pl.DataFrame:
    """The triples the store believes (not merged away, held or invalidated), of ``ids`` only
    if given, with their ends' entity types: triple_id, predicate, object, object_id,
    subject_type, subject_id, object_type."""
    if ids is None:
        return store.fetch_df(_WITH_TYPES_SQL)
    return store.fetch_df(
        _WITH_TYPES_SQL + " AND t.id = ANY(CAST(:ids AS TEXT[]))", {"ids": list(ids)}
    )


def current_predicates(store: Store) -> pl.DataFrame:
    """subject_id, predicate: each predicate an entity holds a current fact of, once."""
    return store.fetch_df(
        f"SELECT DISTINCT subject_id, predicate FROM triples t WHERE {IS_CURRENT}"
    )


def current_objects(store: Store) -> pl.DataFrame:
    """id, object of the active facts the store has not retired (``expired_at`` unset)."""
    return store.fetch_df(
        "SELECT id, object FROM triples WHERE status = 'active' AND expired_at IS NULL"
    )


def triples_with_object_names(
    store: Store, ids: Sequence[str], columns: Sequence[str]
) -> pl.DataFrame:
    """``columns`` of the triples of ``ids`` with their object entity's name and aliases
    (object_name, object_aliases; null for a literal)."""
    cols = ", ".join(f"t.{c}" for c in columns)
    return store.fetch_df(
        f"SELECT {cols}, o.name AS object_name, o.aliases AS object_aliases FROM triples t "
        "LEFT JOIN entities o ON o.id = t.object_id WHERE t.id = ANY(:ids)",
        {"ids": list(ids)},
    )


# -- what recall reads of the facts (memvault.recall.currency, memvault.recall.recaller) ------


def facts_of_subjects(
    store: Store, subject_ids: Sequence[str], predicates: Sequence[str], columns: str
) -> pl.DataFrame:
    """``columns`` (one SQL column list) of the facts (any status) with one of
    ``subject_ids`` as subject and one of ``predicates``, by id."""
    return store.fetch_df(
        f"SELECT {columns} FROM triples WHERE subject_id = ANY(:ents) "
        "AND predicate = ANY(:preds) ORDER BY id",
        {"ents": list(subject_ids), "preds": list(predicates)},
    )


def facts_from_blocks(
    store: Store, block_ids: Sequence[str], columns: str, predicates: Collection[str] = ()
) -> pl.DataFrame:
    """``columns`` of the facts (any status) read from one of ``block_ids`` (of
    ``predicates`` only, if any), by id."""
    among, params = in_list("source_block", "block", block_ids)
    where = ""
    if predicates:
        where = "AND predicate = ANY(:preds)"
        params["preds"] = list(predicates)
    return store.fetch_df(
        f"SELECT {columns} FROM triples WHERE {among} {where} ORDER BY id", params
    )


def facts_with_source_block(store: Store, columns: str) -> pl.DataFrame:
    """``columns`` of every fact read from a block (any status), by id."""
    return store.fetch_df(
        f"SELECT {columns} FROM triples WHERE source_block IS NOT NULL ORDER BY id"
    )


_CURRENT_FACTS_OF_SQL = """
SELECT subject_id, predicate, object, valid_at FROM triples
WHERE subject_id = ANY(:ids) AND expired_at IS NULL AND invalid_at IS NULL AND status = 'active'
ORDER BY CASE {rank} ELSE 99 END, valid_at DESC NULLS LAST, id LIMIT :n
"""


def current_facts_of(
    store: Store, subject_ids: Sequence[str], first: Sequence[str], limit: int
) -> pl.DataFrame:
    """Up to ``limit`` current facts with one of ``subject_ids`` as subject: subject_id,
    predicate, object, valid_at; the predicates of ``first`` first, in that order (the
    project's constants, never user input), then the latest valid, then by id."""
    rank = " ".join(f"WHEN predicate = '{p}' THEN {k}" for k, p in enumerate(first))
    return store.fetch_df(
        _CURRENT_FACTS_OF_SQL.format(rank=rank or "WHEN FALSE THEN 0"),
        {"ids": list(subject_ids), "n": limit},
    )


# -- what the lint's structure layer reads (:mod:`memvault.lint.structure`) -------------------


def active_facts_of_predicates(store: Store, predicates: Sequence[str]) -> pl.DataFrame:
    """The active facts linking two entities under ``predicates``: predicate, subject_id,
    object_id, id."""
    return store.fetch_df(
        "SELECT predicate, subject_id, object_id, id FROM triples WHERE status = 'active' "
        "AND object_id IS NOT NULL AND predicate = ANY(CAST(:p AS TEXT[]))",
        {"p": list(predicates)},
    )


def malformed_triples(store: Store, ids: Sequence[str] | None = None) -> pl.DataFrame:
    """The malformed facts (of ``ids`` when given), whatever their status: id, subject_id,
    predicate, problem (``sql/queries/malformed_triples.sql``)."""
    only = "" if ids is None else "WHERE id IN (SELECT unnest(CAST(:ids AS TEXT[])))"
    sql = sql_text("queries/malformed_triples.sql").format(only=only)
    if store.kind == "postgresql":  # regexp_matches is DuckDB's; PostgreSQL says ~
        sql = sql.replace(
            "NOT regexp_matches(predicate, '^[a-z][a-z0-9_]*$')", "predicate !~ '^[a-z][a-z0-9_]*$'"
        )
    return store.fetch_df(sql, None if ids is None else {"ids": list(ids)})


# -- what the lint's semantic layer reads (:mod:`memvault.lint.semantic`) ---------------------

_NEW_TRIPLES_SQL = """
SELECT t.id FROM triples t
WHERE t.status = 'active' AND t.id IN (
    SELECT target_id FROM audit_log
    WHERE target_table = 'triples' AND action IN ('insert', 'ingest') {since})
ORDER BY t.created_at DESC, t.id
"""

_GROUP_FACTS_SQL = """
SELECT t.id, t.subject_id, t.predicate, t.object, t.created_at
FROM triples t
JOIN (SELECT DISTINCT subject_id, predicate FROM triples
      WHERE id = ANY(CAST(:ids AS TEXT[])) AND predicate <> ALL(CAST(:functional AS TEXT[]))) g
  ON g.subject_id = t.subject_id AND g.predicate = t.predicate
WHERE t.status = 'active'
"""


def active_triples_written_since(store: Store, since: dt.datetime | None) -> list[str]:
    """The active facts the audit log says were inserted or ingested after ``since`` (store
    time; every one when None), newest first."""
    clause, params = ("AND created_at > :since", {"since": since}) if since else ("", {})
    return [str(r[0]) for r in store.fetch(_NEW_TRIPLES_SQL.format(since=clause), params)]


def active_facts_in_groups_of(
    store: Store, ids: Sequence[str], functional: Sequence[str]
) -> pl.DataFrame:
    """The active facts sharing a subject and predicate with one of ``ids``, predicates in
    ``functional`` left out: id, subject_id, predicate, object, created_at."""
    return store.fetch_df(_GROUP_FACTS_SQL, {"ids": list(ids), "functional": list(functional)})


def facts_with_subject_names(store: Store, ids: Sequence[str]) -> pl.DataFrame:
    """The facts among ``ids`` with their subject's name: id, predicate, object, valid_at,
    created_at, subject."""
    return store.fetch_df(
        "SELECT t.id, t.predicate, t.object, t.valid_at, t.created_at, e.name AS subject "
        "FROM triples t LEFT JOIN entities e ON e.id = t.subject_id "
        "WHERE t.id = ANY(CAST(:ids AS TEXT[]))",
        {"ids": list(ids)},
    )


def values_per_subject(store: Store, predicates: Sequence[str]) -> pl.DataFrame:
    """How many distinct values (object entity, else lower-cased object) each subject held
    under each of ``predicates``, current and superseded facts: predicate, subject_id,
    objects."""
    return store.fetch_df(
        "SELECT predicate, subject_id, count(DISTINCT coalesce(object_id, lower(object))) "
        "AS objects FROM triples "
        "WHERE status IN ('active', 'superseded') AND predicate = ANY(CAST(:p AS TEXT[])) "
        "GROUP BY predicate, subject_id",
        {"p": list(predicates)},
    )
