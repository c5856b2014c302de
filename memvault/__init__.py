"""memvault: the background track that keeps an AI agent's long-term memory healthy.

This package is the domain core (no Dagster import). ``memvault.open(url)``
is the entry point of the Python API.
"""

from __future__ import annotations

from memvault.recall import feedback, recall
from memvault.store import Store

__version__ = "0.1.0"


def open(url: str, *, read_only: bool = False) -> Store:
    """Open (and create or migrate) the store at ``url``: ``duckdb:///path`` or ``postgresql://...``."""
    return Store.open(url, read_only=read_only)


__all__ = ["Store", "__version__", "feedback", "open", "recall"]
