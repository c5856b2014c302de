"""The ``conflict_verdicts`` family: what a judge (or a person) decided about two facts."""

from __future__ import annotations

import polars as pl

from memvault.store.store import Store


def all_verdicts(store: Store) -> pl.DataFrame:
    """Every decided pair: id, triple_a, triple_b, verdict, status."""
    return store.fetch_df("SELECT id, triple_a, triple_b, verdict, status FROM conflict_verdicts")


def judged_pairs(store: Store, keys: list[str]) -> set[str]:
    """Of these pair keys (``a|b``, the verdicts' ids), those a verdict was written for."""
    rows = store.fetch(
        "SELECT id FROM conflict_verdicts WHERE id IN (SELECT unnest(CAST(:ids AS TEXT[])))",
        {"ids": sorted(set(keys))},
    )
    return {str(r[0]) for r in rows}


_UNCONFIRMED_SQL = """
SELECT id, verdict, confidence, decided_by, run_id, decided_at FROM conflict_verdicts
WHERE status = 'applied' AND verdict IN ('MERGE', 'SUPERSEDE')
  AND decided_by NOT IN ('rule', 'human') AND decided_by NOT LIKE '%, confirmed'
ORDER BY decided_at
"""


def unconfirmed_applied_verdicts(store: Store) -> pl.DataFrame:
    """Applied merges and supersessions decided by one judgment alone (not a rule's, not a
    human's, not confirmed by a second judgment): id, verdict, confidence, decided_by, run_id,
    decided_at, by decision time."""
    return store.fetch_df(_UNCONFIRMED_SQL)
