"""The attitude layer: the owner's preferences, one version chain per topic, fading without evidence.

Why: a preference the owner stated once, months ago, should not bind the agent
as firmly as one they repeated last week. Every preference keeps the confidence
it was stated with (``stated_confidence``) and the time its last evidence came
(``evidence_at``); its current confidence decays from there:

    confidence = stated_confidence · exp(−λ · Δt),  Δt = days since evidence_at

(``created_at`` when ``evidence_at`` is empty). It *binds* while that
confidence is at least the binding threshold. With the defaults (λ = 0.008 per
day, threshold 0.5) even a preference stated with full confidence stops binding
after ln 2 / 0.008 ≈ 87 days without new evidence; one stated at 0.9 binds for
about 73 days.

Version chains: a statement is matched to the chain of its ``(category, topic)``
(topics compare case-insensitively); the topic defaults to the category, so by default there is one chain per
category, as the demo histories have. The chain's current version is the one
without ``superseded_at``.

* the same statement again (compared case- and space-insensitively):
  *reinforcement* — the session ids are appended to its evidence,
  ``evidence_at`` becomes now and the confidence is back to the stated value;
* a first statement in an empty chain: written at once;
* a different statement: a *replacement*. It changes how the owner wants things
  done, so it goes through the review rules, which send every change of the
  attitude layer to a human: a review item of kind ``attitude`` is queued, and
  nothing changes until someone approves it (``memvault review approve``). Then
  the current version gets ``superseded_at``, every older version's weight
  halves (none is ever deleted), and the new version points to the old one with
  ``previous_id``.

Every write is audited (phase ``attitudes``; the approval's in the review run)
and undoable with ``memvault undo RUN_ID``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from memvault.config import env_number
from memvault.errors import MemvaultError
from memvault.normalize import canonical_name, iso, normalize_text, to_utc_naive, utcnow
from memvault.records import ATTITUDE_CATEGORIES, stable_id
from memvault.store import Mutation, Store
from memvault.store.queries.layers import attitude_chain_rows, attitude_rows
from memvault.store.queries.review import open_proposals_of_kind
from memvault.store.tracked import own_or_callers_run

if TYPE_CHECKING:
    from memvault.review.impact import ImpactInputs
    from memvault.review.policy import ReviewPolicy, Route

#: λ: the share of confidence lost per day without evidence (continuous rate, per day).
DECAY_PER_DAY = 0.008
#: A preference binds while its decayed confidence is at least this.
BINDING_THRESHOLD = 0.5
#: Confidence of a statement given without one (as in the interchange format).
DEFAULT_CONFIDENCE = 0.7
#: Each new version halves the weight of every older version of its chain.
WEIGHT_FACTOR = 0.5
PHASE = "attitudes"
REVIEW_KIND = "attitude"
_DIGITS = 6  # stored confidences are rounded, so a re-run at the same time compares equal
#: A decay pass leaves alone a confidence that moved less than this (minutes of decay).
MIN_CHANGE = 1e-4

Status = Literal["created", "reinforced", "replaced", "queued", "already_queued"]


class AttitudeError(MemvaultError):
    """A preference that cannot be stored as given."""


class DecaySettings(BaseModel):
    """How fast preferences fade and when they stop binding."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decay_per_day: float = Field(DECAY_PER_DAY, gt=0.0, description="λ, per day")
    binding_threshold: float = Field(BINDING_THRESHOLD, gt=0.0, le=1.0)

    @classmethod
    def from_env(cls) -> DecaySettings:
        """``MEMVAULT_ATTITUDE_DECAY_PER_DAY`` and ``MEMVAULT_ATTITUDE_BINDING`` (else defaults)."""
        return cls(
            decay_per_day=env_number("MEMVAULT_ATTITUDE_DECAY_PER_DAY", DECAY_PER_DAY),
            binding_threshold=env_number("MEMVAULT_ATTITUDE_BINDING", BINDING_THRESHOLD),
        )

    @property
    def binding_days(self) -> float:
        """Days a preference stated with full confidence binds without new evidence."""
        return math.log(1.0 / self.binding_threshold) / self.decay_per_day


@dataclass
class UpsertResult:
    """What an upsert did: the row written (if any), the run, and the review item (if queued)."""

    status: Status
    attitude_id: str | None
    run_id: str | None = None
    review_id: str | None = None
    replaces: str | None = None
    message: str = ""


