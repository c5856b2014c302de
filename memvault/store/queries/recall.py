"""The recall family (``prefetch_cache``, ...): what recall keeps between questions."""

from __future__ import annotations

import datetime as dt

from memvault.store.store import Store


def live_prefetch_count(store: Store, now: dt.datetime) -> int:
    """How many prefetched answers have not expired at ``now``."""
    return int(
        store.fetch("SELECT count(*) FROM prefetch_cache WHERE expires_at > :now", {"now": now})[0][
            0
        ]
    )
