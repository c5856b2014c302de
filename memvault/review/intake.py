"""What feeds the review queue besides the dream's conflicts and the gardener's proposals.

* Low-confidence memories (the GRC adapter): a current fact stored with a
  confidence below ``policy.low_confidence`` is asked about — is it right?
  "correct" confirms it (confidence 1.0), "wrong" invalidates it (kept, no
  longer believed).
* The lint's archive proposals: an entity left with only retired facts is
  proposed for archiving; the review rules decide whether that waits for a
  human or is applied now (audited, undoable).
* New facts that break their predicate's definition (``Ada lives_in Globex``
  where Globex is an organization and lives_in wants a place): the dream holds
  them out of the store's beliefs (status ``held``, kept) and asks, with the
  reason — "correct" makes the fact current, "wrong" invalidates it.

An item is proposed once: a fact or entity that already has an item (waiting or
decided) is not proposed again.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from memvault.normalize import utcnow
from memvault.review.calibration import Calibration
from memvault.review.impact import ImpactInputs, impact_score, subject_inputs
from memvault.review.policy import ReviewPolicy, route
from memvault.review.queue import enqueue_row
from memvault.store import Store
from memvault.store.queries.review import (
    active_facts_not_held,
    queued_targets,
    unqueued_low_confidence_facts,
)

MEMORY_KIND = "memory"
GROUNDING_KIND = "grounding"
ARCHIVE_KIND = "lint:archive-entity"
#: How sure the lint is that an entity with only retired facts may be archived (a rule saw it).
ARCHIVE_CONFIDENCE = 0.9


@dataclass
class Intake:
    queued: int = 0
    applied: int = 0


def _deadline(policy: ReviewPolicy, now: dt.datetime) -> dt.datetime:
    return now + dt.timedelta(days=policy.deadline_days)


def queue_low_confidence(
    store: Store,
    run_id: str,
    policy: ReviewPolicy,
    *,
    limit: int = 200,
    now: dt.datetime | None = None,
) -> Intake:
    """Queue up to ``limit`` current facts stored with less than ``policy.low_confidence``
    (least sure first)."""
    now = now or utcnow()
    rows = unqueued_low_confidence_facts(store, policy.low_confidence, limit)
    items = []
    for row in rows.iter_rows(named=True):
        centrality, dependents = subject_inputs(store, row["subject_id"])
        inputs = ImpactInputs(centrality=centrality, dependents=dependents, retires_current=True)
        items.append(
            enqueue_row(
                item_id=f"memory:{row['id']}",
                kind=MEMORY_KIND,
                target_table="triples",
                target_id=row["id"],
                proposal={
                    "question": "Is this memory right? correct keeps it (confirmed), wrong "
                    "invalidates it.",
                    "fact": {k: row[k] for k in ("subject", "predicate", "object", "valid_at")},
                    "source": {"session": row["source_session"], "block": row["source_block"]},
                    "stored_confidence": row["confidence"],
                },
                reason=f"stored with confidence {row['confidence']:.2f}, below "
                f"{policy.low_confidence:g}",
                confidence=row["confidence"],
                impact=impact_score(inputs),
                impact_inputs=inputs.model_dump(),
                deadline=_deadline(policy, now),
                run_id=run_id,
                now=now,
            )
        )
    if not items:
        return Intake()
    with store.mutation(run_id, "review_queue") as m:
        inserted = m.insert(
            "review_queue", pl.DataFrame(items), action="queue", reason="low-confidence memory"
        )
    return Intake(queued=len(inserted))


def propose_archives(
    store: Store,
    entities: Sequence[tuple[str, str]],
    run_id: str,
    policy: ReviewPolicy,
    calibration: Calibration,
    *,
    now: dt.datetime | None = None,
) -> Intake:
    """(entity id, name) pairs the lint found with only retired facts: archive now when the
    review rules allow it, else queue the proposal."""
    now = now or utcnow()
    if not entities:
        return Intake()
    ids = [e for e, _ in entities]
    proposed = queued_targets(store, ARCHIVE_KIND, ids)
    intake = Intake()
    batch = [(e, n) for e, n in entities if e not in proposed]
    archive, queue = [], []
    for entity_id, name in batch:
        centrality, dependents = subject_inputs(store, entity_id)
        inputs = ImpactInputs(centrality=centrality, dependents=dependents)
        impact = impact_score(inputs)
        decision = route(
            policy, calibration, ARCHIVE_KIND, ARCHIVE_CONFIDENCE, impact, batch_size=len(batch)
        )
        reason = f"{name!r} has only retired facts and nothing mentions it"
        if decision.auto:
            archive.append({"id": entity_id, "status": "archived"})
            continue
        queue.append(
            enqueue_row(
                item_id=f"lint:archive:{entity_id}",
                kind=ARCHIVE_KIND,
                target_table="entities",
                target_id=entity_id,
                proposal={"action": "archive", "entity": name, "why": reason},
                reason=f"{reason}; {decision.reason}",
                confidence=ARCHIVE_CONFIDENCE,
                impact=impact,
                impact_inputs=inputs.model_dump(),
                deadline=_deadline(policy, now),
                run_id=run_id,
                now=now,
            )
        )
    if not archive and not queue:
        return intake
    with store.mutation(run_id, "lint_grounding") as m:
        if archive:
            m.update_many(
                "entities",
                pl.DataFrame(archive),
                action="archive",
                reason="only retired facts and no mention (the review rules allowed it)",
            )
            intake.applied = len(archive)
        if queue:
            intake.queued = len(
                m.insert(
                    "review_queue",
                    pl.DataFrame(queue),
                    action="queue",
                    reason="archive proposal of the lint",
                )
            )
    return intake


def hold_for_review(
    store: Store,
    run_id: str,
    problems: dict[str, list[str]],
    policy: ReviewPolicy,
    *,
    phase: str,
    now: dt.datetime | None = None,
) -> Intake:
    """Hold the current facts ``problems`` names (fact id → what breaks its definition) out of
    the store's beliefs — status ``held``, kept with the reason — and queue each for a person
    (a fact a person already decided on is left as they decided)."""
    now = now or utcnow()
    rows = active_facts_not_held(store, sorted(problems))
    if rows.is_empty():
        return Intake()
    items, held = [], []
    for row in rows.iter_rows(named=True):
        why = "; ".join(problems[row["id"]])
        held.append({"id": row["id"], "status": "held", "expired_at": now,
                     "note": f"held for review: {why}"})  # fmt: skip
        centrality, dependents = subject_inputs(store, row["subject_id"])
        inputs = ImpactInputs(centrality=centrality, dependents=dependents)
        items.append(
            enqueue_row(
                item_id=f"{GROUNDING_KIND}:{row['id']}",
                kind=GROUNDING_KIND,
                target_table="triples",
                target_id=row["id"],
                proposal={
                    "question": "This new fact breaks its predicate's definition. correct keeps "
                    "it as a current fact anyway, wrong invalidates it (kept, not believed).",
                    "fact": {k: row[k] for k in ("subject", "predicate", "object", "valid_at")},
                    "problems": problems[row["id"]],
                    "source": {"session": row["source_session"], "block": row["source_block"]},
                },
                reason=f"breaks its definition: {why}",
                confidence=None,
                impact=impact_score(inputs),
                impact_inputs=inputs.model_dump(),
                deadline=_deadline(policy, now),
                run_id=run_id,
                now=now,
            )
        )
    with store.mutation(run_id, phase) as m:
        m.update_many(
            "triples",
            pl.DataFrame(held),
            action="hold",
            reason="a new fact that breaks its predicate's definition waits for a person",
        )
        queued = m.insert(
            "review_queue", pl.DataFrame(items), action="queue", reason="a fact held for review"
        )
    return Intake(queued=len(queued), applied=len(held))
