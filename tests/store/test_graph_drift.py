"""The drift an incremental edge refresh leaves unapplied (graph/drift.py), night after night."""

from __future__ import annotations

import datetime as dt
from typing import cast

import pytest

from memvault.graph import GraphConfig, refresh_edges
from memvault.graph.edges import CURSOR_KEY
from memvault.store import Store
from tests.store.test_graph import (
    T0,
    add_vectors,
    add_world,
    expected_edges,
    live_edges,
    random_vectors,
    random_world,
)

DEFAULT = GraphConfig()


@pytest.fixture(autouse=True)
def always_incremental(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worlds this small reach most pairs at once; keep the incremental path under test."""
    monkeypatch.setattr("memvault.graph.incremental.FULL_WHEN_SHARE", 2.0)


def worst_composite_error(store: Store, config: GraphConfig) -> float:
    actual, expected = live_edges(store), expected_edges(store, config)
    assert actual["id"].to_list() == expected["id"].to_list()
    diff = (actual["composite_weight"] - expected["composite_weight"]).abs().max()
    return cast(float, diff)


def carried(store: Store, run_id: str) -> dict[str, list[float]]:
    run = store.run(run_id)
    assert run is not None
    return cast(dict[str, list[float]], run["cursor"][CURSOR_KEY]["carried"])


def busy_world() -> tuple[dict, dict]:
    """x in 80 sessions with ten partners, each in 8 of them (session overlap 0.1)."""
    world = {f"s{k:02d}": [(f"s{k:02d}-b", ["x", f"p{k % 10}"])] for k in range(80)}
    return world, {"x": "person", **{f"p{i}": "project" for i in range(10)}}


def test_a_busy_entitys_new_session_leaves_its_quiet_pairs_within_the_tolerance(
    store: Store,
) -> None:
    world, types = busy_world()
    add_world(store, world, types)
    refresh_edges(store, DEFAULT, "dream-0")
    nights: list[int] = []
    for night in range(1, 13):
        newcomer = f"q{night:02d}"
        add_world(
            store,
            {f"t{night:02d}": [(f"t{night:02d}-b", ["x", newcomer])]},
            {newcomer: "concept"},
            start=T0 + dt.timedelta(days=night),
            run_id=f"ingest-{night}",
        )
        report = refresh_edges(store, DEFAULT, f"dream-{night}")
        assert report.incremental
        nights.append(report.considered)
        assert worst_composite_error(store, DEFAULT) <= DEFAULT.write_tolerance + 1e-12
    # The first night recomputes the new pair only: x's ten old pairs each moved by
    # 0.2 · 0.1 · 1/81 at most, and x carries its new session instead.
    assert nights[0] == 1
    assert carried(store, "dream-1")["x"][0] == 1.0
    # Session after session the carried change grows until x's pairs are recomputed (all of
    # them, so it starts afresh): every few nights, not every night.
    assert max(nights) >= 1 + 10
    every_night = sum(10 + night for night in range(1, 13))
    assert sum(nights) < every_night / 2
    refresh_edges(store, DEFAULT, "dream-full", full=True)
    assert carried(store, "dream-full") == {}


@pytest.mark.parametrize("seed", [21, 22])
def test_nights_of_new_sessions_around_a_hub_stay_within_the_write_tolerance(
    store: Store, seed: int
) -> None:
    world, types = random_world(seed, sessions=40, entities=120, hub=0.7)
    add_world(store, world, types)
    add_vectors(store, random_vectors(seed, list(types)))
    refresh_edges(store, DEFAULT, "dream-0")
    exact = GraphConfig(drift_tolerance=0.0)
    saved = 0
    for night in range(1, 7):
        later, _ = random_world(seed * 100 + night, sessions=1, entities=120, prefix=f"n{night}-")
        add_world(store, later, {}, start=T0 + dt.timedelta(days=night), run_id=f"ingest-{night}")
        # What a refresh that applies every drift would recompute tonight (nothing written).
        every = refresh_edges(store, exact, f"dry-{night}", dry_run=True).considered
        report = refresh_edges(store, DEFAULT, f"dream-{night}")
        assert report.incremental and report.considered <= every
        saved += every - report.considered
        assert worst_composite_error(store, DEFAULT) <= DEFAULT.write_tolerance + 1e-12
    assert saved > 0
    refresh_edges(store, DEFAULT, "dream-full", full=True)
    assert worst_composite_error(store, DEFAULT) <= DEFAULT.rewrite_above() + 1e-12


def test_the_tolerances_split_the_write_tolerance() -> None:
    assert DEFAULT.drift_budget() + DEFAULT.rewrite_above() == pytest.approx(
        DEFAULT.write_tolerance
    )
    capped = GraphConfig(write_tolerance=0.0)  # exact writes leave no room for drift
    assert (capped.drift_budget(), capped.rewrite_above()) == (0.0, 0.0)
