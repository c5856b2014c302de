"""Judge routing: which model is asked about a pair, and where its answer goes.

Cheap first, expensive last (T3). Each pair the rules cannot settle is put to the judge
(:func:`pair_requests`, :func:`judge_pairs`); a verdict below the confidence threshold is
asked again of the stronger model, and one still unsure goes to review. A confident
change of the store is applied only when a second, independent judgment agrees and the
review rules consent (:func:`confirm_and_route`); otherwise it is queued for review
(:mod:`~memvault.temporal.conflict.review`). Keeping both statements (COEXIST) changes
nothing and needs neither.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from memvault.errors import JudgeError
from memvault.judge.base import ask_each
from memvault.review.calibration import Calibration
from memvault.review.impact import ImpactInputs, impact_score, subject_inputs
from memvault.review.policy import ReviewPolicy, route
from memvault.store import Store
from memvault.temporal.conflict.candidates import judged_statements, subject_names
from memvault.temporal.conflict.judge import (
    CONFIRM_CHANGE,
    RESOLVE_CONFLICT,
    ConfirmChangeRequest,
    ConfirmReply,
    ConflictReply,
    ProposedChange,
    ResolveConflictRequest,
)
from memvault.temporal.conflict.model import ConflictAction, ConflictConfig, JudgedPair
from memvault.temporal.conflict.review import failed_action, review_action
from memvault.temporal.conflict.verdicts import (
    count_refusal,
    definition_dict,
    judged_action,
    retires_for_no_time,
    verdict_problem,
)
from memvault.temporal.grounding import Grounding
from memvault.temporal.timeline import GROUP, pair_id

if TYPE_CHECKING:
    from memvault.judge.base import Judge


def _ask(
    judge: Judge, requests: list[ResolveConflictRequest], batch: int, *, escalate: bool
) -> list[ConflictReply | JudgeError]:
    replies: list[ConflictReply | JudgeError] = []
    for start in range(0, len(requests), batch):
        chunk = requests[start : start + batch]
        replies += ask_each(judge, RESOLVE_CONFLICT, chunk, escalate=escalate)
    return replies


def _ask_confirm(
    judge: Judge, requests: list[ConfirmChangeRequest], batch: int, *, escalate: bool
) -> list[ConfirmReply | JudgeError]:
    replies: list[ConfirmReply | JudgeError] = []
    for start in range(0, len(requests), batch):
        chunk = requests[start : start + batch]
        replies += ask_each(judge, CONFIRM_CHANGE, chunk, escalate=escalate)
    return replies


def _confirm_request(
    request: ResolveConflictRequest, reply: ConflictReply, newer: str | None
) -> ConfirmChangeRequest:
    return ConfirmChangeRequest(
        subject=request.subject,
        subject_type=request.subject_type,
        predicate=request.predicate,
        a=request.a,
        b=request.b,
        proposed=ProposedChange(
            verdict=reply.verdict,  # only MERGE and SUPERSEDE reach here
            newer=newer,
            reason=reply.reason,
        ),
    )


def pair_requests(
    store: Store,
    pairs: pl.DataFrame,
    rows: pl.DataFrame,
    grounding: Grounding,
    config: ConflictConfig,
) -> tuple[list[ResolveConflictRequest], list[JudgedPair]]:
    """What the judge is shown for each pair (``a``, ``b``, ``why``), and what the plan keeps
    about it (its impact among others). ``rows`` are :data:`ROW_SCHEMA` rows with the flags
    ``functional`` and ``preference`` (see :func:`flagged_rows`)."""
    ids = sorted(set(pairs["a"].to_list()) | set(pairs["b"].to_list()))
    statements = judged_statements(store, rows, ids, config.max_source_chars)
    info = rows.filter(pl.col("id").is_in(ids)).select("id", *GROUP, "functional", "preference")
    by_id = {r["id"]: r for r in info.iter_rows(named=True)}
    subjects = subject_names(store, sorted({r["subject_id"] for r in by_id.values()}))
    requests: list[ResolveConflictRequest] = []
    meta: list[JudgedPair] = []
    subject_facts: dict[str, tuple[float, int]] = {}
    for a, b, why in pairs.select("a", "b", "why").iter_rows():
        row = by_id[a]
        predicate = definition_dict(grounding.get(row["predicate"]), row["predicate"])
        name, kind = subjects.get(row["subject_id"], (row["subject_id"], None))
        requests.append(
            ResolveConflictRequest(
                subject=name,
                subject_type=kind,
                predicate=predicate,
                why_asked=why,
                a=statements[a],
                b=statements[b],
            )
        )
        if row["subject_id"] not in subject_facts:
            subject_facts[row["subject_id"]] = subject_inputs(store, row["subject_id"])
        centrality, dependents = subject_facts[row["subject_id"]]
        inputs = ImpactInputs(
            centrality=centrality,
            dependents=dependents,
            layer=bool(row["preference"]),
            retires_current=any(
                statements[t].status == "active" and statements[t].invalid_at is None
                for t in (a, b)
            ),
        )
        meta.append(
            JudgedPair(
                pair_id=pair_id(a, b),
                subject_id=row["subject_id"],
                predicate=row["predicate"],
                preference=bool(row["preference"]),
                impact=impact_score(inputs),
                impact_inputs=inputs.model_dump(),
            )
        )
    return requests, meta


def judge_pairs(
    store: Store,
    judge: Judge,
    pairs: pl.DataFrame,
    rows: pl.DataFrame,
    grounding: Grounding,
    config: ConflictConfig,
    now: dt.datetime,
    stats: Counter[str],
    failures: list[str],
    policy: ReviewPolicy,
    calibration: Calibration,
) -> list[ConflictAction]:
    """Ask the judge about each pair, escalate the unsure ones, queue what stays unsure.

    Every verdict is checked against the data first (:func:`verdict_problem`): one that
    cannot be true goes to review, never to the store; a pair whose judgment failed goes to
    review too, and the other pairs are decided as usual."""
    if pairs.is_empty():
        return []
    requests, meta = pair_requests(store, pairs, rows, grounding, config)
    stats["judged"] += len(requests)
    threshold = config.confidence_threshold
    decisions = Decisions(requests, meta, config, now, stats, failures)
    to_review, failed = decisions.review, decisions.failed
    confident: list[tuple[int, list[tuple[str, ConflictReply]], str | None]] = []
    unsure: list[tuple[int, ConflictReply]] = []
    for i, reply in enumerate(_ask(judge, requests, config.batch_size, escalate=False)):
        if isinstance(reply, JudgeError):
            failed(i, reply)
            continue
        problem, newer = verdict_problem(reply, requests[i])
        if problem is not None:
            count_refusal(stats, problem)
            to_review(i, [(judge.kind, reply)])
        elif reply.confidence >= threshold:
            confident.append((i, [(judge.kind, reply)], newer))
        elif judge.can_escalate:
            unsure.append((i, reply))
        else:  # no stronger model configured: asking again would only repeat the answer
            to_review(i, [(judge.kind, reply)], "not sure, and no escalation model is configured")
    stats["escalated"] += len(unsure)
    again = _ask(judge, [requests[i] for i, _ in unsure], config.batch_size, escalate=True)
    for (i, first), second in zip(unsure, again, strict=True):
        if isinstance(second, JudgeError):
            failed(i, second)
            continue
        problem, newer = verdict_problem(second, requests[i])
        if problem is None and second.confidence >= threshold:
            confident.append((i, [(judge.kind, first), ("escalation", second)], newer))
        else:
            if problem is not None:
                count_refusal(stats, problem)
            to_review(i, [(judge.kind, first), ("escalation", second)])

    confirm_and_route(judge, decisions, confident, policy, calibration)
    return decisions.actions()


@dataclass
class Decisions:
    """The actions decided so far for a list of judged pairs, and the two ways a pair leaves
    the judge's hands without a verdict applied: queued for review, or failed."""

    requests: list[ResolveConflictRequest]
    meta: list[JudgedPair]
    config: ConflictConfig
    now: dt.datetime
    stats: Counter[str]
    failures: list[str]
    decided: dict[int, ConflictAction] = field(default_factory=dict)

    def review(
        self,
        i: int,
        replies: list[tuple[str, ConflictReply]],
        reason: str | None = None,
        second: ConfirmReply | None = None,
    ) -> None:
        self.stats["queued_for_review"] += 1
        self.decided[i] = review_action(self.meta[i], self.requests[i], replies, self.now,
                                        self.config, reason=reason, confirmation=second)  # fmt: skip

    def failed(self, i: int, error: JudgeError) -> None:
        """After the judge's own retries: this pair goes to a human, the others go on."""
        self.stats["judge_failures"] += 1
        self.failures.append(f"{self.meta[i].pair_id}: {error}")
        self.decided[i] = failed_action(self.meta[i], self.requests[i], error, self.now,
                                         self.config)  # fmt: skip

    def actions(self) -> list[ConflictAction]:
        return [self.decided[i] for i in sorted(self.decided)]


