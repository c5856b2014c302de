"""The expansion's links: which entities each row mentions, and how far a seed lends its score."""

from __future__ import annotations

import numpy as np

from memvault.recall.expand import HUB_MAX, HUB_MIN, Links, expand, hub_size


def test_each_row_knows_the_entities_that_mention_it() -> None:
    rng = np.random.default_rng(7)
    mentions = {f"e{k}": np.unique(rng.integers(0, 40, size=rng.integers(1, 9))) for k in range(30)}
    links = Links.build(mentions, np.zeros(40, dtype=np.int64))
    for row in range(40):
        expected = sorted(e for e, rows in mentions.items() if row in rows)
        assert sorted(links.entities_of(row)) == expected


def test_a_hub_is_a_share_of_the_store_within_bounds() -> None:
    assert hub_size(10) == HUB_MIN
    assert hub_size(1_000) == 20
    assert hub_size(1_000_000) == HUB_MAX


def test_a_seed_lifts_the_other_sessions_mentions_of_its_entity_only() -> None:
    # rows 0-2 session 0, rows 3-5 session 1; row 0 is the best hit and names "tom"
    total = np.asarray([2.0, 0.5, 0.1, 0.1, 0.2, -np.inf])
    links = Links.build(
        {"tom": np.asarray([0, 2, 3, 5]), "ada": np.asarray([0, 4])},
        np.asarray([0, 0, 0, 1, 1, 1]),
    )
    live = np.asarray([True] * 6)
    out = expand(total, links, named=["ada"], live=live)
    # row 3 (other session) gains 0.3 of the seed's 2.0; row 2 (same session) nothing; row 4
    # mentions only an entity the query names; row 5, no evidence of its own, counts from 0
    assert out[0] == total[0] and out[1] == total[1]
    assert out[2] == total[2] and out[4] == total[4]
    assert np.isclose(out[5], 0.6)
    assert np.isclose(out[3], 0.1 + 0.6)
