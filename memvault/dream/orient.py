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
    rows = store.fetch(
        "SELECT id, finished_at FROM runs WHERE kind = 'dream' AND status = 'succeeded' "
        "ORDER BY finished_at DESC, id DESC LIMIT 1"
    )
    return (rows[0][0], rows[0][1]) if rows else (None, None)


def new_rows_since(store: Store, since: dt.datetime | None) -> dict[str, int]:
    """Rows inserted per table after ``since`` (everything when ``since`` is None)."""
    params: dict[str, object] = {"tables": list(DELTA_TABLES)}
    where = ""
    if since is not None:
        where, params["since"] = "AND created_at > :since", since
    rows = store.fetch(
        "SELECT target_table, count(DISTINCT target_id) FROM audit_log "
        f"WHERE action IN ('insert', 'ingest') AND target_table = ANY(:tables) {where} "
        "GROUP BY target_table",
        params,
    )
    found = {table: int(n) for table, n in rows}
    return {table: found.get(table, 0) for table in DELTA_TABLES}


def new_ids_since(store: Store, table: str, since: dt.datetime | None) -> set[str]:
    """Ids of the rows of ``table`` inserted after ``since`` (all of them when None): what a
    dream sees for the first time."""
    params: dict[str, object] = {"t": table}
    where = ""
    if since is not None:
        where, params["since"] = "AND created_at > :since", since
    rows = store.fetch(
        "SELECT DISTINCT target_id FROM audit_log "
        f"WHERE action IN ('insert', 'ingest') AND target_table = :t {where}",
        params,
    )
    return {str(r[0]) for r in rows}


def orient(store: Store) -> OrientStats:
    run_id, finished = last_dream(store)
    stats = OrientStats(last_dream_at=finished, last_dream_run=run_id)
    stats.new = new_rows_since(store, finished)
    stats.totals = store.counts(COUNTED_TABLES)
    stats.active_triples = int(
        store.fetch("SELECT count(*) FROM triples WHERE status = 'active'")[0][0]
    )
    stats.open_reviews = int(
        store.fetch("SELECT count(*) FROM review_queue WHERE status = 'pending'")[0][0]
    )
    return stats
