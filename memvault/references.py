"""Dangling references: a column that names a row which does not exist.

One definition, read by all who ask: the structure lint lists each dangling row as a
finding, the collector's asset check counts them per reference (and fails on any), and
the gardener reconnects memory items whose parent is gone. A reference that is empty
(``NULL``) points at nothing by choice and is not dangling. The list and its queries live in
the data layer (:mod:`memvault.store.queries.references`); this is their name in the core.
"""

from __future__ import annotations

from memvault.stage import Verdict
from memvault.store import Store
from memvault.store.queries.references import (
    REFERENCES,
    Reference,
    dangling_counts,
    dangling_references,
    dangling_sql,
)

__all__ = [
    "REFERENCES",
    "Reference",
    "dangling_counts",
    "dangling_references",
    "dangling_sql",
    "references_resolve",
]


def references_resolve(store: Store) -> Verdict:
    """Every reference points at a row (the check after each ingest), with the dangling rows
    counted per reference."""
    dangling = dangling_counts(store)
    return Verdict(
        not any(dangling.values()),
        {
            "dangling_total": sum(dangling.values()),
            "dangling": [{"reference": k, "dangling rows": n} for k, n in dangling.items()],
        },
    )
