"""Edges, communities and centrality against a real store (DuckDB and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any, cast

import numpy as np
import polars as pl
import pytest

from memvault import clock
from memvault.graph import (
    GraphConfig,
    compute_centrality,
    detect_communities,
    recent_seeds,
    refresh_edges,
    top_central,
)
from memvault.graph.config import SIGNALS
from memvault.graph.edges import CURSOR_KEY, compute_edges
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.graph import counted_mentions
from memvault.vectors import load_vectors
from tests.helpers import table_dump

T0 = dt.datetime(2026, 3, 1, 9, 0)
MODEL = "test-3d"
TYPES = ("person", "organization", "place", "project", "tool", "concept")
EXACT = GraphConfig(write_tolerance=0.0, drift_tolerance=0.0)


# -- building a small world through the audited path ------------------------------------------


def add_world(
    store: Store,
    sessions: dict[str, list[tuple[str | None, list[str]]]],
    types: dict[str, str],
    *,
    start: dt.datetime = T0,
    run_id: str = "ingest-test",
) -> None:
    """Sessions → [(block id or None for a session-level mention, entity ids)]; new entities
    take their type from ``types``."""
    now = dt.datetime(2026, 6, 1)
    session_rows, block_rows, mention_rows = [], [], []
    for k, (session, blocks) in enumerate(sessions.items()):
        began = start + dt.timedelta(hours=k)
        session_rows.append({"id": session, "source": "test", "started_at": began})
        for block, entities in blocks:
            if block is not None:
                block_rows.append(
                    {"id": block, "session_id": session, "kind": "memory", "text": block,
                     "created_at": began, "updated_at": began}
                )  # fmt: skip
            for entity in entities:
                mention_rows.append(
                    {"id": f"men-{entity}-{block or session}", "entity_id": entity,
                     "block_id": block, "session_id": session, "mentioned_at": began}
                )  # fmt: skip
    entity_rows = [
        {"id": e, "name": e, "canonical_name": e.lower(), "entity_type": t, "created_at": now}
        for e, t in types.items()
    ]
    with store.mutation(run_id, "ingest") as m:
        m.insert("sessions", pl.DataFrame(session_rows))
        m.insert("entities", pl.DataFrame(entity_rows))
        if block_rows:
            m.insert("blocks", pl.DataFrame(block_rows))
        schema: dict[str, Any] = {"id": pl.Utf8, "entity_id": pl.Utf8, "block_id": pl.Utf8,
                  "session_id": pl.Utf8, "mentioned_at": pl.Datetime("us")}  # fmt: skip
        m.insert("mentions", pl.DataFrame(mention_rows, schema=schema))


def add_vectors(store: Store, vectors: dict[str, tuple[float, ...]]) -> None:
    rows = pl.DataFrame(
        {
            "target_kind": ["entity"] * len(vectors),
            "target_id": list(vectors),
            "model": [MODEL] * len(vectors),
            "dim": [3] * len(vectors),
            "vector": [np.asarray(v, dtype=np.float32).tobytes() for v in vectors.values()],
            "text_hash": ["-"] * len(vectors),
            "created_at": [utcnow()] * len(vectors),
        },
        schema_overrides={"vector": pl.Binary, "dim": pl.Int32},
    )
    with store.transaction():
        store.backend.insert_df(
            "embeddings", rows, key=("target_kind", "target_id", "model"), on_conflict="replace"
        )


def random_world(
    seed: int, sessions: int, entities: int = 30, prefix: str = "s", hub: float = 0.6
) -> tuple[dict, dict]:
    """A world with a hub (e00) that a share ``hub`` of the blocks mention, like an owner."""
    rng = random.Random(seed)
    world: dict[str, list[tuple[str | None, list[str]]]] = {}
    for s in range(sessions):
        blocks: list[tuple[str | None, list[str]]] = []
        for b in range(rng.randint(1, 4)):
            members = rng.sample([f"e{i:02d}" for i in range(1, entities)], rng.randint(1, 4))
            if rng.random() < hub:
                members = sorted({*members, "e00"})
            blocks.append((f"{prefix}{s:02d}-b{b}", members))
        if rng.random() < 0.3:
            blocks.append((None, [f"e{rng.randrange(entities):02d}"]))
        world[f"{prefix}{s:02d}"] = blocks
    types = {f"e{i:02d}": TYPES[i % len(TYPES)] for i in range(entities)}
    return world, types


def random_vectors(seed: int, ids: list[str]) -> dict[str, tuple[float, ...]]:
    rng = random.Random(seed)
    return {e: (rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0, 1)) for e in ids}


def expected_edges(store: Store, config: GraphConfig) -> pl.DataFrame:
    """A full recompute from what the store holds now (the definition, no incremental logic)."""
    return compute_edges(
        store.fetch_df("SELECT id, entity_type FROM entities WHERE status = 'active'"),
        counted_mentions(store),
        config,
        load_vectors(store, "entity", MODEL),
    )


def live_edges(store: Store) -> pl.DataFrame:
    return (
        store.read_table("edges", "status <> 'archived'")
        .select("id", "source_id", "target_id", *SIGNALS, "composite_weight", "status")
        .sort("id")
    )


def assert_same_edges(actual: pl.DataFrame, expected: pl.DataFrame, tol: float) -> None:
    assert actual["id"].to_list() == expected["id"].to_list()
    for name in (*SIGNALS, "composite_weight"):
        diff = cast(float | None, (actual[name] - expected[name]).abs().max())
        assert diff is not None and diff <= tol, (name, diff)
    assert actual["status"].to_list() == expected["status"].to_list()


@pytest.fixture
def always_incremental(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a world this small a change soon reaches most pairs, and the run would switch to
    computing everything; keep it on the incremental path, whose maths is under test."""
    monkeypatch.setattr("memvault.graph.incremental.FULL_WHEN_SHARE", 2.0)


