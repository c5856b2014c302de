"""E1/E2 golden data: a hand-made mention table in, the five signals and composites out.

The world (five entities, three sessions, five blocks):

    block  session  mentions            entity  type          vector
    b1     s1       A B C               A       person        (1, 0, 0)
    b2     s1       A B                 B       project       (1, 1, 0)
    b3     s2       A B D               C       tool          (0, 1, 0)
    b4     s3       C E                 D       place         (none)
    b5     s3       D                   E       concept       (0, -1, 0)
    -      s1       E (session-level mention, no block)

Candidate pairs are block co-mentions: A–B (3 blocks), A–C, B–C, A–D, B–D, C–E (1 each).
Degrees in that graph: A 3, B 3, C 3, D 2, E 1. Session sets: A {s1,s2}, B {s1,s2},
C {s1,s3}, D {s2,s3}, E {s1,s3} (the block-less mention adds s1 but no pair).
Every expected number below is worked out from these tables by hand.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from pydantic import ValidationError

from memvault.graph import GraphConfig, SignalWeights
from memvault.graph import signals as sg
from memvault.graph.edges import compute_edges

LN = math.log
ENTITIES = pl.DataFrame(
    {
        "id": ["A", "B", "C", "D", "E"],
        "entity_type": ["person", "project", "tool", "place", "concept"],
    }
)
MENTIONS = pl.DataFrame(
    [
        ("A", "b1", "s1"), ("B", "b1", "s1"), ("C", "b1", "s1"),
        ("A", "b2", "s1"), ("B", "b2", "s1"),
        ("A", "b3", "s2"), ("B", "b3", "s2"), ("D", "b3", "s2"),
        ("C", "b4", "s3"), ("E", "b4", "s3"),
        ("D", "b5", "s3"),
        ("E", None, "s1"),
    ],
    schema={"entity_id": pl.Utf8, "block_id": pl.Utf8, "session_id": pl.Utf8},
    orient="row",
)  # fmt: skip
VECTORS = (
    ["A", "B", "C", "E"],
    np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, -1, 0]], dtype=np.float32),
)

# co_occurrence = log1p(shared blocks) / log1p(32)         (saturation 32)
# session_overlap = |S_u ∩ S_v| / |S_u ∪ S_v|
# adamic_adar raw = Σ over common neighbours w of 1/ln(degree w); normalized raw / (raw + 2)
# type_affinity from the default prior; semantic = cosine clipped to 0..1, 0 without a vector
EXPECTED = {
    #            blocks  shared/union  common neighbours (degree)   prior  cosine
    ("A", "B"): (3, 2 / 2, 1 / LN(3) + 1 / LN(2), 0.8, 0.5**0.5),  # C (3), D (2); person|project
    ("A", "C"): (1, 1 / 3, 1 / LN(3), 0.5, 0.0),  # B (3); person|tool; orthogonal
    ("A", "D"): (1, 1 / 3, 1 / LN(3), 0.4, 0.0),  # B (3); person|place; D has no vector
    ("B", "C"): (1, 1 / 3, 1 / LN(3), 0.8, 0.5**0.5),  # A (3); project|tool
    ("B", "D"): (1, 1 / 3, 1 / LN(3), 0.2, 0.0),  # A (3); place|project
    ("C", "E"): (1, 2 / 2, 0.0, 0.7, 0.0),  # none; concept|tool; cosine -1 clipped to 0
}


def _expected_row(blocks: int, jac: float, aa_raw: float, prior: float, cos: float) -> dict:
    signals = {
        "co_occurrence": LN(1 + blocks) / LN(33),
        "session_overlap": jac,
        "adamic_adar": aa_raw / (aa_raw + 2.0),
        "type_affinity": prior,
        "semantic_similarity": cos,
    }
    weights = {"co_occurrence": 0.25, "session_overlap": 0.20, "adamic_adar": 0.20,
               "type_affinity": 0.15, "semantic_similarity": 0.20}  # fmt: skip
    signals["composite_weight"] = sum(weights[k] * signals[k] for k in weights)
    return signals


def test_golden_signals_and_composites() -> None:
    edges = compute_edges(ENTITIES, MENTIONS, GraphConfig(), VECTORS)
    assert edges["id"].to_list() == [f"{a}|{b}" for a, b in EXPECTED]
    for row in edges.iter_rows(named=True):
        expected = _expected_row(*EXPECTED[(row["source_id"], row["target_id"])])
        for name, value in expected.items():
            assert row[name] == pytest.approx(value, abs=1e-12), (row["id"], name)


def test_golden_composites_split_at_the_threshold() -> None:
    edges = compute_edges(ENTITIES, MENTIONS, GraphConfig(), VECTORS)
    weight = dict(zip(edges["id"], edges["composite_weight"], strict=True))
    # A–B: 0.25·0.3965 + 0.2·1 + 0.2·0.5405 + 0.15·0.8 + 0.2·0.7071 ≈ 0.669;
    # C–E: 0.25·0.1982 + 0.2·1 + 0 + 0.15·0.7 + 0 ≈ 0.355, just over 0.35 (same sessions);
    # B–C ≈ 0.440 (related names); the other one-off co-mentions stay at 0.21–0.25.
    assert weight["A|B"] == pytest.approx(0.6686, abs=1e-4)
    assert weight["C|E"] == pytest.approx(0.3546, abs=1e-4)
    assert weight["B|C"] == pytest.approx(0.4402, abs=1e-4)
    status = dict(zip(edges["id"], edges["status"], strict=True))
    assert status == {"A|B": "connected", "A|C": "pending", "A|D": "pending",
                      "B|C": "connected", "B|D": "pending", "C|E": "connected"}  # fmt: skip
    stricter = compute_edges(ENTITIES, MENTIONS, GraphConfig(connect_threshold=0.5), VECTORS)
    assert stricter.filter(pl.col("status") == "connected")["id"].to_list() == ["A|B"]


def test_weights_are_configuration() -> None:
    only_types = GraphConfig(
        weights=SignalWeights(co_occurrence=0, session_overlap=0, adamic_adar=0,
                              type_affinity=1, semantic_similarity=0)
    )  # fmt: skip
    edges = compute_edges(ENTITIES, MENTIONS, only_types, VECTORS)
    assert edges["composite_weight"].to_list() == edges["type_affinity"].to_list()


def test_missing_vectors_give_zero_semantic_similarity() -> None:
    edges = compute_edges(ENTITIES, MENTIONS, GraphConfig(), vectors=None)
    assert edges["semantic_similarity"].sum() == 0.0


def test_session_level_mentions_make_no_pair() -> None:
    only_session = pl.DataFrame(
        {"entity_id": ["A", "B"], "block_id": [None, None], "session_id": ["s1", "s1"]},
        schema={"entity_id": pl.Utf8, "block_id": pl.Utf8, "session_id": pl.Utf8},
    )
    assert compute_edges(ENTITIES, only_session).is_empty()


# -- config ----------------------------------------------------------------------------------


def test_config_defaults_are_spec_e2() -> None:
    config = GraphConfig()
    assert config.weights.as_dict() == {
        "co_occurrence": 0.25,
        "session_overlap": 0.20,
        "adamic_adar": 0.20,
        "type_affinity": 0.15,
        "semantic_similarity": 0.20,
    }
    assert (config.resolution, config.seed, config.damping) == (1.0, 42, 0.85)


def test_weights_must_sum_to_one() -> None:
    with pytest.raises(ValidationError, match="sum to 1"):
        GraphConfig.model_validate({"weights": {"co_occurrence": 0.5}})


def test_config_loads_from_a_dict_and_the_prior_is_symmetric() -> None:
    config = GraphConfig.model_validate(
        {
            "connect_threshold": 0.5,
            "type_affinity": {"place|person": 0.1, "tool": {"tool": 0.9}},
            "embedding_model": "minilm-l6-int8",
        }
    )
    assert config.connect_threshold == 0.5
    assert config.affinity("person", "place") == config.affinity("place", "person") == 0.1
    assert config.affinity("tool", "tool") == 0.9
    assert config.affinity("person", "unicorn") == config.default_type_affinity
    assert GraphConfig().affinity("person", "place") != GraphConfig().affinity("person", "person")


def test_an_asymmetric_prior_is_rejected() -> None:
    with pytest.raises(ValidationError, match="symmetric"):
        GraphConfig.model_validate({"type_affinity": {"person|place": 0.1, "place|person": 0.2}})


def test_edge_settings_fingerprint_ignores_leiden_and_pagerank() -> None:
    base = GraphConfig().edge_fingerprint()
    assert GraphConfig(seed=7, damping=0.9).edge_fingerprint() == base
    assert GraphConfig(connect_threshold=0.3).edge_fingerprint() != base


# -- the vectorized building blocks agree with a plain reading of the definitions --------------


def _random_graph(seed: int, n: int = 60, blocks: int = 120) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    entity, group = [], []
    for b in range(blocks):
        members = rng.choice(n, size=rng.integers(1, 6), replace=False)
        if rng.random() < 0.3:
            members = np.append(members, 0)  # a hub
        entity += members.tolist()
        group += [b] * len(members)
    return np.array(entity), np.array(group)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pairs_and_adamic_adar_match_the_definitions(seed: int) -> None:
    n = 60
    entity, group = _random_graph(seed, n)
    u, v, count = sg.co_mention_pairs(entity, group, n)
    blocks: dict[int, set[int]] = {}
    for e, g in zip(entity.tolist(), group.tolist(), strict=True):
        blocks.setdefault(g, set()).add(e)
    expected: dict[tuple[int, int], int] = {}
    for members in blocks.values():
        for a in members:
            for b in members:
                if a < b:
                    expected[(a, b)] = expected.get((a, b), 0) + 1
    assert dict(zip(zip(u.tolist(), v.tolist(), strict=True), count.tolist(), strict=True)) == (
        expected
    )
    adj = sg.adjacency(u, v, n)
    neighbours = {i: set() for i in range(n)}
    for a, b in expected:
        neighbours[a].add(b)
        neighbours[b].add(a)
    f = sg.inverse_log_degree(adj.sizes)
    brute = [sum(1 / math.log(len(neighbours[w])) for w in neighbours[a] & neighbours[b])
             for a, b in zip(u.tolist(), v.tolist(), strict=True)]  # fmt: skip
    assert sg.adamic_adar_all(adj, f, u, v) == pytest.approx(brute, abs=1e-12)
    assert sg.adamic_adar_pairs(adj, f, u, v) == pytest.approx(brute, abs=1e-12)


def test_keyset_bitmap_and_search_agree() -> None:
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 10_000, 500)
    probe = rng.integers(0, 10_000, 5_000)
    small = sg.KeySet(keys, 10_000)
    assert small.words is not None
    large = sg.KeySet(keys, sg.BITMAP_MAX_BITS + 1)
    assert large.words is None
    expected = np.isin(probe, keys)
    assert (small.contains(probe) == expected).all()
    assert (large.contains(probe) == expected).all()
    present = np.unique(keys)
    assert (small.rank(present) == np.arange(present.size)).all()
    assert (large.rank(present) == np.arange(present.size)).all()
    assert (large.rank(probe) == np.searchsorted(present, probe)).all()


def test_keyset_hash_table_is_exact_on_pair_keys_of_a_large_store() -> None:
    """Pair keys u * n + v of a store with 230k entities (beyond any bitmap), clustered rows
    and strided keys that crowd the same slots: membership and rank as a sorted search."""
    rng = np.random.default_rng(11)
    n = 230_000
    u = np.concatenate([rng.integers(0, 50, 200_000), rng.integers(0, n, 300_000)])
    v = rng.integers(0, n, u.size)
    strided = np.arange(1, 20_001, dtype=np.int64) << 20
    keys = np.concatenate([u * n + v, strided])
    probe = np.concatenate([keys[::3], rng.integers(0, n * n, 200_000), strided + 1])
    found = sg.KeySet(keys, n * n)
    assert found.words is None
    present = np.unique(keys)
    assert (found.contains(probe) == np.isin(probe, present)).all()
    assert (found.rank(probe) == np.searchsorted(present, probe)).all()
    assert not sg.KeySet(np.zeros(0, np.int64), n * n).contains(probe).any()
