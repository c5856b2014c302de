"""Every review item carries an impact score: the gardener's proposals and doubted facts too.

The review page and ``memvault review`` show each item's impact (how much of the memory the
change would move); an item queued without one showed "impact —". These queue proposals
as the gardener and the LLM import do, on a store where one entity is central and has many
facts and another is peripheral, and read the items back as the page does.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from memvault.gardener.ledger import Ledger
from memvault.importers.enrich import Doubt, queue_doubts
from memvault.records import TripleRecord
from memvault.review import list_items
from memvault.review.impact import ImpactInputs, impact_score
from memvault.store import Store
from tests.helpers import TEST_NOW
from tests.store.temporal_history import History


def _store(store: Store, tmp_path: Path) -> None:
    """Ada: central, six facts, mentioned by a memory; Bob: peripheral, one fact."""
    h = History()
    h.entity("ada", "Ada")
    h.entity("bob", "Bob")
    for i in range(6):
        h.fact(f"ada{i}", "ada", "likes", f"thing {i}", created=f"2026-0{i + 1}-02",
               text=f"Ada likes thing {i}.")  # fmt: skip
    h.fact("bob0", "bob", "likes", "tea", created="2026-07-02", text="Bob likes tea.")
    h.records.append({"type": "mention", "entity": "ada", "block_id": "blk_ada0",
                      "session_id": "ses_2026-01-02", "mentioned_at": "2026-01-02T00:00:00Z"})  # fmt: skip
    h.ingest(store, tmp_path)
    for entity, ppr in (("ada", 0.9), ("bob", 0.1)):
        store.backend.execute(
            "INSERT INTO centrality (entity_id, pagerank, ppr, degree, updated_at) "
            "VALUES (:e, :p, :p, 1, :t)",
            {"e": entity, "p": ppr, "t": TEST_NOW.replace(tzinfo=None)},
        )


def test_gardener_proposals_carry_an_impact_score_weighed_by_their_subject(
    store: Store, tmp_path: Path
) -> None:
    _store(store, tmp_path)
    run = store.begin_run("garden", {})
    ledger = Ledger(store)

    def propose(action: str, table: str, target: str) -> None:
        ledger.propose(run, "test", store_name="memvault", action=action, target_table=table,
                       target_id=target, certain=False, confidence=0.5, reason="test")  # fmt: skip

    propose("invalidate", "triples", "ada1")  # retires a current fact of the central entity
    propose("invalidate", "triples", "bob0")  # the same of a peripheral one
    propose("merge", "blocks", "blk_ada0")  # a memory that mentions the central entity
    propose("reconnect", "item", "not-in-this-store")  # an MCP server's item
    items = {item.target_id: item for item in list_items(store)}
    assert all(item.impact_score is not None for item in items.values()), items
    scores = {target: item.impact_score or 0.0 for target, item in items.items()}
    assert scores["ada1"] > scores["bob0"] > scores["not-in-this-store"] == 0.0, scores
    assert scores["blk_ada0"] == scores["ada1"], "a memory weighs what its central entity does"
    ada = items["ada1"].impact_inputs
    assert ada == {"centrality": 1.0, "dependents": 6, "layer": False, "retires_current": True}
    assert scores["ada1"] == impact_score(ImpactInputs(**ada))


def test_a_doubted_fact_is_weighed_by_its_subject(store: Store, tmp_path: Path) -> None:
    _store(store, tmp_path)
    run = store.begin_run("ingest", {})
    when = dt.datetime(2026, 8, 1, tzinfo=dt.UTC)
    doubts = [
        Doubt(
            triple=TripleRecord(
                id=f"new_{s}",
                subject=s,
                predicate="likes",
                object="jazz",
                created_at=when,
                source_block="blk_bob0",
            ),
            subject=s,
            reason="not stated",
            detail="the memory does not say it",
            block_text="Bob likes tea.",
        )
        for s in ("ada", "bob")
    ]
    queue_doubts(store, doubts, run)
    impacts = {item.id: item.impact_score for item in list_items(store)}
    assert None not in impacts.values(), impacts
    assert impacts["extract:new_ada"] > impacts["extract:new_bob"] > 0.0  # type: ignore[operator]