def audit_rows(store: Store, phase: str = "dream_signal") -> int:
    return int(store.fetch("SELECT count(*) FROM audit_log WHERE phase = :p", {"p": phase})[0][0])


# -- edges ------------------------------------------------------------------------------------


def test_refresh_writes_every_candidate_pair_through_the_audit_log(store: Store) -> None:
    world, types = random_world(1, sessions=12)
    add_world(store, world, types)
    add_vectors(store, random_vectors(1, list(types)))
    report = refresh_edges(store, GraphConfig(), "dream-1")
    assert not report.incremental and report.reason == "no earlier edge run"
    assert report.semantic_model == MODEL
    expected = expected_edges(store, GraphConfig())
    assert_same_edges(live_edges(store), expected, 1e-9)
    assert report.inserted == expected.height == audit_rows(store)
    assert report.connected + report.pending == expected.height
    assert report.connected == expected.filter(pl.col("status") == "connected").height
    sources = store.read_table("edges")
    assert (sources["source_id"] < sources["target_id"]).all()
    run = store.run("dream-1")
    assert run is not None and run["kind"] == "graph" and CURSOR_KEY in run["cursor"]


def test_rerun_on_unchanged_data_writes_nothing(store: Store) -> None:
    world, types = random_world(2, sessions=10)
    add_world(store, world, types)
    refresh_edges(store, GraphConfig(), "dream-1")
    before = table_dump(store, "edges")
    written = audit_rows(store)
    again = refresh_edges(store, GraphConfig(), "dream-2")
    assert again.incremental
    assert (again.inserted, again.updated, again.archived, again.considered) == (0, 0, 0, 0)
    full = refresh_edges(store, GraphConfig(), "dream-3", full=True)
    assert not full.incremental and (full.inserted, full.updated, full.archived) == (0, 0, 0)
    assert audit_rows(store) == written
    assert table_dump(store, "edges") == before


