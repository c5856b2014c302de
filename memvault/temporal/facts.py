"""Facts as stored: the bi-temporal triples with the names of their entities.

One home for reading triples as a list of facts (by subject, predicate, or what the store
learned since a time), the timeline of one subject and predicate, and what counts as a
*current* fact: active, not ended in the world (``invalid_at``) and not retired by the
store (``expired_at``). The queries are the data layer's (:mod:`memvault.store.queries.triples`).
"""

from __future__ import annotations

from memvault.store.queries.triples import IS_CURRENT, fact_counts, fact_timeline, named_facts

__all__ = ["IS_CURRENT", "fact_counts", "fact_timeline", "named_facts"]
