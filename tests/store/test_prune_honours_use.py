"""The dream's prune leaves alone an orphan entity the owner still asks about."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from memvault.dream.prune import find_orphans, prune_orphans
from memvault.normalize import utcnow
from memvault.store import Store


def test_an_orphan_named_by_a_recent_recall_is_not_archived(store: Store) -> None:
    now = utcnow()
    old = now - dt.timedelta(days=60)
    entities = pl.DataFrame(
        {
            "id": ["ent-asked", "ent-asked-long-ago", "ent-forgotten"],
            "name": ["Asked", "Asked long ago", "Forgotten"],
            "canonical_name": ["asked", "asked long ago", "forgotten"],
            "entity_type": ["project"] * 3,
            "aliases": ["[]"] * 3,
            "status": ["active"] * 3,
            "created_at": [old] * 3,
        }
    )
    recalls = pl.DataFrame(
        {
            "id": ["r1", "r2"],
            "query": ["status of Asked?", "status of Asked long ago?"],
            "entities": [json.dumps(["ent-asked"]), json.dumps(["ent-asked-long-ago"])],
            "result_ids": ["[]", "[]"],
            "created_at": [now - dt.timedelta(days=3), now - dt.timedelta(days=45)],
        }
    )
    with store.mutation("seed", "seed") as m:
        m.insert("entities", entities)
        m.insert("recall_log", recalls)
    assert set(find_orphans(store)["id"].to_list()) == {"ent-asked-long-ago", "ent-forgotten"}
    result = prune_orphans(store, "dream-test")
    assert result.archived == 2 and result.kept_by_use == 1
    status = dict(store.fetch("SELECT id, status FROM entities ORDER BY id"))
    assert status == {
        "ent-asked": "active",
        "ent-asked-long-ago": "archived",
        "ent-forgotten": "archived",
    }