@dataclass
class DecayReport:
    """What one decay pass found and wrote."""

    decayed: int = 0
    binding: int = 0
    not_binding: int = 0
    stopped_binding: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "decayed": self.decayed,
            "binding": self.binding,
            "not_binding": self.not_binding,
            "stopped_binding": len(self.stopped_binding),
        }

    def metadata(self) -> dict[str, Any]:
        """The pass's counts (the preferences that stopped binding are :meth:`stopped_rows`)."""
        return {
            "decayed": self.decayed,
            "still_binding": self.binding,
            "no_longer_binding": self.not_binding,
            "stopped_binding_now": len(self.stopped_binding),
        }

    def stopped_rows(self, current: pl.DataFrame, most: int = 20) -> list[dict[str, str]]:
        """The preferences that stopped binding in this pass, as an orchestrator lists them:
        category, statement, decayed confidence and days since their last evidence."""
        stopped = current.filter(current["id"].is_in(self.stopped_binding))
        return [
            {
                "category": r["category"],
                "statement": r["statement"],
                "confidence": f"{r['decayed']:.2f}",
                "days_since_evidence": f"{r['days_since_evidence']:.0f}",
            }
            for r in stopped.head(most).iter_rows(named=True)
        ]


# -- reading ----------------------------------------------------------------------------------


def check_category(category: str) -> str:
    if category not in ATTITUDE_CATEGORIES:
        raise AttitudeError(
            f"unknown attitude category {category!r}: use one of {', '.join(ATTITUDE_CATEGORIES)}"
        )
    return category


def same_statement(a: str, b: str) -> bool:
    """Two statements are the same preference when equal ignoring case, spacing and edge
    punctuation."""
    return canonical_name(a) == canonical_name(b)


