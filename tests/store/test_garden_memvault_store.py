"""memvault's store as a garden store, on DuckDB and PostgreSQL: every capability, audited."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

import memvault
from memvault.gardener.adapter import (
    Capability,
    CapabilityMissing,
    FactQuery,
    ItemChanges,
    ItemQuery,
    NewFact,
    NewItem,
    WriteContext,
)
from memvault.gardener.adapters import open_garden_store
from memvault.gardener.adapters.memvault_store import (
    MemvaultGardenStore,
    drop_backup_schema,
    restore_backup,
)
from memvault.gardener.capabilities import survey
from memvault.normalize import utcnow
from memvault.store import Store
from tests.garden_support import HASHING, demo_file, drop_backup_schemas, seed
from tests.helpers import export_text, table_dump

CTX = WriteContext("garden-test", "test", "testing")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, _ = demo_file(tmp_path_factory.mktemp("demo"), sessions=40, days=90)
    return path


@pytest.fixture
def garden_store(store_url: str, demo: Path) -> Iterator[MemvaultGardenStore]:
    with memvault.open(store_url) as store:
        seed(store, demo)
        adapter = MemvaultGardenStore(store, embedder=HASHING)
        adapter.bind(survey(adapter.name, adapter.tools()).mapping)
        store.begin_run("garden", {}, run_id=CTX.run_id)
        yield adapter
    drop_backup_schemas(store_url)


def _audit(store: Store, action: str) -> list[dict]:
    return store.fetch_df(
        "SELECT * FROM audit_log WHERE run_id = :r AND action = :a ORDER BY id",
        {"r": CTX.run_id, "a": action},
    ).to_dicts()


def test_the_survey_finds_every_capability_by_intent(garden_store: MemvaultGardenStore) -> None:
    found = survey(garden_store.name, garden_store.tools())
    assert found.missing == []
    assert found.mapping[Capability.KG_INVALIDATE].name == "memvault_invalidate_triple"


def test_an_unbound_capability_is_missing_not_faked(store: Store) -> None:
    adapter = MemvaultGardenStore(store)
    adapter.bind({})
    with pytest.raises(CapabilityMissing, match="mutate"):
        adapter.update_item(CTX, "x", ItemChanges(text="y"))


def test_listing_orders_and_filters(garden_store: MemvaultGardenStore) -> None:
    longest = garden_store.list_items(ItemQuery(order="longest", limit=5))
    assert [i.chars for i in longest] == sorted((i.chars for i in longest), reverse=True)
    assert all(i.kind == "memory" for i in longest)  # transcript turns are not tended
    bloated = garden_store.list_items(ItemQuery(min_chars=750, limit=1000))
    assert bloated and all(i.chars > 750 for i in bloated)
    page1 = garden_store.list_items(ItemQuery(order="oldest", limit=3))
    page2 = garden_store.list_items(ItemQuery(order="oldest", limit=3, after=page1[-1].id))
    both = garden_store.list_items(ItemQuery(order="oldest", limit=6))
    assert [i.id for i in page1 + page2] == [i.id for i in both]
    cutoff = utcnow() - dt.timedelta(days=30)
    stale = garden_store.list_items(ItemQuery(untouched_before=cutoff, include_pinned=False))
    assert stale and all(i.last_touched_at and i.last_touched_at < cutoff for i in stale)
    assert not any(i.pinned for i in stale)
    hits = garden_store.search(longest[0].text.split(".")[0], limit=3)
    assert longest[0].id in [h.id for h in hits]


def test_writes_are_audited_and_archive_keeps_the_row(garden_store: MemvaultGardenStore) -> None:
    store = garden_store.store
    a, b = garden_store.list_items(ItemQuery(order="oldest", limit=2))
    change = garden_store.update_item(
        CTX, a.id, ItemChanges(text=a.text + " More.", importance=0.9)
    )
    assert change.audited and change.before["text"] == a.text  # type: ignore[index]
    assert store.get_row("blocks", a.id)["text"] == a.text + " More."
    garden_store.archive_item(CTX, b.id, pointer_to=a.id)
    row = store.get_row("blocks", b.id)
    assert row["status"] == "archived" and row["parent_id"] == a.id
    assert f"merged-into:{a.id}" in json.loads(row["tags"])
    when = utcnow() + dt.timedelta(days=90)
    garden_store.set_expiry(CTX, a.id, when)
    assert store.get_row("blocks", a.id)["expires_at"] is not None
    created = garden_store.create_item(CTX, NewItem(text="A new detail.", parent_id=a.id))
    child = store.get_row("blocks", created.target_id)
    assert child["parent_id"] == a.id and child["session_id"] == a.container
    actions = {
        r["action"]
        for r in store.fetch_df(
            "SELECT action FROM audit_log WHERE run_id = :r", {"r": CTX.run_id}
        ).to_dicts()
    }
    assert {"update", "archive", "expire", "create"} <= actions


def test_search_is_recalls_search_over_memory_items(garden_store: MemvaultGardenStore) -> None:
    """The garden store finds what recall finds (no search of its own), memories only."""
    created = garden_store.create_item(
        CTX, NewItem(text="The quokka sanctuary moved its feeding rota to Thursdays.")
    )
    hits = garden_store.search("when is the quokka feeding rota", limit=3)
    assert hits and hits[0].id == created.target_id
    assert all(h.kind not in ("user_turn", "assistant_turn") for h in hits)
    garden_store.archive_item(CTX, created.target_id, pointer_to=None)
    assert created.target_id not in [h.id for h in garden_store.search("quokka feeding rota")]


def test_duplicate_candidates_match_brute_force(garden_store: MemvaultGardenStore) -> None:
    import numpy as np

    ids, matrix = garden_store.item_vectors()
    assert len(ids) == len(garden_store.list_items(ItemQuery(limit=100_000)))
    window = ids[-50:]
    found = garden_store.duplicate_candidates(window, 0.8)
    sims = matrix.astype(np.float64) @ matrix.T.astype(np.float64)

    def pairs_at(threshold: float) -> set[tuple[str, ...]]:
        return {
            tuple(sorted((ids[i], ids[j])))
            for i in range(len(ids))
            for j in np.nonzero(sims[i] >= threshold)[0]
            if i != j and (ids[i] in window or ids[j] in window)
        }

    # A pair at the threshold itself may round either way in float32 (the hashing embedder
    # makes exact 0.8s): every pair clearly above is found, none clearly below.
    assert pairs_at(0.8 + 1e-6) <= {(p.a_id, p.b_id) for p in found} <= pairs_at(0.8 - 1e-6)
    assert all(p.similarity >= 0.8 for p in found)


def test_facts_invalidate_and_timeline(garden_store: MemvaultGardenStore) -> None:
    store = garden_store.store
    row = store.fetch(
        "SELECT subject_id, predicate FROM triples GROUP BY 1, 2 HAVING count(DISTINCT object) > 1 LIMIT 1"
    )
    subject, predicate = row[0]
    facts = garden_store.facts(FactQuery(subject=subject, predicate=predicate))
    old, new = facts[0], facts[-1]
    garden_store.invalidate_fact(CTX, old.id, invalid_at=new.valid_at, superseded_by=new.id)
    after = store.get_row("triples", old.id)
    assert after["status"] == "superseded" and after["superseded_by"] == new.id
    assert after["invalid_at"] == new.valid_at and after["expired_at"] is not None
    active = garden_store.facts(FactQuery(subject=subject, predicate=predicate))
    assert old.id not in [f.id for f in active]
    history = garden_store.timeline(subject, predicate)
    assert old.id in [f.id for f in history]  # the timeline keeps it
    added = garden_store.add_fact(
        CTX, NewFact(subject=subject, predicate=predicate, object="a value")
    )
    assert store.get_row("triples", added.target_id)["object"] == "a value"


def test_orphans_get_one_unambiguous_link(garden_store: MemvaultGardenStore) -> None:
    store = garden_store.store
    parent, survivor, child = garden_store.list_items(ItemQuery(order="oldest", limit=3))
    garden_store.update_item(CTX, child.id, ItemChanges(parent_id=parent.id))
    garden_store.archive_item(CTX, parent.id, pointer_to=survivor.id)
    orphans = {o.id: o for o in garden_store.orphans(10)}
    node = orphans[child.id]
    assert node.problem == "parent archived"
    (link,) = garden_store.link_candidates(node)
    assert link.target_id == survivor.id
    garden_store.add_link(CTX, node, link)
    assert store.get_row("blocks", child.id)["parent_id"] == survivor.id
    # An entity nobody mentions is the dream's to archive (and revive): not a garden orphan.
    name = f"Zorblax {secrets.token_hex(2)}"
    with store.mutation(CTX.run_id, "test") as m:
        import polars as pl

        m.insert("entities", pl.DataFrame([{"id": "ent_lonely", "name": name, "canonical_name": name.lower(), "entity_type": "tool", "aliases": "[]", "status": "active", "created_at": utcnow()}]))  # fmt: skip
    garden_store.update_item(CTX, survivor.id, ItemChanges(text=survivor.text + f" We use {name}."))
    assert all(o.node_kind == "item" for o in garden_store.orphans(100))
    assert "reconnect" in garden_store.delegated and "invalidate" in garden_store.delegated_whole


def test_journal_stats_and_artifacts(garden_store: MemvaultGardenStore) -> None:
    before = garden_store.stats()
    garden_store.write_journal(CTX, "Two sentences. Garden state: calm.")
    assert garden_store.last_journal().text.startswith("Two sentences")  # type: ignore[union-attr]
    assert garden_store.stats()["journal"] == before["journal"] + 1
    saved = garden_store.save_artifact(CTX, "garden-report", "r", "# report\n")
    assert garden_store.read_artifact(saved.target_id).content == "# report\n"  # type: ignore[union-attr]
    assert garden_store.last_artifact("garden-report").id == saved.target_id  # type: ignore[union-attr]


def test_backup_restores_the_store_as_it_was(
    garden_store: MemvaultGardenStore, store_url: str, tmp_path: Path
) -> None:
    store = garden_store.store
    expected = export_text(store)
    expected_audit = table_dump(store, "audit_log")
    ref = garden_store.backup("test")
    # Change the live store afterwards: the snapshot must not see it.
    item = garden_store.list_items(ItemQuery(limit=1))[0]
    garden_store.update_item(CTX, item.id, ItemChanges(text="changed after the backup"))
    if store_url.startswith("duckdb"):
        target_url = f"duckdb://{tmp_path / 'restored.duckdb'}"
    else:
        target_url = store_url.replace("schema=", "schema=r")
    try:
        restored = restore_backup(ref, target_url)
        with restored:
            assert export_text(restored) == expected
            assert table_dump(restored, "audit_log") == expected_audit
            # The restored store works: its audit sequence continues after the restored rows.
            with restored.mutation("after-restore", "test") as m:
                m.update("blocks", item.id, {"importance": 0.5}, action="test")
    finally:
        drop_backup_schema(store, ref)
        if target_url.startswith("postgresql"):
            import psycopg

            from tests.helpers import PG_URL

            with psycopg.connect(PG_URL, autocommit=True) as con:
                con.execute(f"DROP SCHEMA IF EXISTS {target_url.rsplit('schema=', 1)[1]} CASCADE")


def test_open_garden_store_picks_the_adapter_by_url(tmp_path: Path) -> None:
    adapter = open_garden_store(f"duckdb://{tmp_path / 'x.duckdb'}")
    try:
        assert isinstance(adapter, MemvaultGardenStore)
    finally:
        adapter.close()
    from memvault.errors import MemvaultError

    with pytest.raises(MemvaultError, match="cannot garden"):
        open_garden_store("ftp://nowhere")
    with pytest.raises(MemvaultError, match="names no command"):
        open_garden_store("mcp+stdio:")
