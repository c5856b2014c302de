"""The discovery inbox, read on demand: ``take_inbox`` hands out what the dream found.

Discoveries are never pushed anywhere; they wait in ``discovery_inbox`` with status
``new`` until someone asks (``memvault inbox``). Taking them marks them ``seen`` with the
time they were shown, through the audited write path (phase ``inbox``, undoable), so the
next call shows only what is new since. ``include_seen`` lists new and seen ones alike and
changes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import polars as pl

from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.entities import entity_labels_of
from memvault.store.queries.inbox import discoveries_in, new_discovery_count
from memvault.store.tracked import tracked_run

PHASE = "inbox"


def _decoded(store: Store, rows: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts with their JSON decoded and the entities' names beside their ids."""
    items = rows.to_dicts()
    for item in items:
        item["entity_ids"] = json.loads(item["entity_ids"] or "[]")
        item["detail"] = json.loads(item["detail"] or "{}")
    ids = sorted({e for item in items for e in item["entity_ids"]})
    names: dict[str, str] = {}
    if ids:
        names = {i: name for i, (name, _) in entity_labels_of(store, ids).items()}
    for item in items:
        item["entities"] = [names.get(e, e) for e in item["entity_ids"]]
    return items


def count_new(store: Store) -> int:
    return new_discovery_count(store)


def take_inbox(
    store: Store,
    limit: int = 20,
    now: dt.datetime | None = None,
    *,
    include_seen: bool = False,
) -> list[dict[str, Any]]:
    """The ``limit`` most surprising new discoveries (highest score first), marked seen.

    With ``include_seen`` the new and the already seen ones are listed (most surprising
    first) and nothing is changed.
    """
    if limit < 1:
        return []
    statuses = ["new", "seen"] if include_seen else ["new"]
    rows = discoveries_in(store, statuses, limit)
    if rows.is_empty() or include_seen:
        return _decoded(store, rows)
    now = now or utcnow()
    changes = pl.DataFrame(
        {"id": rows["id"], "status": ["seen"] * rows.height, "shown_at": [now] * rows.height},
        schema_overrides={"shown_at": pl.Datetime("us")},
    )
    with tracked_run(store, "inbox", {"limit": limit}) as run, store.mutation(run.id, PHASE) as m:
        m.update_many("discovery_inbox", changes, action="inbox-seen", reason="shown")
        run.stats = {"shown": rows.height}
    shown = rows.with_columns(status=pl.lit("seen"), shown_at=pl.lit(now, dtype=pl.Datetime("us")))
    return _decoded(store, shown)