def _with_topic(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows as read, with an empty topic filed under its category."""
    return frame.with_columns(pl.coalesce("topic", "category").alias("topic"))


def topic_key(topic: str | None, category: str) -> str:
    """The topic a statement is filed under: lower case, single spaces; the category if empty."""
    return " ".join(normalize_text(topic or "").split()).lower() or category


def chain(store: Store, category: str, topic: str | None = None) -> pl.DataFrame:
    """Every version of one (category, topic), oldest first (topics compare case-insensitively)."""
    rows = attitude_chain_rows(store, category, topic_key(topic, category))
    return _with_topic(rows).sort("created_at", "id")


def with_decay(frame: pl.DataFrame, now: dt.datetime, settings: DecaySettings) -> pl.DataFrame:
    """``frame`` (rows of ``attitudes``) with the confidence decayed to ``now`` in ``decayed``,
    the days since the last evidence in ``days_since_evidence`` and ``binding``.

    A superseded version never binds.
    """
    since = pl.coalesce("evidence_at", "created_at")
    days = ((pl.lit(now) - since).dt.total_seconds() / 86_400.0).clip(lower_bound=0.0)
    stated = pl.coalesce("stated_confidence", "confidence")
    return frame.with_columns(
        stated.alias("stated"),
        days.alias("days_since_evidence"),
        (stated * (-settings.decay_per_day * days).exp()).round(_DIGITS).alias("decayed"),
    ).with_columns(
        (
            (pl.col("decayed") >= settings.binding_threshold) & pl.col("superseded_at").is_null()
        ).alias("binding")
    )


def binding(
    store: Store,
    now: dt.datetime | None = None,
    settings: DecaySettings | None = None,
    *,
    all_versions: bool = False,
) -> pl.DataFrame:
    """The current preferences (every version with ``all_versions``) with their confidence at
    ``now`` and whether they still bind; computed from the stated confidence, so it does not
    depend on when the decay last ran."""
    now = to_utc_naive(now) if now else utcnow()
    settings = settings or DecaySettings.from_env()
    rows = _with_topic(attitude_rows(store, current_only=not all_versions))
    return with_decay(rows, now, settings).sort("category", "topic", "created_at", "id")


# -- writing ----------------------------------------------------------------------------------


def _current(versions: pl.DataFrame) -> dict[str, Any] | None:
    heads = versions.filter(pl.col("superseded_at").is_null())
    return heads.row(heads.height - 1, named=True) if heads.height else None


def _evidence_json(values: Iterable[str]) -> str:
    return json.dumps(list(dict.fromkeys(str(v) for v in values if v)), ensure_ascii=False)


def reinforce(
    m: Mutation, head: dict[str, Any], confidence: float, evidence: list[str], now: dt.datetime
) -> None:
    """The same statement again: evidence appended, evidence_at = now, confidence as stated."""
    old = json.loads(head["evidence"] or "[]")
    last = head["evidence_at"] or head["created_at"]
    m.update(
        "attitudes",
        head["id"],
        {
            "evidence": _evidence_json([*old, *evidence]),
            "evidence_at": max(now, last),
            "stated_confidence": confidence,
            "confidence": round(confidence, _DIGITS),
            "decayed_at": now,
        },
        action="reinforce",
        reason="the same preference was stated again",
    )


def write_version(
    m: Mutation,
    versions: pl.DataFrame,
    *,
    category: str,
    topic: str,
    statement: str,
    confidence: float,
    evidence: list[str],
    now: dt.datetime,
) -> str:
    """A new version of the chain ``versions``: the current one is superseded at ``now``, every
    older one's weight halves (kept, never deleted); returns the new version's id."""
    head = _current(versions)
    new_id = stable_id("att", category, statement, now)
    if versions.height:
        older = versions.select(
            "id",
            (pl.col("weight") * WEIGHT_FACTOR).alias("weight"),
            pl.when(pl.col("id") == (head or {}).get("id"))
            .then(pl.lit(now))
            .otherwise(pl.col("superseded_at"))
            .alias("superseded_at"),
        )
        m.update_many(
            "attitudes", older, action="supersede", reason=f"replaced by {new_id}: {statement}"
        )
    m.insert(
        "attitudes",
        pl.DataFrame(
            [
                {
                    "id": new_id,
                    "category": category,
                    "topic": topic,
                    "statement": statement,
                    "confidence": round(confidence, _DIGITS),
                    "weight": 1.0,
                    "evidence": _evidence_json(evidence),
                    "created_at": now,
                    "superseded_at": None,
                    "previous_id": head["id"] if head else None,
                    "stated_confidence": confidence,
                    "evidence_at": now,
                    "decayed_at": now,
                }
            ]
        ),
        reason="a new version of the preference" if head else "a first preference on the topic",
    )
    return new_id


def _pending_item(store: Store, category: str, topic: str, statement: str) -> str | None:
    rows = open_proposals_of_kind(store, REVIEW_KIND)
    for item_id, proposal in rows:
        p = json.loads(proposal or "{}")
        if (
            p.get("category") == category
            and p.get("topic") == topic
            and same_statement(str(p.get("statement", "")), statement)
        ):
            return str(item_id)
    return None


def upsert(
    store: Store,
    category: str,
    statement: str,
    confidence: float = DEFAULT_CONFIDENCE,
    evidence: list[str] | None = None,
    *,
    now: dt.datetime | None = None,
    topic: str | None = None,
    run_id: str | None = None,
    policy: ReviewPolicy | None = None,
) -> UpsertResult:
    """State a preference: reinforce, create, or propose a replacement (see the module doc).

    ``evidence`` are session ids; ``now`` the time it was stated (default: now, UTC);
    ``topic`` narrows the chain (default: the category); ``policy`` the review rules
    (default ``ReviewPolicy()``). Opens a run of kind ``attitudes`` unless ``run_id`` is given.
    """
    from memvault.review.calibration import calibrate
    from memvault.review.impact import ImpactInputs, impact_score
    from memvault.review.policy import ReviewPolicy, route

    check_category(category)
    statement = normalize_text(statement)
    if not statement:
        raise AttitudeError("an attitude needs a statement")
    if not 0.0 <= confidence <= 1.0:
        raise AttitudeError(f"confidence {confidence} is not between 0 and 1")
    topic = topic_key(topic, category)
    now = to_utc_naive(now) if now else utcnow()
    evidence = list(evidence or [])
    policy = policy or ReviewPolicy()

    versions = chain(store, category, topic)
    head = _current(versions)
    if head is not None and not same_statement(head["statement"], statement):
        pending = _pending_item(store, category, topic, statement)
        if pending:
            return UpsertResult(
                "already_queued", None, review_id=pending, replaces=head["id"],
                message=f"already waiting for review as {pending}",
            )  # fmt: skip
        inputs = ImpactInputs(layer=True, retires_current=True)
        impact = impact_score(inputs)
        decision = route(policy, calibrate(store, policy), REVIEW_KIND, confidence, impact)
    with (
        own_or_callers_run(store, PHASE, {"category": category, "topic": topic}, run_id) as run,
        store.mutation(run.id, PHASE) as m,
    ):
        run_id = run.id
        if head is None:
            new_id = write_version(
                m, versions, category=category, topic=topic, statement=statement,
                confidence=confidence, evidence=evidence, now=now,
            )  # fmt: skip
            result = UpsertResult("created", new_id, run_id, message="a first preference")
        elif same_statement(head["statement"], statement):
            reinforce(m, head, confidence, evidence, now)
            result = UpsertResult("reinforced", head["id"], run_id, message="reinforced")
        elif decision.auto:
            new_id = write_version(
                m, versions, category=category, topic=topic, statement=statement,
                confidence=confidence, evidence=evidence, now=now,
            )  # fmt: skip
            result = UpsertResult(
                "replaced", new_id, run_id, replaces=head["id"], message=decision.reason
            )
        else:
            proposal = {
                "category": category,
                "topic": topic,
                "statement": statement,
                "confidence": confidence,
                "evidence": evidence,
            }
            result = _queue_replacement(
                m, head, proposal, decision, inputs, impact, policy, run_id, now
            )
        run.stats = {"status": result.status, "id": result.attitude_id}
    return result


def _queue_replacement(
    m: Mutation,
    head: dict[str, Any],
    stated: dict[str, Any],
    decision: Route,
    inputs: ImpactInputs,
    impact: float,
    policy: ReviewPolicy,
    run_id: str,
    now: dt.datetime,
) -> UpsertResult:
    """A replacement of the current preference ``head`` that the review rules leave to a
    human: queued (``stated``: category, topic, statement, confidence, evidence)."""
    from memvault.review.queue import enqueue_row

    category, statement = stated["category"], stated["statement"]
    item_id = f"attitude:{stable_id('att', category, statement, now)}"
    row = enqueue_row(
        item_id=item_id,
        kind=REVIEW_KIND,
        target_table="attitudes",
        target_id=head["id"],
        proposal={
            "action": "replace",
            **stated,
            "stated_at": iso(now),
            "replaces": head["id"],
            "current": head["statement"],
            "question": "Does this replace the current preference? correct makes "
            "it the new version, wrong keeps the current one.",
        },
        reason=f"a new {category} preference replaces {head['statement']!r}; {decision.reason}",
        confidence=stated["confidence"],
        impact=impact,
        impact_inputs=inputs.model_dump(),
        deadline=now + dt.timedelta(days=policy.deadline_days),
        run_id=run_id,
        now=now,
    )
    m.insert("review_queue", pl.DataFrame([row]), action="queue",
             reason="a replaced preference waits for a human")  # fmt: skip
    return UpsertResult(
        "queued", None, run_id, review_id=item_id, replaces=head["id"],
        message=f"waits for review: memvault review approve {item_id}",
    )  # fmt: skip


def apply_approved(store: Store, m: Mutation, proposal: dict[str, Any]) -> str:
    """Apply an approved replacement against the chain as it is now (the review's applier)."""
    category = check_category(str(proposal["category"]))
    topic = topic_key(proposal.get("topic"), category)
    statement = str(proposal["statement"])
    confidence = float(proposal.get("confidence", DEFAULT_CONFIDENCE))
    evidence = [str(e) for e in proposal.get("evidence") or []]
    stated = proposal.get("stated_at")
    now = to_utc_naive(dt.datetime.fromisoformat(stated)) if stated else utcnow()
    versions = chain(store, category, topic)
    head = _current(versions)
    if head is not None and same_statement(head["statement"], statement):
        reinforce(m, head, confidence, evidence, now)
        return f"the preference already holds: reinforced {head['id']}"
    new_id = write_version(
        m, versions, category=category, topic=topic, statement=statement,
        confidence=confidence, evidence=evidence, now=now,
    )  # fmt: skip
    replaced = f" (replaces {head['id']})" if head else ""
    return f"new {category} preference {new_id}{replaced}"


def decay_attitudes(
    store: Store, now: dt.datetime, run_id: str, settings: DecaySettings | None = None
) -> DecayReport:
    """Write each current preference's confidence decayed to ``now`` (audited, phase
    ``attitudes``). Deterministic in ``now``: a second pass at the same time writes nothing,
    nor does one that would move no confidence by ``MIN_CHANGE`` or more."""
    now = to_utc_naive(now)
    settings = settings or DecaySettings.from_env()
    current = with_decay(_with_topic(attitude_rows(store, current_only=True)), now, settings)
    report = DecayReport()
    if current.is_empty():
        return report
    was_binding = pl.col("confidence") >= settings.binding_threshold
    changed = current.filter(
        ((pl.col("decayed") - pl.col("confidence")).abs() >= MIN_CHANGE)
        | pl.col("stated_confidence").is_null()
    )
    report.binding = int(current["binding"].sum())
    report.not_binding = current.height - report.binding
    report.stopped_binding = changed.filter(was_binding & ~pl.col("binding"))["id"].to_list()
    if changed.height:
        with store.mutation(run_id, PHASE) as m:
            report.decayed = m.update_many(
                "attitudes",
                changed.select(
                    "id",
                    pl.col("decayed").alias("confidence"),
                    pl.col("stated").alias("stated_confidence"),
                    pl.lit(now).alias("decayed_at"),
                ),
                action="decay",
                reason=f"confidence decayed to {now:%Y-%m-%d %H:%M} "
                f"(λ = {settings.decay_per_day:g} per day)",
            )
    return report
