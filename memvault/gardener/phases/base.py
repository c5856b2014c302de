"""What every phase gets: the store, its survey, the budget, the judge, and one way to write.

All writes of a phase go through :meth:`PhaseContext.write` (a change to the
tended store: budgeted, counted, audited in the ledger when the store does not
audit itself) or :meth:`PhaseContext.propose` (a proposal in the ledger); the
journal, a record of the run like the report, through :meth:`PhaseContext.record`
(audited and counted, outside the mutation budget). So the run knows exactly how
many audit rows it must have produced, and the journal what was changed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from memvault.errors import JudgeError
from memvault.gardener.adapter import Capability, Change, GardenStore, MemoryItem, WriteContext
from memvault.gardener.budget import Budget
from memvault.gardener.capabilities import Survey
from memvault.gardener.ledger import Ledger
from memvault.gardener.report import OpLine, preview
from memvault.gardener.state import GardenConfig, RunState, StoreRun
from memvault.gardener.tasks import MemoryRecord
from memvault.judge import Judge, JudgeTask

RequestT = TypeVar("RequestT", bound=BaseModel)
ReplyT = TypeVar("ReplyT", bound=BaseModel)

#: Cap on remembered per-phase "left alone" ids (oldest forgotten first).
SETTLED_CAP = 5000


@dataclass
class PhaseContext:
    phase: str
    store: GardenStore
    survey: Survey
    ledger: Ledger
    judge: Judge
    config: GardenConfig
    budget: Budget
    run: RunState
    srun: StoreRun
    now: dt.datetime

    @property
    def autonomous(self) -> bool:
        return self.config.mode == "autonomous"

    def has(self, *capabilities: Capability) -> bool:
        return self.survey.has(*capabilities)

    # -- cursor ---------------------------------------------------------------------------

    @property
    def cursor(self) -> dict[str, Any]:
        return self.srun.cursor

    def advance(self, **position: Any) -> None:
        """Record how far the phase got (saved as the resume point if the budget runs out)."""
        self.srun.cursor = dict(position)

    def leave_for_next_run(self, reason: str) -> None:
        """The phase reached its per-run cap with work left: the later phases still run, and the
        resume point names this phase, so the run is not reported clean."""
        if self.srun.pending is None:
            self.srun.pending = {"phase": self.phase, "cursor": dict(self.cursor), "reason": reason}

    # -- writes ---------------------------------------------------------------------------

    def _target_table(self, change: Change) -> str:
        return change.target_kind if change.audited else f"{self.store.name}#{change.target_kind}"

    def write(
        self,
        action: str,
        reason: str,
        do: Callable[[WriteContext], Change],
        *,
        label: str | None = None,
    ) -> Change:
        """One budgeted, audited change to the tended store (call ``need`` first for groups).
        ``label``: what the change is about in a few words, for the journal (a fact's
        statement; items are described from the store when the journal is written)."""
        if self.srun.blocked:
            raise RuntimeError(f"{self.store.name} is blocked from mutation: {self.srun.blocked}")
        self.budget.need_mutations(1, self.cursor)
        change = self._apply(action, reason, do, budgeted=True)
        self.srun.learn("changed", action, change.target_id, label)
        return change

    def record(self, action: str, reason: str, do: Callable[[WriteContext], Change]) -> Change:
        """One audited write that records the run rather than tends memory (the journal):
        outside the mutation budget, like the report, so a run that spent its budget still
        writes it."""
        if self.srun.blocked:
            raise RuntimeError(f"{self.store.name} is blocked from mutation: {self.srun.blocked}")
        return self._apply(action, reason, do, budgeted=False)

    def _apply(
        self, action: str, reason: str, do: Callable[[WriteContext], Change], *, budgeted: bool
    ) -> Change:
        ctx = WriteContext(self.run.run_id, self.phase, reason, action)
        change = do(ctx)
        if budgeted:
            self.budget.spend_mutation()
        self.run.changes += 1
        if not change.audited:
            self.ledger.audit_external(self.run.run_id, self.phase, self.store.name, change, reason)
        self.run.expected_audit += 1
        return change

    def need(self, mutations: int) -> None:
        """Reserve room for a group of writes that belong together (a merge, a split)."""
        self.budget.need_mutations(mutations, self.cursor)

    def fixed_before(
        self,
        target_kind: str,
        target_id: str,
        actions: Sequence[str],
        since: dt.datetime | None = None,
    ) -> str | None:
        """GD-S3: the earlier garden run that already applied one of ``actions`` here."""
        tables = {target_kind, f"{self.store.name}#{target_kind}"}
        for table in sorted(tables):
            found = self.ledger.fixed_before(self.run.run_id, table, target_id, actions, since)
            if found:
                return found
        return None

    def switch_to_proposing(self, kind: str, target: str, earlier_run: str) -> None:
        """GD-S3: a fix came back — stop fixing this kind in this store, propose instead."""
        if kind in self.srun.proposing_only:
            return
        self.srun.proposing_only.append(kind)
        self.run.skip(
            self.phase,
            f"idempotency rule: {kind} of {target} was already done by {earlier_run} and is "
            f"needed again; {kind} switched to proposing",
        )

    def proposing(self, kind: str) -> bool:
        return kind in self.srun.proposing_only

    def propose(
        self,
        *,
        action: str,
        target_table: str,
        target_id: str,
        related: Sequence[str] = (),
        certain: bool,
        confidence: float | None,
        reason: str,
        detail: dict[str, Any] | None = None,
        line: OpLine | None = None,
    ) -> str | None:
        """Queue a proposal (budgeted like a write). Returns its id when it is new."""
        self.budget.need_mutations(1, self.cursor)
        pid, new = self.ledger.propose(
            self.run.run_id,
            self.phase,
            store_name=self.store.name,
            action=action,
            target_table=target_table,
            target_id=target_id,
            related=related,
            certain=certain,
            confidence=confidence,
            reason=reason,
            detail=detail,
        )
        if not new:
            return None
        self.budget.spend_mutation()
        self.run.expected_audit += 1
        self.run.proposals += 1
        self.srun.learn("proposed", action, target_id, (detail or {}).get("label"))
        if line is not None:
            line.why = f"{line.why} [{pid}]" if line.why else f"[{pid}]"
            self.op(line)
        return pid

    def settle_proposal(self, proposal: Any, status: str, note: str) -> None:
        self.ledger.settle(self.run.run_id, self.phase, proposal, status, note)
        self.run.expected_audit += 1

    def op(self, line: OpLine) -> None:
        self.run.ops.append(line.__dict__.copy())

    def defer(self, text: str) -> None:
        self.run.deferred.append(text)

    def settle(self, key: str) -> None:
        """Remember that this phase left ``key`` alone on purpose (not looked at again)."""
        bucket = self.srun.settled.setdefault(self.phase, [])
        if key not in bucket:
            bucket.append(key)
            del bucket[:-SETTLED_CAP]

    def settled(self) -> set[str]:
        return set(self.srun.settled.get(self.phase, []))

    # -- judgments ------------------------------------------------------------------------

    def ask(self, task: JudgeTask[RequestT, ReplyT], request: RequestT) -> ReplyT:
        return self.ask_judged(task, request)[0]

    def ask_judged(
        self, task: JudgeTask[RequestT, ReplyT], request: RequestT
    ) -> tuple[ReplyT, bool]:
        """The reply, and whether it came from the offline rules rather than a model.

        The judge layer counts every rule-based answer as a ``heuristic_answers`` (the
        offline judge always, a model-backed one when it falls back to the rules), so the
        count moving during the question is what marks the reply, whatever its confidence.

        A model whose reply cannot be used (outside the schema after the judge's re-asks,
        not JSON, an error) does not end the run: the reply is refused and counted
        (``judge_replies_refused``), the offline rules answer this one question, and the run
        goes on with the next.
        """
        self.budget.need_judgments(1, self.cursor)
        before = self.judge.stats.as_dict().get("heuristic_answers", 0)
        try:
            reply = self.judge.ask(task, request)
        except JudgeError as exc:
            self.budget.spend_judgment()
            self.run.count("judge_replies_refused")
            self.run.notes.append(f"{task.name}: the model's reply was refused ({exc}); the offline rules answered")  # fmt: skip
            return task.heuristic(request), True
        by_rules = self.judge.stats.as_dict().get("heuristic_answers", 0) > before
        self.budget.spend_judgment()
        return reply, by_rules


def record(item: MemoryItem) -> MemoryRecord:
    """An item as the judge sees it."""
    return MemoryRecord(
        id=item.id,
        text=item.text,
        importance=item.importance,
        tags=list(item.tags),
        created_at=item.created_at.isoformat() if item.created_at else None,
        updated_at=item.updated_at.isoformat() if item.updated_at else None,
    )


__all__ = ["PhaseContext", "preview", "record"]
