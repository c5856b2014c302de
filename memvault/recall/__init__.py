"""The read path: recall what the memory holds for a query, take the owner's feedback on it,
and search ahead of time for what the owner is likely to ask next (``prefetch``).

``recall(store, query)`` keeps one in-memory search index per store in this
process (see :class:`Recaller`); every recall is recorded and can be undone.
"""

from __future__ import annotations

import datetime as dt
import sys
import types
from typing import Any

from memvault.recall.feedback import FeedbackError, FeedbackReport, feedback
from memvault.recall.recaller import (
    MAX_QUERY_CHARS,
    Recaller,
    check_query,
    recaller_for,
    signature_of,
)
from memvault.recall.result import Fact, GapHint, RecallHit, RecallResult
from memvault.store import Store


def recall(
    store: Store,
    query: str,
    *,
    limit: int = 5,
    session_id: str | None = None,
    now: dt.datetime | None = None,
) -> RecallResult:
    """The blocks that best answer ``query`` (recorded in recall_log; see :class:`Recaller`)."""
    return recaller_for(store).recall(store, query, limit=limit, session_id=session_id, now=now)


class _CallableModule(types.ModuleType):
    """``memvault.recall`` is this package and the function: importing the package makes it an
    attribute of ``memvault`` in place of the function, so calling the package recalls."""

    def __call__(self, store: Store, query: str, **options: Any) -> RecallResult:
        return recall(store, query, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "MAX_QUERY_CHARS",
    "Fact",
    "FeedbackError",
    "FeedbackReport",
    "GapHint",
    "RecallHit",
    "RecallResult",
    "Recaller",
    "check_query",
    "feedback",
    "recall",
    "recaller_for",
    "signature_of",
]
