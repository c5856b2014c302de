"""What a human's decision does, per kind of review item, and the decision itself (:func:`decide`).

Each kind of item is applied by the *applier* registered for its prefix
(:func:`register_applier`); the queue (:mod:`memvault.review.queue`) stores the items and
knows nothing of what a change means, so it imports no applier.

* ``conflict`` — "correct": the proposed MERGE or SUPERSEDE is applied through the
  same audited apply path the dream uses (checked again against the store as it is
  now); for an item that proposes no change, "correct" keeps both statements.
  "wrong": nothing changes and both statements keep holding (the pair is never
  asked again).
* ``garden`` — "correct" approves the proposal (the next garden run executes it);
  "wrong" rejects it.
* ``lint:archive-entity`` — "correct" archives the entity (never deletes it).
* ``attitude`` — a preference that replaces the current version of its topic:
  "correct" makes it the new version (the old one is superseded, kept, with a
  lower weight); "wrong" keeps the current preference as it is.
* ``memory`` — a fact kept with low confidence: "correct" confirms it (confidence
  1), "wrong" invalidates it (kept, dated, no longer believed).
* ``grounding`` — a new fact held because it breaks its predicate's definition:
  "correct" makes it a current fact (the person vouches for it), "wrong"
  invalidates it (kept, no longer believed).
* ``extract`` — a fact an LLM extracted that its memory does not clearly state:
  "correct" stores it, "wrong" leaves the store as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from memvault.normalize import utcnow
from memvault.review.queue import OPEN, ReviewError, ReviewItem, Verdict, get_item
from memvault.store import Mutation, Store
from memvault.store.tracked import tracked_run

#: Applies a decided item: (store, mutation, item, verdict) → a line saying what changed.
Applier = Callable[[Store, Mutation, ReviewItem, Verdict], str]
_APPLIERS: dict[str, Applier] = {}


def register_applier(prefix: str, applier: Applier) -> None:
    """``applier`` decides the items whose kind is ``prefix`` or starts with ``prefix:``."""
    _APPLIERS[prefix] = applier


def _verdict_row(m: Mutation, item: ReviewItem, verdict: str, status: str) -> None:
    pair = item.proposal.get("pair")
    if pair:
        m.update(
            "conflict_verdicts",
            pair,
            {"verdict": verdict, "status": status, "decided_by": "human", "decided_at": utcnow()},
            action="review",
            reason=f"human decision on {item.id}",
        )


def apply_conflict(store: Store, m: Mutation, item: ReviewItem, verdict: Verdict) -> str:
    from memvault.temporal.conflict.apply import apply_actions
    from memvault.temporal.conflict.review import action_for_review

    if verdict == "wrong":
        _verdict_row(m, item, "COEXIST", "rejected")
        return "the proposed change is wrong: both statements keep holding"
    action = action_for_review(store, item.proposal, "human")
    if action is None:
        _verdict_row(m, item, "COEXIST", "applied")
        return "kept both statements"
    applied: Counter[str] = apply_actions(store, m, [action])
    _verdict_row(m, item, str(action.verdict), "applied")
    done = ", ".join(f"{k} {n}" for k, n in applied.items()) or "nothing left to change"
    return f"applied {action.describe()} ({done})"


def apply_garden(store: Store, m: Mutation, item: ReviewItem, verdict: Verdict) -> str:
    if verdict == "correct":
        return "approved: the next garden run executes it"
    return "rejected: the gardener will not propose it again"


def apply_archive_entity(store: Store, m: Mutation, item: ReviewItem, verdict: Verdict) -> str:
    if verdict == "wrong" or not item.target_id:
        return "kept the entity as it is"
    m.update("entities", item.target_id, {"status": "archived"}, action="archive",
             reason=f"review {item.id}: {item.reason}")  # fmt: skip
    return f"archived entity {item.target_id}"


def apply_grounding(store: Store, m: Mutation, item: ReviewItem, verdict: Verdict) -> str:
    if not item.target_id:
        return "nothing to change"
    if verdict == "wrong":
        return apply_memory(store, m, item, verdict)
    reason = f"review {item.id}: a person confirmed it despite its definition ({item.reason})"
    schema: dict[str, pl.DataType] = {
        "id": pl.Utf8(), "status": pl.Utf8(), "expired_at": pl.Datetime("us"), "note": pl.Utf8()
    }  # fmt: skip
    current = {"id": item.target_id, "status": "active", "expired_at": None, "note": reason}
    m.update_many(
        "triples", pl.DataFrame([current], schema=schema), action="confirm", reason=reason
    )
    return f"made fact {item.target_id} current (a person vouches for it)"


def apply_memory(store: Store, m: Mutation, item: ReviewItem, verdict: Verdict) -> str:
    if not item.target_id:
        return "nothing to change"
    if verdict == "correct":
        m.update("triples", item.target_id, {"confidence": 1.0}, action="confirm",
                 reason=f"review {item.id}: a person confirmed it")  # fmt: skip
        return f"confirmed fact {item.target_id}"
    now = utcnow()
    m.update_many(
        "triples",
        pl.DataFrame(
            [
                {
                    "id": item.target_id,
                    "status": "invalidated",
                    "expired_at": now,
                    "note": f"review {item.id}: a person said it is wrong",
                }
            ]
        ),
        action="invalidate",
        reason=f"review {item.id}: a person said it is wrong",
    )
    return f"invalidated fact {item.target_id} (kept, no longer believed)"


def apply_attitude(store: Store, m: Mutation, item: ReviewItem, verdict: Verdict) -> str:
    if verdict == "wrong":
        return "kept the current preference"
    from memvault.layers.attitudes import apply_approved

    return apply_approved(store, m, item.proposal)


def apply_extract(store: Store, m: Mutation, item: ReviewItem, verdict: Verdict) -> str:
    from memvault.importers.enrich import apply_extracted

    return apply_extracted(store, m, item, verdict)


def register_all() -> None:
    register_applier("attitude", apply_attitude)
    register_applier("extract", apply_extract)
    register_applier("conflict", apply_conflict)
    register_applier("garden", apply_garden)
    register_applier("grounding", apply_grounding)
    register_applier("lint:archive-entity", apply_archive_entity)
    register_applier("memory", apply_memory)


@dataclass
class Decision:
    item_id: str
    verdict: Verdict
    run_id: str
    applied: str


def decide(
    store: Store,
    item_id: str,
    verdict: Verdict,
    *,
    by: str = "human",
    note: str | None = None,
) -> Decision:
    """Apply a human's decision on one item, audited in a run of its own."""
    register_all()
    item = get_item(store, item_id)
    if item.status not in OPEN:
        raise ReviewError(f"review item {item_id} was already decided ({item.status})")
    applier = _APPLIERS.get(item.kind) or _APPLIERS.get(item.prefix)
    if applier is None:
        raise ReviewError(f"no way to apply review items of kind {item.kind!r}")
    params = {"item": item_id, "verdict": verdict, "by": by}
    with tracked_run(store, "review", params) as run, store.mutation(run.id, "review") as m:
        applied = applier(store, m, item, verdict)
        m.update(
            "review_queue",
            item_id,
            {
                "status": "approved" if verdict == "correct" else "rejected",
                "decision": verdict,
                "decided_by": by,
                "decided_at": utcnow(),
                "note": note or applied,
            },
            action=f"review-{verdict}",
            reason=note or applied,
        )
        run.stats = {"item": item_id, "verdict": verdict}
    return Decision(item_id, verdict, run.id, applied)