@pytest.mark.parametrize(("seed", "hub"), [(3, 0.0), (4, 0.0), (5, 0.7)])
@pytest.mark.usefixtures("always_incremental")
def test_incremental_refresh_equals_a_full_recompute(store: Store, seed: int, hub: float) -> None:
    world, types = random_world(seed, sessions=30, entities=150)
    add_world(store, world, types)
    add_vectors(store, random_vectors(seed, list(types)))
    refresh_edges(store, EXACT, "dream-1")
    # New sessions (touching the hub or not) and a newcomer with its own vector.
    later, _ = random_world(seed + 100, sessions=1, entities=150, prefix="t", hub=hub)
    later["t00"].append(("t00-new", ["e03", "e07", "new"]))
    add_world(store, later, {"new": "concept"}, start=T0 + dt.timedelta(days=3), run_id="ingest-2")
    add_vectors(store, {"new": (0.2, 0.9, 0.1)})
    report = refresh_edges(store, EXACT, "dream-2")
    assert report.incremental and report.touched_entities > 0
    assert report.inserted > 0 and report.updated > 0
    if not hub:
        assert report.considered < report.pairs / 2  # only what the new session reaches
    assert_same_edges(live_edges(store), expected_edges(store, EXACT), 1e-9)


@pytest.mark.usefixtures("always_incremental")
def test_an_incremental_refresh_reads_vectors_and_values_of_the_recomputed_pairs_only(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memvault.graph.inputs as graph_inputs

    world, types = random_world(3, sessions=30, entities=150)
    add_world(store, world, types)
    add_vectors(store, random_vectors(3, list(types)))
    refresh_edges(store, EXACT, "dream-1")
    later, _ = random_world(103, sessions=1, entities=150, prefix="t", hub=0.0)
    add_world(store, later, {}, start=T0 + dt.timedelta(days=3), run_id="ingest-2")
    read: dict[str, list[int]] = {"vectors": [], "values": []}
    load_vectors, stored_values = graph_inputs.load_vectors, graph_inputs.stored_values

    def spy_vectors(*args: Any, **kwargs: Any) -> tuple[list[str], np.ndarray]:
        found = load_vectors(*args, **kwargs)
        read["vectors"].append(len(found[0]))
        return found

    def spy_values(*args: Any) -> pl.DataFrame:
        found = stored_values(*args)
        read["values"].append(found.height)
        return found

    monkeypatch.setattr(graph_inputs, "load_vectors", spy_vectors)
    monkeypatch.setattr("memvault.graph.edges.stored_values", spy_values)
    # In a world this small the recomputed pairs are a large share of all; read them by id
    # anyway (the filter is under test, not the share above which it reads everything).
    monkeypatch.setattr(graph_inputs, "FILTER_SHARE", 1.0)
    report = refresh_edges(store, EXACT, "dream-2")
    assert report.incremental and 0 < report.considered < report.pairs / 2
    assert 0 < read["vectors"][0] < len(types)  # the ends of the recomputed pairs
    assert 0 < read["values"][0] <= report.considered < store.read_table("edges").height
    assert_same_edges(live_edges(store), expected_edges(store, EXACT), 1e-9)
    # Past the share, a table is read whole (a column scan beats shipping many ids).
    monkeypatch.setattr(graph_inputs, "FILTER_SHARE", 0.0)
    later, _ = random_world(104, sessions=1, entities=150, prefix="u", hub=0.0)
    add_world(store, later, {}, start=T0 + dt.timedelta(days=4), run_id="ingest-3")
    report = refresh_edges(store, EXACT, "dream-3")
    assert report.incremental and report.considered < report.pairs / 2
    assert read["vectors"][1] == len(types)
    assert read["values"][1] == store.read_table("edges").height - report.inserted
    assert_same_edges(live_edges(store), expected_edges(store, EXACT), 1e-9)


@pytest.mark.usefixtures("always_incremental")
def test_incremental_refresh_with_default_tolerances_stays_within_them(store: Store) -> None:
    world, types = random_world(5, sessions=16)
    add_world(store, world, types)
    add_vectors(store, random_vectors(5, list(types)))
    config = GraphConfig()
    refresh_edges(store, config, "dream-1")
    later, _ = random_world(105, sessions=2, prefix="t")
    add_world(store, later, {}, start=T0 + dt.timedelta(days=3), run_id="ingest-2")
    refresh_edges(store, config, "dream-2")
    actual, expected = live_edges(store), expected_edges(store, config)
    assert actual["id"].to_list() == expected["id"].to_list()
    drift = cast(
        float | None, (actual["composite_weight"] - expected["composite_weight"]).abs().max()
    )
    assert drift is not None and drift <= config.write_tolerance + 1e-12


def test_updates_of_columns_the_edges_do_not_read_change_no_pair(store: Store) -> None:
    world, types = random_world(11, sessions=12)
    add_world(store, world, types)
    refresh_edges(store, EXACT, "dream-1")
    blocks = [b for s in world.values() for b, _ in s if b is not None]
    # What a first tiering pass and a gardener's rename write: every block, one entity.
    with store.mutation("tiering-1", "tiering") as m:
        m.update_many(
            "blocks",
            pl.DataFrame({"id": blocks, "tier": ["warm"] * len(blocks)}),
            action="demote",
        )
        m.update("entities", "e04", {"name": "E Four"}, action="rename")
    quiet = refresh_edges(store, EXACT, "dream-2")
    assert quiet.incremental and (quiet.considered, quiet.touched_entities) == (0, 0)
    # A retype does change the pairs of that entity (type affinity), and only those.
    with store.mutation("lint-1", "lint") as m:
        m.update("entities", "e04", {"entity_type": "place"}, action="retype")
    retyped = refresh_edges(store, EXACT, "dream-3")
    assert retyped.incremental and retyped.updated > 0
    of_e04 = live_edges(store).filter(
        (pl.col("source_id") == "e04") | (pl.col("target_id") == "e04")
    )
    assert retyped.scope["entity_refreshed"] > 0 and of_e04.height <= retyped.considered
    assert_same_edges(live_edges(store), expected_edges(store, EXACT), 1e-9)


@pytest.mark.usefixtures("always_incremental")
def test_archived_entities_and_blocks_lose_their_edges(store: Store) -> None:
    world, types = random_world(6, sessions=12)
    add_world(store, world, types)
    refresh_edges(store, EXACT, "dream-1")
    victim = "e03"
    block = next(b for s in world.values() for b, members in s if b and "e05" in members)
    with store.mutation("lint-1", "lint") as m:
        m.update("entities", victim, {"status": "archived"}, action="archive")
        m.update("blocks", block, {"status": "archived"}, action="archive")
    report = refresh_edges(store, EXACT, "dream-2")
    assert report.incremental and report.archived > 0
    edges = store.read_table("edges")
    of_victim = edges.filter((pl.col("source_id") == victim) | (pl.col("target_id") == victim))
    assert of_victim.height > 0 and set(of_victim["status"]) == {"archived"}
    archived = store.fetch(
        "SELECT count(*) FROM audit_log WHERE action = 'edge-archive' AND run_id = 'dream-2'"
    )[0][0]
    assert archived == report.archived
    assert_same_edges(live_edges(store), expected_edges(store, EXACT), 1e-9)
    # Bringing the entity back revives its edges (an update, not a second row).
    with store.mutation("lint-2", "lint") as m:
        m.update("entities", victim, {"status": "active"}, action="restore")
    refresh_edges(store, EXACT, "dream-3")
    assert_same_edges(live_edges(store), expected_edges(store, EXACT), 1e-9)
    assert store.read_table("edges").height == edges.height


def test_a_config_change_forces_a_full_recompute(store: Store) -> None:
    world, types = random_world(7, sessions=8)
    add_world(store, world, types)
    refresh_edges(store, GraphConfig(), "dream-1")
    report = refresh_edges(store, GraphConfig(connect_threshold=0.3), "dream-2")
    assert not report.incremental and report.reason == "edge settings changed"
    assert_same_edges(
        live_edges(store), expected_edges(store, GraphConfig(connect_threshold=0.3)), 1e-9
    )


def test_dry_run_writes_nothing(store: Store) -> None:
    world, types = random_world(8, sessions=8)
    add_world(store, world, types)
    report = refresh_edges(store, GraphConfig(), "dream-dry-1", dry_run=True)
    assert report.inserted > 0
    assert store.read_table("edges").is_empty() and store.run("dream-dry-1") is None


@pytest.mark.usefixtures("always_incremental")
def test_a_week_without_a_full_refresh_makes_the_next_one_full(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    world, types = random_world(10, sessions=8)
    add_world(store, world, types)
    refresh_edges(store, EXACT, "dream-1", full_every_days=7)
    later, _ = random_world(110, sessions=1, prefix="t")
    add_world(store, later, {}, start=T0 + dt.timedelta(days=3), run_id="ingest-2")
    assert refresh_edges(store, EXACT, "dream-2", full_every_days=7).incremental
    base = clock.shift().total_seconds()
    monkeypatch.setenv(clock.VARIABLE, str(base + 6 * 86400))  # six days after dream-1
    assert refresh_edges(store, EXACT, "dream-3", full_every_days=7).incremental
    monkeypatch.setenv(clock.VARIABLE, str(base + 8 * 86400))  # eight days after it
    report = refresh_edges(store, EXACT, "dream-4", full_every_days=7)
    assert not report.incremental and report.reason == "no full refresh in the last 7 days"
    assert refresh_edges(store, EXACT, "dream-5", full_every_days=7).incremental  # counts anew
    assert refresh_edges(store, EXACT, "dream-6").incremental  # no weekly pass unless asked
    assert_same_edges(live_edges(store), expected_edges(store, EXACT), 1e-9)


@pytest.mark.usefixtures("always_incremental")
def test_an_undone_run_leaves_no_cursor_behind(store: Store) -> None:
    from memvault.store import undo_run

    world, types = random_world(9, sessions=8)
    add_world(store, world, types)
    refresh_edges(store, EXACT, "dream-1")
    later, _ = random_world(109, sessions=2, prefix="t")
    add_world(store, later, {}, start=T0 + dt.timedelta(days=3), run_id="ingest-2")
    refresh_edges(store, EXACT, "dream-2")
    undo_run(store, "dream-2")
    report = refresh_edges(store, EXACT, "dream-3")  # picks up again from dream-1's cursor
    assert report.incremental and report.inserted > 0
    assert_same_edges(live_edges(store), expected_edges(store, EXACT), 1e-9)


# -- communities and centrality ---------------------------------------------------------------


def two_cliques(store: Store) -> None:
    """Clique a0..a4 and clique b0..b3, one weak bridge a0–b0; all edges written directly."""
    a = [f"a{i}" for i in range(5)]
    b = [f"b{i}" for i in range(4)]
    add_world(store, {"s0": [(None, [*a, *b])]}, dict.fromkeys([*a, *b], "concept"))
    rows = []
    for group in (a, b):
        for i, x in enumerate(group):
            for y in group[i + 1 :]:
                rows.append((x, y, 0.8))
    rows.append(("a0", "b0", 0.36))
    frame = pl.DataFrame(rows, schema=["source_id", "target_id", "composite_weight"], orient="row")
    frame = frame.with_columns(
        id=pl.concat_str("source_id", pl.lit("|"), "target_id"),
        status=pl.lit("connected"),
        updated_at=pl.lit(T0),
    )
    with store.mutation("seed-edges", "test") as m:
        m.insert("edges", frame)


def test_leiden_finds_the_cliques_and_is_reproducible(store: Store) -> None:
    two_cliques(store)
    report = detect_communities(store, GraphConfig(), "dream-1")
    first = table_dump(store, "communities")
    assert report.communities == 2 and report.largest == 5
    community = {r["entity_id"]: (r["community"], r["size"]) for r in first}
    assert {community[f"a{i}"] for i in range(5)} == {(0, 5)}  # the larger one is number 0
    assert {community[f"b{i}"] for i in range(4)} == {(1, 4)}
    detect_communities(store, GraphConfig(), "dream-2")
    again = table_dump(store, "communities")
    assert [(r["entity_id"], r["community"], r["size"]) for r in again] == [
        (r["entity_id"], r["community"], r["size"]) for r in first
    ]
    assert {r["run_id"] for r in again} == {"dream-2"}


def test_personalized_pagerank_favours_the_seeds_neighbourhood(store: Store) -> None:
    two_cliques(store)
    compute_centrality(store, GraphConfig(), "dream-1", seeds=["b2"])
    rows = {r["entity_id"]: r for r in table_dump(store, "centrality")}
    assert len(rows) == 9
    assert min(rows[f"b{i}"]["ppr"] for i in range(4)) > max(rows[f"a{i}"]["ppr"] for i in range(5))
    assert max(rows[f"a{i}"]["pagerank"] for i in range(5)) > rows["b1"]["pagerank"]
    assert sum(r["ppr"] for r in rows.values()) == pytest.approx(1.0)
    assert rows["a0"]["degree"] == 5 and rows["b1"]["degree"] == 3
    top = top_central(store, 3)
    assert top["entity_id"][0] == "b2" and top.height == 3
    assert top_central(store, 1, by="pagerank")["entity_id"][0] == "a0"


def test_default_seeds_are_the_entities_of_the_latest_sessions(store: Store) -> None:
    add_world(
        store,
        {"old": [("o-b", ["x", "y"])], "mid": [("m-b", ["y", "z"])], "new": [("n-b", ["z", "w"])]},
        {"x": "person", "y": "tool", "z": "project", "w": "concept"},
    )
    assert recent_seeds(store, 1) == ["w", "z"]
    assert recent_seeds(store, 2) == ["w", "y", "z"]
    report = compute_centrality(store, GraphConfig(recent_sessions=2), "dream-1")
    assert report.seeds == 3 and report.seed_source.startswith("entities of the 2 most recent")


def test_dry_runs_of_communities_and_centrality_write_nothing(store: Store) -> None:
    two_cliques(store)
    assert detect_communities(store, GraphConfig(), "d", dry_run=True).communities == 2
    assert compute_centrality(store, GraphConfig(), "d", seeds=["a1"], dry_run=True).entities == 9
    assert store.read_table("communities").is_empty()
    assert store.read_table("centrality").is_empty()


def test_a_warm_partition_starts_from_the_stored_one_and_skips_an_unchanged_graph(
    store: Store,
) -> None:
    two_cliques(store)
    for run in ("dream-1", "dream-2", "dream-3"):
        store.begin_run("dream", run_id=run)
    first = detect_communities(store, GraphConfig(), "dream-1", warm=True)
    assert first.start == "cold" and first.communities == 2  # nothing stored to start from
    stored = table_dump(store, "communities")
    # The same graph again: Leiden does not run, the table stays as dream-1 wrote it.
    same = detect_communities(store, GraphConfig(), "dream-2", warm=True)
    assert same.start == "unchanged" and "leiden" not in same.seconds
    assert table_dump(store, "communities") == stored
    assert same.membership.equals(first.membership)
    # A newcomer tied to clique b and a reweighted edge: Leiden starts from dream-1's partition.
    add_world(store, {"s1": [(None, ["c0"])]}, {"c0": "concept"}, run_id="ingest-2")
    with store.mutation("ingest-2", "test") as m:
        m.insert(
            "edges",
            pl.DataFrame(
                [("b1|c0", "b1", "c0", 0.9), ("b2|c0", "b2", "c0", 0.9)],
                schema=["id", "source_id", "target_id", "composite_weight"],
                orient="row",
            ).with_columns(status=pl.lit("connected"), updated_at=pl.lit(T0)),
        )
        m.update("edges", "a0|a1", {"composite_weight": 0.7}, action="edge-update")
    warm = detect_communities(store, GraphConfig(), "dream-3", warm=True)
    cold = detect_communities(store, GraphConfig(), "dream-3", dry_run=True)
    assert warm.start == "warm" and cold.start == "cold"
    community = {r["entity_id"]: r["community"] for r in table_dump(store, "communities")}
    assert community["c0"] == community["b0"] != community["a0"]
    assert warm.membership.equals(cold.membership)  # this graph has one good partition
    assert {r["run_id"] for r in table_dump(store, "communities")} == {"dream-3"}


def test_pagerank_runs_igraph_on_one_openmp_thread() -> None:
    """igraph's PageRank busy-waits its OpenMP threads on a shared machine (see OPENMP_THREADS)."""
    import igraph as ig

    from memvault.graph.centrality import igraph_openmp, personalized_pagerank

    runtime = igraph_openmp()
    if runtime is None:
        pytest.skip("this igraph build bundles no OpenMP runtime")
    runtime.omp_set_num_threads(4)
    assert runtime.omp_get_max_threads() == 4
    ranks = personalized_pagerank(ig.Graph.Ring(5), [1.0, 0, 0, 0, 0], weights=None, damping=0.85)
    assert runtime.omp_get_max_threads() == 1
    assert sum(ranks) == pytest.approx(1.0) and ranks[0] == max(ranks)
