"""Reading the review queue, deciding its items, and letting deadlines pass without a commit.

A decision is "correct" (apply the proposed change) or "wrong" (leave the store
as it is). It runs as a run of kind ``review``: the change goes through the
audited write path (``memvault undo`` reverts it), the item records who decided
and when, and the decision feeds the calibration of the review rules.

A decision is made by :func:`memvault.review.appliers.decide`, which applies each kind of
item by the *applier* registered for its prefix (``conflict``, ``garden``, ``lint``, ...):
the queue does not know what a change means, nor who can make it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel

from memvault.errors import MemvaultError
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.review import decisions_by_decider, items_in, overdue_items

Verdict = Literal["correct", "wrong"]


class ReviewError(MemvaultError):
    """A review decision that cannot be made as asked."""


class ReviewItem(BaseModel):
    """One row of ``review_queue``, with its proposal decoded."""

    id: str
    kind: str
    target_table: str | None = None
    target_id: str | None = None
    proposal: dict[str, Any]
    reason: str | None = None
    confidence: float | None = None
    impact_score: float | None = None
    impact_inputs: dict[str, Any] | None = None
    status: str
    deadline: dt.datetime | None = None
    run_id: str | None = None
    created_at: dt.datetime
    decided_at: dt.datetime | None = None
    decision: str | None = None
    decided_by: str | None = None
    note: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ReviewItem:
        data = dict(row)
        data["proposal"] = json.loads(data.get("proposal") or "{}")
        inputs = data.get("impact_inputs")
        data["impact_inputs"] = json.loads(inputs) if inputs else None
        return cls(**data)

    @property
    def prefix(self) -> str:
        return self.kind.split(":", 1)[0]


OPEN = ("pending", "expired")


def list_items(
    store: Store, statuses: Sequence[str] = OPEN, kinds: Sequence[str] | None = None
) -> list[ReviewItem]:
    """Items in these statuses (default: waiting for a human), oldest first."""
    frame = items_in(store, statuses)
    items = [ReviewItem.from_row(r) for r in frame.iter_rows(named=True)]
    if kinds:
        items = [i for i in items if i.kind in kinds or i.prefix in kinds]
    return items


def get_item(store: Store, item_id: str) -> ReviewItem:
    row = store.get_row("review_queue", item_id)
    if row is None:
        raise ReviewError(f"no review item {item_id!r}; `memvault review list` shows them")
    return ReviewItem.from_row(row)


def enqueue_row(
    *,
    item_id: str,
    kind: str,
    target_table: str | None,
    target_id: str | None,
    proposal: dict[str, Any],
    reason: str,
    confidence: float | None,
    impact: float | None,
    impact_inputs: dict[str, Any] | None,
    deadline: dt.datetime | None,
    run_id: str | None,
    now: dt.datetime,
) -> dict[str, Any]:
    """A ``review_queue`` row (insert it through a mutation, so it is audited)."""
    return {
        "id": item_id,
        "kind": kind,
        "target_table": target_table,
        "target_id": target_id,
        "proposal": json.dumps(proposal, ensure_ascii=False, sort_keys=True, default=str),
        "reason": reason,
        "confidence": confidence,
        "impact_score": impact,
        "impact_inputs": json.dumps(impact_inputs, sort_keys=True) if impact_inputs else None,
        "status": "pending",
        "deadline": deadline,
        "run_id": run_id,
        "created_at": now,
    }


def expire_overdue(store: Store, run_id: str, now: dt.datetime | None = None) -> list[str]:
    """Items past their deadline are not committed: they expire, visibly, and keep waiting
    for a human (a pending SUPERSEDE stays pending); returns the ids expired."""
    now = now or utcnow()
    ids = overdue_items(store, now)
    if ids:
        with store.mutation(run_id, "review-deadline") as m:
            m.update_many(
                "review_queue",
                pl.DataFrame(
                    {
                        "id": ids,
                        "status": ["expired"] * len(ids),
                        "decided_by": ["deadline"] * len(ids),
                        "note": ["deadline passed without a decision: not applied"] * len(ids),
                    }
                ),
                action="expire",
                reason="deadline passed without a decision: nothing committed",
            )
    return ids


@dataclass
class QueueSummary:
    """What waits for a person, and who decided what was decided."""

    waiting: list[ReviewItem]
    decided_by: dict[str, int]

    @property
    def by_kind(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.waiting:
            counts[item.kind] = counts.get(item.kind, 0) + 1
        return counts

    @property
    def oldest(self) -> dt.datetime | None:
        return min((i.created_at for i in self.waiting), default=None)

    def count(self, status: str) -> int:
        return sum(i.status == status for i in self.waiting)

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows: what waits, since when, and who decided the rest."""
        return {
            "waiting": len(self.waiting),
            "pending": self.count("pending"),
            "expired": self.count("expired"),
            "oldest_waiting": self.oldest or "never",
            **{f"decided_by_{who}": n for who, n in self.decided_by.items()},
            "waiting_by_kind": [{"kind": k, "items": n} for k, n in self.by_kind.items()],
        }


def summarize_queue(store: Store) -> QueueSummary:
    return QueueSummary(list_items(store), decisions_by_decider(store))