def confirm_and_route(
    judge: Judge,
    decisions: Decisions,
    confident: list[tuple[int, list[tuple[str, ConflictReply]], str | None]],
    policy: ReviewPolicy,
    calibration: Calibration,
) -> None:
    """Confident, valid verdicts (index, replies so far, newer) → actions: COEXIST as it is;
    a change only with a second judgment that agrees and the review rules' consent, else it
    is queued for review."""
    requests, meta, stats, decided = (
        decisions.requests, decisions.meta, decisions.stats, decisions.decided
    )  # fmt: skip
    to_review, failed = decisions.review, decisions.failed

    # A change of the store needs a second, independent judgment that agrees, and the review
    # rules' consent; keeping both statements (COEXIST) changes nothing and needs neither.
    changes = [(i, r, n) for i, r, n in confident if r[-1][1].verdict != "COEXIST"]
    for i, replies, newer in confident:
        if replies[-1][1].verdict == "COEXIST":
            decided[i] = judged_action(meta[i], requests[i], replies[-1][1], newer, replies[-1][0])
    # The confirmation goes to the other model when there is one: the escalation model for a
    # first answer, the primary model (its own differently worded prompt) for an escalated one.
    by_model = {
        escalate: [c for c in changes if (c[1][-1][0] != "escalation") == escalate]
        for escalate in (True, False)
    }
    for escalate, group in by_model.items():
        escalate = escalate and judge.can_escalate
        checks = [_confirm_request(requests[i], replies[-1][1], n) for i, replies, n in group]
        seconds = _ask_confirm(judge, checks, decisions.config.batch_size, escalate=escalate)
        for (i, replies, newer), check in zip(group, seconds, strict=True):
            first_by, first = replies[-1]
            if isinstance(check, JudgeError):
                failed(i, check)
                continue
            stats["confirmations"] += 1
            if not check.agree:
                stats["disagreements"] += 1
                to_review(i, replies, f"the second judgment disagrees: {check.reason}", check)
                continue
            if (
                first.verdict == "SUPERSEDE"
                and not judge.can_escalate
                and retires_for_no_time(requests[i], newer)
            ):
                # A tie: the same model confirmed itself; retiring a statement for no time at
                # all is a human's call.
                stats["ties_for_review"] += 1
                to_review(i, replies, "a tie: the supersede would leave the older statement "
                          "valid for no time, and only the same model confirmed it", check)  # fmt: skip
                continue
            kind = f"conflict:{first.verdict.lower()}"
            decision = route(
                policy,
                calibration,
                kind,
                min(first.confidence, check.confidence),
                meta[i].impact,
                batch_size=len(changes),
            )
            if not decision.auto:
                to_review(i, replies, f"both judgments agree, but {decision.reason}", check)
                continue
            stats["auto_approved"] += 1
            decided[i] = judged_action(meta[i], requests[i], first, newer, f"{first_by}, confirmed")
