"""Facts as stored: the bi-temporal triples with the names of their entities.

One home for reading triples as a list of facts (by subject, predicate, or what the store
learned since a time), the timeline of one subject and predicate, and what counts as a
*current* fact: active, not ended in the world (``invalid_at``) and not retired by the
store (``expired_at``).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from memvault.store import Store

#: ``WHERE`` condition (on triples ``t``) of a current fact.
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
