"""New facts that break their predicate's definition go to review instead of stopping dreams.

The dream's grounding check refuses to count as done a store that learned, since the last
dream, a fact its definitions rule out (``Ada lives_in Globex``, an organization where a place
belongs). Left in place, that one fact would fail every dream after it. So consolidation first
holds such facts out of what the store believes (kept, status ``held``, with the reason) and
queues each for a person (:func:`memvault.review.intake.hold_for_review`); the check and the
lint no longer count them. Older facts that break a definition stay the lint's to report.
"""

from __future__ import annotations

import polars as pl

from memvault.dream.orient import last_dream, new_ids_since
from memvault.review.intake import hold_for_review
from memvault.review.policy import ReviewPolicy
from memvault.store import Store
from memvault.temporal.grounding import Grounding, grounding_violations


def new_violations(store: Store, grounding: Grounding | None = None) -> pl.DataFrame:
    """The grounding problems (triple_id, predicate, problem) of facts learned since the
    last successful dream."""
    offending = grounding_violations(store, grounding or Grounding.load())
    if offending.is_empty():
        return offending
    fresh = new_ids_since(store, "triples", last_dream(store)[1])
    return offending.filter(pl.col("triple_id").is_in(list(fresh)))


def hold_new_ungrounded(
    store: Store, run_id: str, policy: ReviewPolicy, *, dry_run: bool, phase: str
) -> int:
    """Hold the new facts that break their definition and queue them for review; returns how
    many were held (would be, in a dry run)."""
    found = new_violations(store)
    problems: dict[str, list[str]] = {}
    for triple_id, problem in found.select("triple_id", "problem").iter_rows():
        problems.setdefault(str(triple_id), []).append(str(problem))
    if dry_run or not problems:
        return len(problems)
    return hold_for_review(store, run_id, problems, policy, phase=phase).applied
