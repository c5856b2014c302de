"""Surprise discovery and the inbox on a built two-community graph (DuckDB and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from memvault.graph import GraphConfig, compute_centrality, detect_communities, refresh_edges
from memvault.graph.discovery import DiscoveryReport, discover
from memvault.inbox import take_inbox
from memvault.store import Store, undo_run
from tests.store.test_graph import add_vectors, add_world

PEOPLE = ["p1", "p2", "p3", "p4", "p5", "p6"]
TOOLS = ["t1", "t2", "t3", "t4", "t5"]
TYPES = {**dict.fromkeys(PEOPLE, "person"), "o1": "organization"}
TYPES |= {**dict.fromkeys(TOOLS, "tool"), "j1": "project"}
#: p4 and p5 are never mentioned together but share p1, p2 and p3.
GROUP_A = [["p1", "p2", "p3"], ["p1", "p2", "o1"], ["p4", "p1", "p2"], ["p5", "p2", "p3"],
           ["p4", "p3"], ["p5", "p1"], ["p6", "p1", "o1"], ["p6", "p2"]]  # fmt: skip
GROUP_B = [["t1", "t2", "t3"], ["t3", "t4", "t5"], ["t1", "t4", "j1"], ["t2", "t5", "j1"],
           ["t1", "t5"], ["t2", "t4"]]  # fmt: skip


def _world(store: Store) -> None:
    world = {}
    for s in range(8):
        world[f"a{s}"] = [(f"a{s}-{k}", m) for k, m in enumerate(GROUP_A)]
        world[f"b{s}"] = [(f"b{s}-{k}", m) for k, m in enumerate(GROUP_B)]
    add_world(store, world, TYPES)
    # Five of the six people have an employer on record; p6 has none.
    at = dt.datetime(2026, 3, 2)
    facts = [
        {"id": f"f-{p}", "subject_id": p, "predicate": "works_at", "object": "Org One",
         "object_id": "o1", "valid_at": at, "created_at": at, "status": "active"}
        for p in PEOPLE[:5]
    ]  # fmt: skip
    with store.mutation("ingest-facts", "ingest") as m:
        m.insert("triples", pl.DataFrame(facts))


def _bridge(store: Store) -> None:
    """p1 and t1, of the two groups, named together again and again: one strong new edge."""
    sessions = {f"x{s:02d}": [(f"x{s}-{k}", ["p1", "t1"]) for k in range(2)] for s in range(16)}
    add_world(store, sessions, {}, start=dt.datetime(2026, 4, 1), run_id="ingest-bridge")
    add_vectors(store, {"p1": (1.0, 0.0, 0.0), "t1": (1.0, 0.1, 0.0)})


def _dream(store: Store, run_id: str, *, dry_run: bool = False) -> DiscoveryReport:
    config = GraphConfig()
    edges = refresh_edges(store, config, run_id, dry_run=dry_run)
    communities = detect_communities(store, config, run_id, dry_run=dry_run)
    centrality = compute_centrality(store, config, run_id, dry_run=dry_run)
    return discover(store, config, run_id, edges, communities, centrality, dry_run=dry_run)


def _inbox(store: Store) -> list[dict]:
    rows = store.fetch_df("SELECT * FROM discovery_inbox ORDER BY id").to_dicts()
    for row in rows:
        row["entity_ids"] = json.loads(row["entity_ids"])
        row["detail"] = json.loads(row["detail"])
    return rows


def test_discoveries_of_each_kind_found_once_and_never_again(store: Store) -> None:
    _world(store)
    first = _dream(store, "dream-one")
    assert first.skipped["cross_community"].startswith("first graph")
    assert first.written["cross_community"] == 0
    inbox = _inbox(store)
    kinds = {(r["kind"], tuple(r["entity_ids"])) for r in inbox}
    assert ("indirect_strong", ("p4", "p5")) in kinds
    assert ("knowledge_gap", ("p6",)) in kinds
    gap = next(r for r in inbox if r["kind"] == "knowledge_gap")
    assert gap["signature"] == "knowledge_gap:works_at|p6"
    assert gap["explanation"].startswith("No employer on record for p6: 5 of the 5 other persons")
    assert gap["detail"]["predicate"] == "works_at" and gap["score"] == 1.0
    pair = next(r for r in inbox if r["entity_ids"] == ["p4", "p5"])
    assert pair["signature"] == "indirect_strong|p4,p5" and pair["detail"]["shared_neighbours"] == 3
    assert "never mentioned together" in pair["explanation"]
    assert all(r["status"] == "new" and r["run_id"] == "dream-one" for r in inbox)
    audited = store.fetch(
        "SELECT count(*) FROM audit_log WHERE run_id = 'dream-one' AND phase = 'dream_signal' "
        "AND target_table = 'discovery_inbox'"
    )[0][0]
    assert audited == len(inbox)

    _bridge(store)
    second = _dream(store, "dream-two")
    assert second.written == {"cross_community": 1, "indirect_strong": 0, "knowledge_gap": 0}
    bridges = [r for r in _inbox(store) if r["kind"] == "cross_community"]
    assert len(bridges) == 1 and bridges[0]["entity_ids"] == ["p1", "t1"]
    assert bridges[0]["detail"]["edge_id"] == "p1|t1"
    assert bridges[0]["detail"]["composite_weight"] >= second.bridge_threshold
    assert "only link between their two groups" in bridges[0]["explanation"]

    before = _inbox(store)
    third = _dream(store, "dream-three")
    assert sum(third.written.values()) == 0 and third.already_known == sum(third.found.values())
    assert _inbox(store) == before


def test_an_edge_inside_a_community_or_a_weak_one_is_no_bridge(store: Store) -> None:
    _world(store)
    _dream(store, "dream-one")
    # New co-mentions inside group A (p4 with p5) and one weak cross mention (p3 with t3).
    extra = {f"y{s}": [(f"y{s}-0", ["p4", "p5"])] for s in range(6)}
    extra["y9"] = [("y9-0", ["p3", "t3"])]
    add_world(store, extra, {}, start=dt.datetime(2026, 4, 1), run_id="ingest-extra")
    second = _dream(store, "dream-two")
    assert second.new_connected_edges >= 1  # p4|p5 became connected
    assert second.found["cross_community"] == 0


def test_a_dry_run_counts_and_writes_nothing(store: Store) -> None:
    _world(store)
    refresh_edges(store, GraphConfig(), "graph-before")  # a dry run reads the stored graph
    report = _dream(store, "dream-dry", dry_run=True)
    assert report.written["knowledge_gap"] == 1 and report.written["indirect_strong"] >= 1
    assert store.fetch("SELECT count(*) FROM discovery_inbox")[0][0] == 0


def test_the_inbox_hands_out_the_most_surprising_first_and_marks_them_seen(store: Store) -> None:
    _world(store)
    _dream(store, "dream-one")
    total = len(_inbox(store))
    assert total >= 3
    now = dt.datetime(2026, 6, 2, 8, 0)
    taken = take_inbox(store, limit=2, now=now)
    assert len(taken) == 2
    assert taken[0]["score"] >= taken[1]["score"]
    assert taken[0]["kind"] == "knowledge_gap" and taken[0]["entities"] == ["p6"]
    assert all(t["status"] == "seen" and t["shown_at"] == now for t in taken)
    rows = {r["id"]: r for r in _inbox(store)}
    assert all(
        rows[t["id"]]["status"] == "seen" and rows[t["id"]]["shown_at"] == now for t in taken
    )
    run_id = store.fetch(
        "SELECT DISTINCT run_id FROM audit_log WHERE phase = 'inbox' AND action = 'inbox-seen'"
    )
    assert len(run_id) == 1
    changed = store.fetch("SELECT count(*) FROM audit_log WHERE run_id = :r", {"r": run_id[0][0]})[
        0
    ][0]
    assert changed == 2

    rest = take_inbox(store, limit=50, now=now)
    assert len(rest) == total - 2 and not {t["id"] for t in rest} & {t["id"] for t in taken}
    assert take_inbox(store, limit=50, now=now) == []

    everything = take_inbox(store, limit=50, include_seen=True)
    assert len(everything) == total
    scores = [e["score"] for e in everything]
    assert scores == sorted(scores, reverse=True)
    assert store.fetch("SELECT count(*) FROM audit_log WHERE phase = 'inbox'")[0][0] == total

    undo_run(store, run_id[0][0])  # being shown is undoable like any other change
    assert {r["status"] for r in _inbox(store) if r["id"] in {t["id"] for t in taken}} == {"new"}


@pytest.mark.parametrize("limit", [0])
def test_a_zero_limit_takes_nothing(store: Store, limit: int) -> None:
    _world(store)
    _dream(store, "dream-one")
    assert take_inbox(store, limit=limit) == []
    assert store.fetch("SELECT count(*) FROM discovery_inbox WHERE status = 'new'")[0][0] > 0


def test_a_dream_resumed_after_its_edges_were_written_still_finds_the_bridge(store: Store) -> None:
    _world(store)
    _dream(store, "dream-one")
    _bridge(store)
    config = GraphConfig()
    refresh_edges(store, config, "dream-two")  # the first attempt wrote the edges, then died
    edges = refresh_edges(store, config, "dream-two")  # the re-executed step finds them written
    assert edges.newly_connected == []
    communities = detect_communities(store, config, "dream-two")
    centrality = compute_centrality(store, config, "dream-two")
    report = discover(store, config, "dream-two", edges, communities, centrality)
    assert report.written["cross_community"] == 1, "the audit log remembers the new edge"
