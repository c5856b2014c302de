"""A fresh bias: what the owner attends to now, read from the latest daily snapshot.

The interest profile writes one row a day (``profile_daily``) whose ``top_entities`` are
the people and things the owner's attention centres on that day (personalized PageRank over
the entity graph, restarting at the day's mentions). Recall reads the newest row, not a
window recomputed per query, and lets a memory that mentions one of those entities rise a
little: between two memories that answer a question alike, the one about what the owner is
busy with now comes first. It is a tie-breaker, never a reason to find a memory: it is added
only to the candidates the question's own words, vector and entities found, and at most
``FRESH_BIAS`` (a fifth of what naming an entity in the question is worth).

A store without a snapshot (never profiled, or a fresh import) has no bias.
"""

from __future__ import annotations

import datetime as dt
import json

from memvault.store import Store
from memvault.store.queries.profile import latest_top_entities

#: What mentioning the snapshot's first entity adds to a candidate's score; the entity ranked
#: k-th (from 0) adds ``FRESH_BIAS / (1 + k)``.
FRESH_BIAS = 0.05
#: How many of the snapshot's top entities count.
TOP_ENTITIES = 10


def attention(store: Store, day: dt.date) -> dict[str, float]:
    """Entity id -> the bias a memory mentioning it gets, from the newest snapshot of ``day``
    or before (empty without one)."""
    raw = latest_top_entities(store, day)
    if not raw:
        return {}
    try:
        top = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    out: dict[str, float] = {}
    for rank, item in enumerate(top[:TOP_ENTITIES]):
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out.setdefault(item["id"], FRESH_BIAS / (1 + rank))
    return out
