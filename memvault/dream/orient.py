"""D1 Orient: what is new since the last successful dream, in store time.

"New" is read from the audit log (rows inserted after the last dream
finished), not from the records' own timestamps: a history imported today
is new to the store even if it happened last year.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from memvault.store import Store
from memvault.store.queries.audit import inserted_ids, inserted_per_table
from memvault.store.queries.review import pending_review_count
from memvault.store.queries.runs import last_succeeded
from memvault.store.queries.triples import active_fact_count
from memvault.store.tables import COUNTED_TABLES

#: Tables whose new rows orient counts.
DELTA_TABLES: tuple[str, ...] = ("sessions", "blocks", "entities", "mentions", "triples")


@dataclass
class OrientStats:
    last_dream_at: dt.datetime | None
    last_dream_run: str | None
    new: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    active_triples: int = 0
    open_reviews: int = 0

    @property
    def sessions_since(self) -> int:
        return self.new.get("sessions", 0)

    def metadata(self) -> dict[str, Any]:
        """What is new since the last dream (``never`` before the first), and the store's
        rows per table."""
        return {
            "last_dream_at": self.last_dream_at or "never",
            **{f"new_{table}": n for table, n in self.new.items()},
            "active_triples": self.active_triples,
            "open_reviews": self.open_reviews,
            "store_rows": [{"table": t, "rows": n} for t, n in self.totals.items()],
        }

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["last_dream_at"] = self.last_dream_at.isoformat() if self.last_dream_at else None
        data["sessions_since"] = self.sessions_since
        return data


def last_dream(store: Store) -> tuple[str | None, dt.datetime | None]:
    """Id and finish time of the last dream that succeeded (a dry run does not count)."""
    found = last_succeeded(store, "dream")
    return found if found is not None else (None, None)


def new_rows_since(store: Store, since: dt.datetime | None) -> dict[str, int]:
    """Rows inserted per table after ``since`` (everything when ``since`` is None)."""
    found = inserted_per_table(store, DELTA_TABLES, since)
    return {table: found.get(table, 0) for table in DELTA_TABLES}


def new_ids_since(store: Store, table: str, since: dt.datetime | None) -> set[str]:
    """Ids of the rows of ``table`` inserted after ``since`` (all of them when None): what a
    dream sees for the first time."""
    return inserted_ids(store, table, since)


def orient(store: Store) -> OrientStats:
    run_id, finished = last_dream(store)
    stats = OrientStats(last_dream_at=finished, last_dream_run=run_id)
    stats.new = new_rows_since(store, finished)
    stats.totals = store.counts(COUNTED_TABLES)
    stats.active_triples = active_fact_count(store)
    stats.open_reviews = pending_review_count(store)
    return stats
