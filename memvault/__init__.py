"""memvault: the background track that keeps an AI agent's long-term memory healthy.

This package is the domain core (no Dagster import). ``memvault.open(url)``
is the entry point of the Python API; ``memvault.attitudes.upsert(store, ...)``
and ``memvault.skills.record_use(store, ...)`` write the preference and skill layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault import attitudes, skills
from memvault.store import Store

if TYPE_CHECKING:
    from memvault.recall import FeedbackReport, RecallResult

__version__ = "0.1.0"


def open(url: str, *, read_only: bool = False) -> Store:
    """Open (and create or migrate) the store at ``url``: ``duckdb:///path`` or ``postgresql://...``."""
    return Store.open(url, read_only=read_only)


def recall(store: Store, query: str, **options: Any) -> RecallResult:
    """The memories that best answer ``query``, recorded in recall_log (see memvault.recall)."""
    from memvault.recall import recall as run

    return run(store, query, **options)


def feedback(store: Store, recall_id: str, verdict: str, **options: Any) -> FeedbackReport:
    """The owner's verdict (correct|incorrect|ambiguous) or boost (+|-) on a recall."""
    from memvault.recall import feedback as give

    return give(store, recall_id, verdict, **options)


__all__ = ["Store", "__version__", "attitudes", "feedback", "open", "recall", "skills"]
