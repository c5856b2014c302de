"""GD4 invalidate stale facts: same subject + predicate, different object, later time.

Only predicates that hold one value at a time (``GardenConfig.functional_predicates``)
are judged by the rule; a multi-valued predicate ("knows", "uses_tool") has
many true objects at once and is left alone. Within a group the facts are
ordered by valid time; each is superseded by the next one with a different
object and a *later* valid time (``invalid_at`` = that fact's ``valid_at``,
the timeline kept). Two different objects at the same time are uncertain. This
is the temporal timeline's rule (:func:`memvault.temporal.timeline.stale_statements`),
the one memvault's own store is resolved by.

Tend-and-propose proposes (approved proposals execute at the next run);
autonomous executes the clear cases. A store that cannot invalidate gets the
old fact proposed, never deleted.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from memvault.gardener.adapter import Capability, Fact, FactQuery
from memvault.gardener.phases.base import PhaseContext, preview
from memvault.gardener.report import OpLine
from memvault.temporal.timeline import stale_statements
from memvault.text_tokens import normalized


def _label(fact: Fact) -> str:
    return preview(
        f"{fact.subject_label or fact.subject} {fact.predicate} {fact.object_label or fact.object}"
    )


def _topic(fact: Fact) -> str:
    """What a fact is about: its subject and predicate (the journal names retired facts so)."""
    return preview(f"{fact.subject_label or fact.subject} {fact.predicate}")


def _naive(when: dt.datetime) -> dt.datetime:
    return when.astimezone(dt.UTC).replace(tzinfo=None) if when.tzinfo else when


def supersessions(facts: list[Fact]) -> tuple[list[tuple[Fact, Fact]], list[tuple[Fact, Fact]]]:
    """(clear, uncertain) pairs (old, new) of one subject + predicate's active facts.

    Stale means what it means on memvault's own timeline
    (:func:`memvault.temporal.timeline.stale_statements`): a fact is ended by the next
    fact of another object (objects compared by their normalized wording), restatements
    included; facts of different objects for the same time are uncertain. A fact with no
    valid time stands at the time the store first had it; one with no time at all is
    uncertain against the next fact of another object."""
    far = dt.datetime.min
    timed = [f for f in facts if (f.valid_at or f.created_at) is not None]
    by_id = {f.id: f for f in timed}
    frame = pl.DataFrame(
        {
            "id": [f.id for f in timed],
            "subject_id": [f.subject for f in timed],
            "predicate": [f.predicate for f in timed],
            "objkey": [normalized(str(f.object)) for f in timed],
            "valid_at": [_naive(f.valid_at or f.created_at or far) for f in timed],
            "created_at": [_naive(f.created_at or far) for f in timed],
        },
        schema={"id": pl.Utf8, "subject_id": pl.Utf8, "predicate": pl.Utf8, "objkey": pl.Utf8,
                "valid_at": pl.Datetime("us"), "created_at": pl.Datetime("us")},
    )  # fmt: skip
    ended, tied = stale_statements(frame)
    clear = [(by_id[a], by_id[b]) for a, b in ended]
    uncertain = [(by_id[a], by_id[b]) for a, b in tied]
    ordered = sorted(
        facts, key=lambda f: (f.valid_at or f.created_at or far, f.created_at or far, f.id)
    )
    for n, old in enumerate(ordered):
        if (old.valid_at or old.created_at) is None:
            key = normalized(str(old.object))
            other = next((f for f in ordered[n + 1 :] if normalized(str(f.object)) != key), None)
            if other is not None:
                uncertain.append((old, other))
    return clear, uncertain


def run_invalidate(ctx: PhaseContext) -> None:
    if not ctx.has(Capability.KG_SEARCH):
        ctx.run.skip("invalidate", "no kg_search capability (not a knowledge-graph store)")
        return
    can_invalidate = ctx.has(Capability.KG_INVALIDATE)
    if not can_invalidate:
        ctx.run.skip("invalidate", "no kg_invalidate capability: stale facts proposed only")
    if not ctx.cursor.get("approved_done"):
        if can_invalidate:
            _execute_approved(ctx)
        ctx.advance(approved_done=True)
    functional = set(ctx.config.functional_predicates)
    stable = set(ctx.config.stable_predicates)
    if ctx.srun.first_run:
        window = ctx.store.facts(FactQuery(newest_first=True, limit=ctx.config.first_run_items))
    else:
        window = ctx.store.facts(
            FactQuery(
                changed_since=dt.datetime.fromisoformat(ctx.srun.window_start)
                if ctx.srun.window_start
                else None,
                limit=100_000,
            )
        )
    groups = sorted(
        {(f.subject, f.predicate) for f in window if f.predicate in functional | stable}
    )
    after = ctx.cursor.get("after")
    settled = ctx.settled()
    for subject, predicate in groups:
        key = f"{subject}|{predicate}"
        if after is not None and key <= after:
            continue
        ctx.advance(approved_done=True, after=after)
        active = ctx.store.facts(FactQuery(subject=subject, predicate=predicate, active_only=True))
        clear, uncertain = supersessions(active)
        if predicate in stable:  # a change of what should not change: a human decides
            clear, uncertain = [], clear + uncertain
        for old, new in clear:
            _retire(ctx, old, new, can_invalidate)
        for old, new in uncertain:
            if f"{old.id}|{new.id}" in settled:
                continue
            ctx.propose(
                action="invalidate",
                target_table="triples",
                target_id=old.id,
                related=[new.id],
                certain=False,
                confidence=0.5,
                reason=_why_uncertain(old, new, predicate in stable),
                detail={"label": _label(old), "subject": old.subject, "predicate": old.predicate},
            )
            ctx.defer(
                f"{old.id} ↔ {new.id} — {_label(old)} / {_label(new)}: "
                + _why_uncertain(old, new, predicate in stable)
            )
            ctx.settle(f"{old.id}|{new.id}")
        after = key
        ctx.advance(approved_done=True, after=after)


def run_invalidate_approved(ctx: PhaseContext) -> None:
    """Only the approved invalidations (for a run that resumes past GD4)."""
    if ctx.has(Capability.KG_SEARCH, Capability.KG_INVALIDATE):
        _execute_approved(ctx)


def _retire(ctx: PhaseContext, old: Fact, new: Fact, can_invalidate: bool) -> None:
    reason = f"superseded by {new.id} ({_label(new)}) from {new.valid_at or new.created_at}"
    execute = ctx.autonomous and can_invalidate and not ctx.proposing("invalidate")
    if execute:
        earlier = ctx.fixed_before("triples", old.id, ["invalidate"])
        if earlier:
            ctx.switch_to_proposing("invalidate", old.id, earlier)
            execute = False
    if execute:
        ctx.write(
            "invalidate",
            reason,
            lambda w: ctx.store.invalidate_fact(
                w, old.id, invalid_at=new.valid_at or new.created_at, superseded_by=new.id
            ),
            label=_topic(old),
        )
        ctx.op(OpLine("EXECUTED", "INVALIDATE", old.id, new.id, _label(old)))
        ctx.run.count("invalidations")
        return
    ctx.propose(
        action="invalidate",
        target_table="triples",
        target_id=old.id,
        related=[new.id],
        certain=True,
        confidence=0.9,
        reason=reason,
        detail={
            "label": _label(old),
            "subject": old.subject,
            "predicate": old.predicate,
            "invalid_at": str(new.valid_at or new.created_at),
        },
        line=OpLine("PROPOSED", "INVALIDATE", old.id, None, _label(old), f"superseded by {new.id}"),
    )


def _execute_approved(ctx: PhaseContext) -> None:
    for proposal in ctx.ledger.executable(ctx.store.name, "invalidate", ctx.autonomous):
        new_id = proposal.related[0] if proposal.related else None
        subject = proposal.detail.get("subject")
        predicate = proposal.detail.get("predicate")
        group = (
            ctx.store.facts(FactQuery(subject=subject, predicate=predicate, active_only=False))
            if subject and predicate
            else []
        )
        old = next((f for f in group if f.id == proposal.target_id), None)
        new = next((f for f in group if f.id == new_id), None)
        if old is None or new is None or not old.active:
            ctx.settle_proposal(proposal, "stale", "the fact is no longer active")
            continue
        ctx.write(
            "invalidate",
            f"approved proposal {proposal.id}: superseded by {new.id}",
            lambda w, old=old, new=new: ctx.store.invalidate_fact(  # type: ignore[misc]
                w, old.id, invalid_at=new.valid_at or new.created_at, superseded_by=new.id
            ),
            label=_topic(old),
        )
        ctx.op(OpLine("EXECUTED", "INVALIDATE", old.id, new.id, _label(old)))
        ctx.run.count("invalidations")
        ctx.settle_proposal(proposal, "executed", f"invalidated by {ctx.run.run_id}")


def _why_uncertain(old: Fact, new: Fact, stable: bool) -> str:
    """Why a pair of facts is proposed rather than resolved: said in the report's words."""
    if stable:
        return f"{old.predicate} is not expected to change"
    if old.valid_at is None and new.valid_at is None:
        return "different objects and no times to order them"
    return "two different objects for the same time"
