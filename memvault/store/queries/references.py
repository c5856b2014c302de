"""References between the shared tables: a column that names a row of another table, and the
rows whose reference points at nothing (one definition, the queries built from it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from memvault.store.store import Store


@dataclass(frozen=True)
class Reference:
    """``table.column`` holds an id of a row of ``target``."""

    name: str
    table: str
    column: str
    target: str


#: Every reference between memvault's tables that must resolve, by name.
REFERENCES: tuple[Reference, ...] = (
    Reference("triple.subject_id", "triples", "subject_id", "entities"),
    Reference("triple.object_id", "triples", "object_id", "entities"),
    Reference("mention.entity_id", "mentions", "entity_id", "entities"),
    Reference("mention.block_id", "mentions", "block_id", "blocks"),
    Reference("block.session_id", "blocks", "session_id", "sessions"),
    Reference("block.parent_id", "blocks", "parent_id", "blocks"),
)
_BY_NAME = {r.name: r for r in REFERENCES}


def dangling_sql(*names: str, only_rows: bool = False) -> str:
    """A query (reference, row_id, points_at) for the dangling rows of the named references
    (all when none is named): the data layer's queries join it to filter further.
    ``only_rows``: of the rows whose ids are bound as ``:rows`` only."""
    chosen = [_BY_NAME[n] for n in names] if names else list(REFERENCES)
    only = " AND r.id IN (SELECT unnest(CAST(:rows AS TEXT[])))" if only_rows else ""
    return "\nUNION ALL\n".join(
        f"SELECT '{r.name}' AS reference, r.id AS row_id, r.{r.column} AS points_at "
        f"FROM {r.table} r WHERE r.{r.column} IS NOT NULL{only} "
        f"AND NOT EXISTS (SELECT 1 FROM {r.target} x WHERE x.id = r.{r.column})"
        for r in chosen
    )


def dangling_references(
    store: Store, *names: str, rows: Sequence[str] | None = None
) -> pl.DataFrame:
    """Every dangling row of the named references (all when none is named), by reference
    then row id; of the rows with these ids only, when ``rows`` is given (a lint reading what
    changed)."""
    if rows is None:
        return store.fetch_df(f"SELECT * FROM ({dangling_sql(*names)}) d ORDER BY 1, 2")
    return store.fetch_df(
        f"SELECT * FROM ({dangling_sql(*names, only_rows=True)}) d ORDER BY 1, 2",
        {"rows": list(rows)},
    )


def dangling_counts(store: Store) -> dict[str, int]:
    """How many rows of each reference point at nothing (every reference, zeros too)."""
    counts = dict.fromkeys((r.name for r in REFERENCES), 0)
    rows = store.fetch(f"SELECT reference, count(*) FROM ({dangling_sql()}) d GROUP BY 1")
    counts.update({str(name): int(n) for name, n in rows})
    return counts
