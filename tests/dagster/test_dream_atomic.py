"""A dream is all or nothing: one stopped by a blocking check leaves the store exactly as it
was, and a new fact that breaks its definition goes to review instead of failing dreams."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

import memvault
from memvault.lint.grounding_layer import lint_grounding
from memvault.review import decide
from memvault.store.tables import AUDITED_TABLES
from memvault.temporal import asof, grounding_violations
from resources import DreamResource
from tests.dagster.dream_support import run_dream, seed_demo_store
from tests.helpers import asset_metadata as metadata
from tests.helpers import export_text, table_dump
from tests.store.temporal_history import History, when

#: Every table a dream may change (the audited ones and the derived graph tables).
STATE_TABLES = (*AUDITED_TABLES, "communities", "centrality")


def _materialized(result: dg.ExecuteInProcessResult) -> set[str]:
    return {
        e.event_specific_data.materialization.asset_key.to_user_string()  # type: ignore[union-attr]
        for e in result.get_asset_materialization_events()
    }


def test_a_dream_stopped_by_a_blocking_check_leaves_the_store_as_it_was(
    store_url: str, tmp_path: Path
) -> None:
    seed_demo_store(store_url, tmp_path, sessions=12)
    assert run_dream(store_url).success
    # More history to dream about, and a merged fact whose survivor forgot it: no_data_loss
    # fails after this dream's consolidation whatever the dream does.
    seed_demo_store(store_url, tmp_path, sessions=12, seed=8)
    with memvault.open(store_url) as store:
        [(survivor,)] = store.fetch(
            "SELECT superseded_by FROM triples WHERE status = 'merged' ORDER BY id LIMIT 1"
        )
        # Through the audited write path (as a fault of memvault's own would): an incremental
        # night's checks read the facts the audit log names since the last dream's checks.
        with store.mutation("test-fault", "test") as m:
            m.update("triples", survivor, {"lineage": "[]"}, action="fault")
        before = {t: table_dump(store, t) for t in STATE_TABLES}
        exported = export_text(store)
    result = run_dream(store_url)
    assert not result.success
    failed = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
    assert "no_data_loss" in failed
    assert "dream_prune" not in _materialized(result)
    consolidated = metadata(result, "dream_consolidate")
    assert consolidated["rows_written"] > 0, "the dream had changed the store before its check"
    with memvault.open(store_url) as store:
        assert export_text(store) == exported
        assert {t: table_dump(store, t) for t in STATE_TABLES} == before
        [(dream_id, error)] = store.fetch(
            "SELECT id, error FROM runs WHERE kind = 'dream' AND status = 'reverted'"
        )
        assert error.startswith("blocking check(s) failed: no_data_loss")
        assert store.fetch("SELECT count(*) FROM runs WHERE status = 'running'")[0][0] == 0
        [(stats,)] = store.fetch(
            "SELECT stats FROM runs WHERE kind = 'revert' AND params LIKE :p",
            {"p": f"%{dream_id}%"},
        )
        assert '"triples"' in stats and '"communities"' in stats


def _ada_moves_to_an_organization(url: str, folder: Path) -> None:
    h = History()
    h.entity("ada", "Ada", "person")
    h.entity("paris", "Paris", "place")
    h.entity("globex", "Globex", "organization")
    h.fact("home", "ada", "lives_in", "Paris", object_id="paris", valid="2024-01-01",
           created="2024-01-02")  # fmt: skip
    h.fact("bad", "ada", "lives_in", "Globex", object_id="globex", valid="2024-06-01",
           created="2024-06-02")  # fmt: skip
    with memvault.open(url) as store:
        h.ingest(store, folder)


def test_a_new_fact_that_breaks_its_definition_goes_to_review_and_no_dream_fails(
    store_url: str, tmp_path: Path
) -> None:
    """``Ada lives_in Globex`` (an organization where a place belongs) used to fail every
    dream after it; now the dream holds it for review with its reason and goes on."""
    _ada_moves_to_an_organization(store_url, tmp_path)
    for attempt in range(2):
        result = run_dream(store_url)
        assert result.success, attempt
        assert all(e.passed for e in result.get_asset_check_evaluations()), attempt
        assert metadata(result, "dream_consolidate")["facts_held_for_review"] == (attempt == 0)
    with memvault.open(store_url) as store:
        fact = store.get_row("triples", "bad")
        assert fact is not None and fact["status"] == "held"
        assert "object type 'organization' not in range (place)" in fact["note"]
        item = store.get_row("review_queue", "grounding:bad")
        assert item is not None and item["status"] == "pending" and item["kind"] == "grounding"
        assert "object type 'organization' not in range (place)" in item["reason"]
        # Not believed, not counted: as-of answers the home, the check and the lint see nothing.
        assert [f.object for f in asof(store, "ada", "lives_in", when("2025-01-01"))] == ["Paris"]
        assert grounding_violations(store).is_empty()
        assert not [f for f in lint_grounding(store).findings if f.subject == "bad"]
        decide(store, "grounding:bad", "wrong")
        assert store.get_row("triples", "bad")["status"] == "invalidated"  # type: ignore[index]
        assert grounding_violations(store).is_empty()
    assert run_dream(store_url).success


def test_a_person_can_vouch_for_a_held_fact(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    _ada_moves_to_an_organization(url, tmp_path)
    assert run_dream(url).success
    with memvault.open(url) as store:
        decide(store, "grounding:bad", "correct")
        fact = store.get_row("triples", "bad")
        assert fact is not None and fact["status"] == "active" and fact["expired_at"] is None
    # The person's word stands: the fact is not held again, and no later dream fails on it.
    result = run_dream(url)
    assert result.success
    assert metadata(result, "dream_consolidate")["facts_held_for_review"] == 0
    with memvault.open(url) as store:
        assert store.get_row("triples", "bad")["status"] in ("active", "superseded")  # type: ignore[index]


def test_a_dry_run_only_counts_what_it_would_hold(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    _ada_moves_to_an_organization(url, tmp_path)
    result = run_dream(url, dream=DreamResource(dry_run=True))
    assert metadata(result, "dream_consolidate")["facts_held_for_review"] == 1
    with memvault.open(url) as store:
        assert store.get_row("triples", "bad")["status"] == "active"  # type: ignore[index]
        assert store.get_row("review_queue", "grounding:bad") is None
        assert store.fetch("SELECT count(*) FROM runs WHERE status = 'running'")[0][0] == 0
