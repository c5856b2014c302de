"""What a judge's verdict may do: checked against the data first, then made an action.

:func:`verdict_problem` is the one check every judged MERGE and SUPERSEDE passes, in the
dream, the lint and the review queue: a merge of two different values, a supersede that
ends a statement before it began, or one on a predicate that may hold several values
without a strictly later ``valid_at`` is refused (:class:`Refusal`), whatever the judge's
confidence. :func:`judged_action` turns a verdict that passed into a
:class:`~memvault.temporal.conflict.model.ConflictAction`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memvault.temporal.conflict.judge import (
    ConflictReply,
    ConflictStatement,
    ResolveConflictRequest,
    merge_refusal,
)
from memvault.temporal.conflict.model import ConflictAction, JudgedPair
from memvault.temporal.grounding import PredicateDef
from memvault.text_tokens import normalized


def _earlier(a: ConflictStatement, b: ConflictStatement) -> bool:
    """True when ``a`` came first (valid_at, then created_at, then id; undated last)."""

    def key(s: ConflictStatement) -> tuple[int, dt.datetime, dt.datetime, str]:
        return (s.valid_at is None, s.valid_at or s.created_at, s.created_at, s.triple_id)

    return key(a) <= key(b)


def _start_of(s: ConflictStatement) -> dt.datetime:
    """When a statement starts to hold: its valid_at, else when the store learned it."""
    return s.valid_at or s.created_at


@dataclass(frozen=True)
class Refusal:
    """Why a judge's verdict may not touch the store, and the counter it is counted under
    (every refusal also counts as an ``invalid_verdicts``)."""

    text: str
    counter: Literal["invalid_verdicts", "refused_merges", "refused_by_definitions"]

    def __str__(self) -> str:
        return self.text


def count_refusal(stats: Counter[str], refusal: Refusal) -> None:
    """Count a refusal under ``invalid_verdicts`` and, when it has one, its own counter."""
    stats["invalid_verdicts"] += 1
    if refusal.counter != "invalid_verdicts":
        stats[refusal.counter] += 1


def _supersede_problem(
    new: ConflictStatement, old: ConflictStatement, definition: Mapping[str, Any]
) -> Refusal | None:
    """What the dates and the predicate's definition say against ``new`` retiring ``old``.

    Never before the retired statement began (that contradicts the known dates). A predicate
    that holds one value at a time (functional) may retire a statement from the start of the
    next one (its valid_at, else when the store learned it), a correction of a value stated
    for the same moment included: only one of them can have held. A predicate that may hold
    several values at once (or one not defined) gives no reason for one value to end where
    another begins: a statement retires another only when both are dated and its valid_at is
    strictly later, so the retired one never ends up valid for no time at all.
    """
    if _start_of(new) < _start_of(old):
        return Refusal(
            f"SUPERSEDE would end {old.triple_id} on {_start_of(new):%Y-%m-%d}, before its own "
            f"start ({_start_of(old):%Y-%m-%d}): it contradicts the known dates",
            "invalid_verdicts",
        )
    if definition.get("cardinality") == "functional":
        return None
    if new.valid_at is None or old.valid_at is None or new.valid_at <= old.valid_at:
        name = definition.get("name", "this predicate")
        return Refusal(
            f"SUPERSEDE on {name}, which may hold several values at once: one statement retires "
            "another only from a strictly later valid_at, never leaving it valid for no time",
            "refused_by_definitions",
        )
    return None


def verdict_problem(
    reply: ConflictReply, request: ResolveConflictRequest
) -> tuple[Refusal | None, str | None]:
    """(why the verdict cannot be applied as it stands, or None; for SUPERSEDE which side is
    newer). A judge's answer is checked against the data and the predicate's definition
    before it may touch the store: the one check every judged MERGE and SUPERSEDE passes,
    in the dream, the lint and the review queue."""
    a, b, definition = request.a, request.b, request.predicate
    if reply.verdict == "MERGE" and definition.get("preference"):
        # A preference keeps its versions: the merge is applied as the later wording
        # retiring the earlier one (see judged_action), so it is bounded like a supersede.
        new, old = (b, a) if _earlier(a, b) else (a, b)
        return _supersede_problem(new, old, definition), None
    if reply.verdict == "MERGE":
        why = merge_refusal(a, b)
        return (Refusal(why, "refused_merges") if why else None), None
    if reply.verdict != "SUPERSEDE":
        return None, None
    newer = reply.newer
    if newer is None and a.valid_at and b.valid_at and a.valid_at != b.valid_at:
        newer = "a" if a.valid_at > b.valid_at else "b"
    if newer is None:
        return Refusal(
            "SUPERSEDE without saying which statement is newer", "invalid_verdicts"
        ), None
    new, old = (a, b) if newer == "a" else (b, a)
    bound = _supersede_problem(new, old, definition)
    return bound, (None if bound else newer)


def retires_for_no_time(request: ResolveConflictRequest, newer: str | None) -> bool:
    """Whether a SUPERSEDE (``newer`` side) would end the older statement the moment it began:
    both start together (a tie), so the retired one is left valid for no time at all. Only
    a judgment confirmed by another model may decide that (a correction of a value stated
    for the same moment); one model agreeing with itself goes to review."""
    if newer not in ("a", "b"):
        return False
    new, old = (request.a, request.b) if newer == "a" else (request.b, request.a)
    return _start_of(new) == _start_of(old)


def merged_wording(
    reply: ConflictReply, survivor: ConflictStatement, loser: ConflictStatement
) -> str | None:
    """The wording a MERGE keeps: one of the two statements' own objects, never free text from
    the judge (a memory that says "ignore previous instructions" must not become a fact)."""
    wording = (reply.merged_object or "").strip()
    if not wording or survivor.object_id is not None:
        return None
    chosen = normalized(wording)
    if chosen == normalized(loser.object) and wording != survivor.object:
        return loser.object
    return None


def judged_action(
    pair: JudgedPair,
    request: ResolveConflictRequest,
    reply: ConflictReply,
    newer: str | None,
    decided_by: str,
) -> ConflictAction:
    """The action a checked verdict decides: SUPERSEDE dates the older statement, MERGE keeps
    the earlier one (a preference's versions are kept: its merge becomes a supersede),
    COEXIST keeps both."""
    a, b = request.a, request.b
    base: dict[str, Any] = {
        "subject_id": pair.subject_id,
        "predicate": pair.predicate,
        "reason": reply.reason,
        "decided_by": decided_by,
        "confidence": reply.confidence,
        "verdict": reply.verdict,
        "pair_id": pair.pair_id,
        "impact": pair.impact,
        "impact_inputs": pair.impact_inputs,
    }
    verdict = reply.verdict
    if verdict == "MERGE" and pair.preference:
        # A preference keeps its versions (T4): the later wording becomes current, the
        # earlier one is retired with a date instead of being merged away.
        verdict, newer = "SUPERSEDE", ("b" if _earlier(a, b) else "a")
    if verdict == "SUPERSEDE":
        new, old = (a, b) if newer == "a" else (b, a)
        return ConflictAction(
            kind="supersede",
            target_id=old.triple_id,
            other_id=new.triple_id,
            invalid_at=new.valid_at or new.created_at,
            **base,
        )
    if verdict == "MERGE":
        survivor, loser = (a, b) if _earlier(a, b) else (b, a)
        merged = merged_wording(reply, survivor, loser)
        return ConflictAction(
            kind="merge",
            target_id=loser.triple_id,
            other_id=survivor.triple_id,
            merged_object=merged,
            **base,
        )
    return ConflictAction(kind="coexist", target_id=a.triple_id, other_id=b.triple_id, **base)


def definition_dict(definition: PredicateDef | None, name: str) -> dict[str, Any]:
    """The predicate's definition as the judge sees it and :func:`verdict_problem` bounds a
    verdict by; a predicate not defined is treated as one that may hold several values."""
    if definition is not None:
        return definition.as_dict()
    return {"name": name, "description": "not in the grounding definitions",
            "cardinality": "unknown"}  # fmt: skip
