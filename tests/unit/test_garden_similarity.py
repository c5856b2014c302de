"""Duplicate candidates without all pairs: exact blocks, the ANN index and LSH agree."""

from __future__ import annotations

import numpy as np
import pytest

from memvault.gardener.similarity import (
    ann_pairs,
    brute_force_all_pairs,
    exact_pairs,
    lsh_pairs,
    similar_pairs,
)


def clustered(n: int = 3000, dim: int = 64, dups: int = 150, seed: int = 1) -> np.ndarray:
    """Random unit vectors with ``dups`` near-copies (cosine ≈ 0.95-0.99) mixed in."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    for k in range(dups):
        x[n - 1 - k] = x[k] + rng.uniform(0.05, 0.25) * rng.standard_normal(dim)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def as_set(found: object) -> set[tuple[int, int]]:
    return set(zip(found.left.tolist(), found.right.tolist(), strict=True))  # type: ignore[attr-defined]


def test_exact_blocks_equal_brute_force_for_the_queried_rows() -> None:
    x = clustered()
    queries = np.arange(0, 3000, 7)
    brute = {
        p
        for p in as_set(brute_force_all_pairs(x, 0.9))
        if p[0] in set(queries) or p[1] in set(queries)
    }
    found = exact_pairs(x, queries, 0.9)
    assert as_set(found) == brute and brute
    assert np.all(found.score >= 0.9) and np.all(found.left < found.right)


@pytest.mark.parametrize("method", [ann_pairs, lsh_pairs])
def test_index_paths_find_nearly_all_and_invent_none(method: object) -> None:
    x = clustered()
    queries = np.arange(3000)
    truth = as_set(brute_force_all_pairs(x, 0.9))
    found = method(x, queries, 0.9)  # type: ignore[operator]
    got = as_set(found)
    assert got <= truth
    assert len(got) >= 0.95 * len(truth)
    assert np.all(found.score >= 0.9)


def test_the_cheapest_fit_path_is_chosen() -> None:
    x = clustered(n=500)
    assert similar_pairs(x, [1, 2], 0.9).method == "exact-blocks"
    assert similar_pairs(x, np.arange(500), 0.9, exact_limit=10).method == "ann-usearch"
    assert similar_pairs(x, [], 0.9).method == "none"
