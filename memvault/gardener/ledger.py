"""The gardener's bookkeeping in a memvault store: runs, proposals, and the audit of changes.

Whatever store is tended, the ceremony keeps its state in a memvault store
(the *ledger*; when memvault's own store is tended, the same store):

* ``runs`` rows of kind ``garden`` — ``stats`` holds the run's state while it
  goes (phase assets pass it along through it), ``cursor`` what the next run
  needs: per store the resume point, the window, and what was settled.
* ``review_queue`` rows of kind ``garden:<action>`` — the proposals of
  tend-and-propose (and uncertain cases in any mode), approved by a human with
  ``memvault garden approve``, executed by the next run.
* ``audit_log`` — memvault's own writes are audited by ``store.mutation``;
  changes an external store made are recorded here (``target_table`` is
  ``<store>#<kind>``), so every change of a run can be counted in one place.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import polars as pl

from memvault.gardener.adapter import Change
from memvault.normalize import utcnow
from memvault.review.impact import impact_score, target_inputs
from memvault.store import Store
from memvault.store.audit import encode_image
from memvault.store.queries.audit import audit_count, audited_targets, last_run_that_did
from memvault.store.queries.review import items_of_kind_prefix
from memvault.store.queries.runs import (
    close_run,
    finished_runs,
    run_of_dagster_run,
    save_run_state,
    tag_dagster_run,
)
from memvault.store.tracked import RunRow, begun_run, tracked_run

RUN_KIND = "garden"
APPROVE_RUN_KIND = "garden-approve"
PROPOSAL_PREFIX = "garden:"
#: Proposed actions that end or merge away what holds now (the impact score weighs that).
RETIRING = frozenset({"merge", "invalidate", "archive", "delete"})


@dataclass(frozen=True)
class Proposal:
    """One ``review_queue`` row of the gardener."""

    id: str
    action: str
    store: str
    target_table: str
    target_id: str
    related: tuple[str, ...]
    certain: bool
    status: str
    confidence: float | None
    reason: str
    detail: Mapping[str, Any]
    run_id: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Proposal:
        detail = json.loads(row["proposal"] or "{}")
        return cls(
            id=row["id"],
            action=row["kind"].removeprefix(PROPOSAL_PREFIX),
            store=detail.get("store", ""),
            target_table=row["target_table"] or "",
            target_id=row["target_id"] or "",
            related=tuple(detail.get("related", ())),
            certain=bool(detail.get("certain", False)),
            status=row["status"],
            confidence=row["confidence"],
            reason=row["reason"] or "",
            detail=detail,
            run_id=row["run_id"],
        )


def proposal_id(store: str, action: str, target: str, related: Sequence[str]) -> str:
    """The same proposal (store, action, target, related) always gets the same id."""
    key = "|".join([store, action, target, *sorted(related)])
    return "gp-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


class Ledger:
    """Run state, proposals and external audit rows, in one memvault store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- runs -----------------------------------------------------------------------------

    def begin(
        self, params: Mapping[str, Any], run_id: str | None = None
    ) -> AbstractContextManager[RunRow]:
        """A garden run begun (or continued): failed if its beginning raises, else left to
        its phases (:func:`~memvault.store.tracked.begun_run`)."""
        return begun_run(self.store, RUN_KIND, params, run_id=run_id)

    def run_for_dagster(self, dagster_run_id: str) -> str | None:
        return run_of_dagster_run(self.store, RUN_KIND, dagster_run_id)

    def tag_dagster(self, run_id: str, dagster_run_id: str) -> None:
        tag_dagster_run(self.store, run_id, dagster_run_id)

    def save_state(self, run_id: str, state: Mapping[str, Any], carry: Mapping[str, Any]) -> None:
        """The run's full state (``stats``) and what the next run starts from (``cursor``)."""
        self.store.heartbeat(run_id)
        save_run_state(self.store, run_id, state, carry)

    def load_state(self, run_id: str) -> dict[str, Any]:
        run = self.store.run(run_id)
        return dict(run["stats"]) if run else {}

    def finish(self, run_id: str, status: str, error: str | None = None) -> None:
        close_run(self.store, run_id, status, error, utcnow())

    def previous(self, store_name: str, before_run: str | None = None) -> dict[str, Any] | None:
        """What the last finished garden run left for ``store_name`` (its cursor entry), with
        ``run_id`` and ``started_at``; None when the store was never gardened."""
        for run_id, started_at, cursor in finished_runs(
            self.store, RUN_KIND, before_run or "", 200
        ):
            entry = json.loads(cursor or "{}").get("stores", {}).get(store_name)
            if entry is not None:
                return dict(entry) | {"run_id": run_id, "started_at": started_at}
        return None

    # -- audit ----------------------------------------------------------------------------

    def audit_external(
        self, run_id: str, phase: str, store_name: str, change: Change, reason: str
    ) -> None:
        """Record a change an external store made (memvault's own are audited at the source)."""
        row = pl.DataFrame(
            {
                "run_id": [run_id],
                "phase": [phase],
                "action": [change.action],
                "target_table": [f"{store_name}#{change.target_kind}"],
                "target_id": [change.target_id],
                "before_image": pl.Series(
                    [encode_image(dict(change.before)) if change.before is not None else None],
                    dtype=pl.Utf8,
                ),
                "after_image": pl.Series(
                    [encode_image(dict(change.after)) if change.after is not None else None],
                    dtype=pl.Utf8,
                ),
                "reason": [reason or None],
                "created_at": [utcnow()],
            }
        )
        with self.store.transaction():
            self.store.backend.insert_df("audit_log", row, on_conflict="error")

    def targets(self, run_id: str) -> set[str]:
        """Ids of everything the run wrote (its audit rows in this store)."""
        return audited_targets(self.store, run_id)

    def audit_rows(self, run_id: str) -> int:
        return audit_count(self.store, run_id)

    def fixed_before(
        self,
        run_id: str,
        target_table: str,
        target_id: str,
        actions: Sequence[str],
        since: dt.datetime | None = None,
    ) -> str | None:
        """The earlier garden run that already did one of ``actions`` to this target (GD-S3)."""
        return last_run_that_did(
            self.store, RUN_KIND, target_table, target_id, actions, run_id, since
        )

    # -- proposals ------------------------------------------------------------------------

    def propose(
        self,
        run_id: str,
        phase: str,
        *,
        store_name: str,
        action: str,
        target_table: str,
        target_id: str,
        related: Sequence[str] = (),
        certain: bool,
        confidence: float | None,
        reason: str,
        detail: Mapping[str, Any] | None = None,
    ) -> tuple[str, bool]:
        """Queue a proposal; returns (id, True) when it is new, (id, False) when it was
        proposed before (pending, approved, rejected or executed: never queued twice)."""
        pid = proposal_id(store_name, action, target_id, related)
        impact = target_inputs(
            self.store, target_table, target_id, retires_current=action in RETIRING
        )
        body = dict(detail or {}) | {
            "store": store_name,
            "action": action,
            "related": list(related),
            "certain": certain,
        }
        row = {
            "id": pid,
            "kind": f"{PROPOSAL_PREFIX}{action}",
            "target_table": target_table,
            "target_id": target_id,
            "proposal": json.dumps(body, default=str, sort_keys=True),
            "reason": reason,
            "confidence": confidence,
            "impact_score": impact_score(impact),
            "impact_inputs": json.dumps(impact.model_dump(), sort_keys=True),
            "status": "pending",
            "run_id": run_id,
            "created_at": utcnow(),
        }
        with self.store.mutation(run_id, phase) as m:
            inserted = m.insert(
                "review_queue", pl.DataFrame([row]), action="propose", reason=reason
            )
        return pid, bool(inserted)

    def proposals(
        self,
        store_name: str | None = None,
        statuses: Sequence[str] = ("pending",),
        action: str | None = None,
    ) -> list[Proposal]:
        frame = items_of_kind_prefix(self.store, PROPOSAL_PREFIX, statuses)
        found = [Proposal.from_row(r) for r in frame.iter_rows(named=True)]
        return [
            p
            for p in found
            if (store_name is None or p.store == store_name)
            and (action is None or p.action == action)
        ]

    def executable(self, store_name: str, action: str, autonomous: bool) -> list[Proposal]:
        """Approved proposals; in autonomous mode also pending ones that were certain (never
        the uncertain ones: those wait for a human)."""
        approved = self.proposals(store_name, ("approved",), action)
        if not autonomous:
            return approved
        pending = [p for p in self.proposals(store_name, ("pending",), action) if p.certain]
        return sorted(approved + pending, key=lambda p: p.id)

    def settle(self, run_id: str, phase: str, proposal: Proposal, status: str, note: str) -> None:
        """Mark a proposal executed / stale (audited)."""
        with self.store.mutation(run_id, phase) as m:
            m.update(
                "review_queue",
                proposal.id,
                {"status": status, "decided_at": utcnow(), "decision": note},
                action=f"proposal-{status}",
                reason=note,
            )

    def approve(self, ids: Sequence[str] | None, *, note: str = "approved") -> list[str]:
        """Approve pending garden proposals (``None``: all of them); returns the ids approved."""
        pending = self.proposals(None, ("pending",))
        chosen = pending if ids is None else [p for p in pending if p.id in set(ids)]
        if not chosen:
            return []
        now = utcnow()
        changes = pl.DataFrame(
            {
                "id": [p.id for p in chosen],
                "status": ["approved"] * len(chosen),
                "decided_at": [now] * len(chosen),
                "decision": [note] * len(chosen),
            }
        )
        params = {"ids": [p.id for p in chosen]}
        with (
            tracked_run(self.store, APPROVE_RUN_KIND, params) as run,
            self.store.mutation(run.id, "approve") as m,
        ):
            m.update_many("review_queue", changes, action="approve", reason=note)
            run.stats = {"approved": len(chosen)}
        return [p.id for p in chosen]
