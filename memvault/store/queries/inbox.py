"""The ``discovery_inbox`` family: what the graph's discoveries left waiting for the user."""

from __future__ import annotations

from memvault.store.store import Store


def new_discoveries_by_kind(store: Store) -> dict[str, int]:
    """How many new (unread) discoveries of each kind wait in the inbox."""
    rows = store.fetch(
        "SELECT kind, count(*) FROM discovery_inbox WHERE status = 'new' GROUP BY kind"
    )
    return {str(kind): int(n) for kind, n in rows}
