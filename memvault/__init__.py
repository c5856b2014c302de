"""memvault: the background track that keeps an AI agent's long-term memory healthy.

This package is the domain core (no Dagster import). ``memvault.open(url)``
is the entry point of the Python API. Each track has one name, its package: the
preference and skill layers are ``memvault.layers`` (``from memvault.layers import
attitudes, skills``; ``attitudes.upsert(store, ...)``, ``skills.record_use(store, ...)``).

The store is imported on first use, so that a light module of the
package (``memvault.config``, ``memvault.serve.client``) loads in milliseconds: a shell's
``memvault recall`` answered by a running ``memvault serve`` never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memvault.recall import FeedbackReport, RecallResult
    from memvault.store import Store

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``memvault.Store``, loaded when asked for."""
    if name == "Store":
        from memvault.store import Store

        return Store
    raise AttributeError(f"module 'memvault' has no attribute {name!r}")


def open(url: str, *, read_only: bool = False) -> Store:
    """Open (and create or migrate) the store at ``url``: ``duckdb:///path`` or ``postgresql://...``."""
    from memvault.store import Store

    return Store.open(url, read_only=read_only)


def recall(store: Store, query: str, **options: Any) -> RecallResult:
    """The memories that best answer ``query``, recorded in recall_log (see memvault.recall)."""
    from memvault.recall import recall as run

    return run(store, query, **options)


def feedback(store: Store, recall_id: str, verdict: str, **options: Any) -> FeedbackReport:
    """The owner's verdict (correct|incorrect|ambiguous) or boost (+|-) on a recall."""
    from memvault.recall import feedback as give

    return give(store, recall_id, verdict, **options)


__all__ = ["Store", "__version__", "feedback", "open", "recall"]
