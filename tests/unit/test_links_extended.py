"""The expansion's links of a search index after a refresh: the main segment's links as
built, extended by the second segment's rows, link exactly what links built whole would."""

from __future__ import annotations

import numpy as np

from memvault.recall.expand import Links


def test_links_extended_by_new_rows_are_the_links_built_whole() -> None:
    rng = np.random.default_rng(7)
    main_rows, new_rows = 40, 9
    entities = [f"ent_{k}" for k in range(12)]
    main = {e: np.sort(rng.choice(main_rows, size=rng.integers(1, 6), replace=False)) for e in entities[:10]}  # fmt: skip
    new = {e: np.sort(rng.choice(new_rows, size=rng.integers(1, 4), replace=False)) for e in entities[5:]}  # fmt: skip
    sessions = rng.integers(-1, 5, size=main_rows + new_rows)
    whole = {e: np.concatenate([main.get(e, np.zeros(0, dtype=np.int64)), new.get(e, np.zeros(0, dtype=np.int64)) + main_rows]) for e in entities}  # fmt: skip
    built = Links.build(whole, sessions)
    grown = Links.build(main, sessions[:main_rows]).extended(new, sessions[main_rows:], ())
    for row in range(main_rows + new_rows):
        assert sorted(grown.entities_of(row)) == sorted(built.entities_of(row)), row
    assert set(grown.mentions) == set(built.mentions)
    for e in built.mentions:
        assert sorted(grown.mentions[e].tolist()) == sorted(built.mentions[e].tolist()), e
    assert grown.sessions.tolist() == built.sessions.tolist()
