"""Conflicts a person decides: what the review queue is shown, and what a decision applies.

A judged pair goes to review when the judge is not sure enough, when its verdict cannot
be true (:func:`~memvault.temporal.conflict.verdicts.verdict_problem`), when the second
judgment disagrees or the review rules do not consent, and when the judgment failed
(T3): :func:`review_action` and :func:`failed_action` queue it with both statements,
every verdict and a deadline, and nothing changes. When a person approves it,
:func:`action_for_review` checks the proposed change again against the store as it is now.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from memvault.errors import JudgeError, MemvaultError
from memvault.store import Store
from memvault.store.queries.triples import triples_by_id
from memvault.temporal.conflict.candidates import judged_statements
from memvault.temporal.conflict.judge import (
    ConfirmReply,
    ConflictReply,
    ResolveConflictRequest,
)
from memvault.temporal.conflict.model import (
    ROW_SCHEMA,
    ConflictAction,
    ConflictConfig,
    JudgedPair,
    typed,
)
from memvault.temporal.conflict.verdicts import definition_dict, judged_action, verdict_problem
from memvault.temporal.grounding import Grounding
from memvault.temporal.timeline import pair_id


def review_action(
    pair: JudgedPair,
    request: ResolveConflictRequest,
    replies: list[tuple[str, ConflictReply]],
    now: dt.datetime,
    config: ConflictConfig,
    *,
    reason: str | None = None,
    confirmation: ConfirmReply | None = None,
) -> ConflictAction:
    """A judged pair queued for a human (unsure, refused, or the judgments disagree): the
    review item carries both statements and every verdict; nothing changes until decided."""
    last_by, last = replies[-1]
    proposal = _review_proposal(pair, request, replies, now, config)
    confidence = last.confidence
    if confirmation is not None:
        proposal["confirmation"] = confirmation.model_dump(mode="json")
        confidence = min(confidence, confirmation.confidence)
    why = (
        reason
        or verdict_problem(last, request)[0]
        or f"not sure enough ({last.confidence:.2f} < {config.confidence_threshold})"
    )
    return ConflictAction(
        kind="review",
        target_id=request.a.triple_id,
        other_id=request.b.triple_id,
        subject_id=pair.subject_id,
        predicate=pair.predicate,
        reason=f"{why}: {last.reason}",
        decided_by=last_by,
        confidence=confidence,
        verdict=last.verdict,
        pair_id=pair.pair_id,
        proposal=proposal,
        impact=pair.impact,
        impact_inputs=pair.impact_inputs,
        review_kind=f"conflict:{last.verdict.lower()}"
        if last.verdict in ("MERGE", "SUPERSEDE")
        else "conflict",
    )


def _review_proposal(
    pair: JudgedPair,
    request: ResolveConflictRequest,
    replies: list[tuple[str, ConflictReply]],
    now: dt.datetime,
    config: ConflictConfig,
) -> dict[str, Any]:
    """What a human reviewing the pair sees: both statements, every verdict, the deadline."""
    return {
        "pair": pair.pair_id,
        "triple_a": request.a.triple_id,
        "triple_b": request.b.triple_id,
        "subject": request.subject,
        "predicate": pair.predicate,
        "objects": {"a": request.a.object, "b": request.b.object},
        "statements": {
            side: statement.model_dump(
                mode="json",
                include={
                    "object",
                    "valid_at",
                    "invalid_at",
                    "created_at",
                    "source_session",
                    "source_text",
                },
            )
            for side, statement in (("a", request.a), ("b", request.b))
        },
        "verdicts": [{"decided_by": by, **r.model_dump(mode="json")} for by, r in replies],
        "deadline": (now + dt.timedelta(days=config.review_deadline_days)).isoformat(),
        "why_asked": request.why_asked,
    }


def failed_action(
    pair: JudgedPair,
    request: ResolveConflictRequest,
    error: JudgeError,
    now: dt.datetime,
    config: ConflictConfig,
) -> ConflictAction:
    """A pair whose judgment failed: queued for a human with the cause, nothing applied."""
    return ConflictAction(
        kind="review",
        target_id=request.a.triple_id,
        other_id=request.b.triple_id,
        subject_id=pair.subject_id,
        predicate=pair.predicate,
        reason=f"the judge failed: {error}",
        decided_by="judge-error",
        pair_id=pair.pair_id,
        proposal=_review_proposal(pair, request, [], now, config) | {"judge_error": str(error)},
        impact=pair.impact,
        impact_inputs=pair.impact_inputs,
        review_kind="conflict",
    )


def action_for_review(
    store: Store, proposal: dict[str, Any], decided_by: str, grounding: Grounding | None = None
) -> ConflictAction | None:
    """The change a queued conflict proposes (its last verdict), checked again against the
    store as it is now; None when it proposes no change (keep both)."""
    verdicts = proposal.get("verdicts") or []
    if not verdicts or verdicts[-1].get("verdict") not in ("MERGE", "SUPERSEDE"):
        return None
    reply = ConflictReply.model_validate(
        {k: v for k, v in verdicts[-1].items() if k in ConflictReply.model_fields}
    )
    a_id, b_id = str(proposal["triple_a"]), str(proposal["triple_b"])
    rows = typed(
        triples_by_id(store, [a_id, b_id], ROW_SCHEMA),
        ROW_SCHEMA,
    )
    if rows.height != 2:
        raise MemvaultError(f"the statements {a_id} and {b_id} are no longer both in the store")
    statements = judged_statements(store, rows, [a_id, b_id], 0)
    a, b = statements[a_id], statements[b_id]
    predicate = str(rows["predicate"][0])  # the store's, not what the queued item says
    definition = (grounding or Grounding.load()).get(predicate)
    request = ResolveConflictRequest(
        subject=str(proposal.get("subject") or rows["subject_id"][0]),
        predicate=definition_dict(definition, predicate),
        why_asked=str(proposal.get("why_asked") or "review"),
        a=a,
        b=b,
    )
    problem, newer = verdict_problem(reply, request)
    if problem is not None:
        raise MemvaultError(f"the proposed change cannot be applied: {problem}")
    pair = JudgedPair(
        pair_id=pair_id(a_id, b_id),
        subject_id=str(rows["subject_id"][0]),
        predicate=predicate,
        preference=bool(definition and definition.preference),
        impact=float(proposal.get("impact") or 0.0),
        impact_inputs=dict(proposal.get("impact_inputs") or {}),
    )
    return judged_action(pair, request, reply, newer, decided_by)
