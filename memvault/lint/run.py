"""One lint run: the four layers in order, their findings kept, their figures on the run.

A lint run is a ``runs`` row of kind ``lint``; each layer records its figures on it (so
a run re-executed from a failed layer keeps what the earlier layers found). The semantic
layer looks only at facts learned since the start of the last successful lint; the structure
and grounding layers, after a first lint, at the rows changed since the last lint that ran
them, with a whole-store pass once a week or on demand (:mod:`memvault.lint.scope`).
:func:`lint_store` runs everything in one call (tests, scripts); the Dagster assets call
the layers one by one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memvault.dream.report import record_stage
from memvault.embed import Embedder
from memvault.judge.base import Judge
from memvault.lint import grounding_layer, semantic, structure
from memvault.lint.confirm import lint_confirm
from memvault.lint.findings import LintReport, record_findings
from memvault.lint.scope import LintScopes
from memvault.lint.semantic import Proposal, SemanticResult
from memvault.normalize import utcnow
from memvault.review.calibration import calibrate
from memvault.review.intake import Intake, propose_archives, queue_low_confidence
from memvault.review.policy import ReviewPolicy
from memvault.review.queue import expire_overdue
from memvault.store import Store
from memvault.store.queries.lint import open_contradictions, resolve_findings
from memvault.store.queries.runs import last_run_with_stage
from memvault.store.queries.triples import active_triple_ids
from memvault.store.tracked import begun_run, tracked_run
from memvault.temporal.conflict.judge import ConflictReply
from memvault.temporal.grounding import Grounding

LINT_KIND = "lint"


def begin_lint(store: Store, run_id: str) -> dt.datetime | None:
    """Begin (or, re-executed, continue) a lint run that the layers carry on and finish;
    returns the start of the last successful lint that ran the semantic layer (None for the
    first), from which that layer reads new facts (a lint of only some layers leaves the mark
    where it was)."""
    since, params = lint_since(store, run_id)
    with begun_run(store, LINT_KIND, params, run_id=run_id):
        return since


def lint_since(store: Store, run_id: str) -> tuple[dt.datetime | None, dict[str, Any] | None]:
    """Where the semantic layer of lint ``run_id`` starts reading, and the params a new run is
    begun with (None when the run exists: a continued run keeps its own)."""
    existing = store.run(run_id)
    if existing is not None:
        since = existing["params"].get("since")
        return (dt.datetime.fromisoformat(since) if since else None), None
    last = last_run_with_stage(store, LINT_KIND, "L3")
    started = last["started_at"] if last else None
    return started, {"since": started.isoformat() if started else None}


@dataclass(frozen=True)
class ScopeSettings:
    """When the structure and grounding layers read the whole store: on demand (``full``), and
    when no lint did in ``full_every_days`` days (0: every lint)."""

    full: bool = False
    full_every_days: float = 7.0

    def scopes(self, store: Store) -> LintScopes:
        """The scopes of one lint on ``store``."""
        return LintScopes(store, full=self.full, full_every_days=self.full_every_days)


def _keep(store: Store, run_id: str, report: LintReport, rules: tuple[str, ...]) -> None:
    report.new, report.resolved = record_findings(
        store, report.layer, report.findings, run_id, rules=rules, checked=report.checked
    )


def _figures(report: LintReport, **extra: Any) -> dict[str, Any]:
    return {
        "findings": len(report.findings),
        "new": report.new,
        "resolved": report.resolved,
        "by_rule": report.by_rule(),
        **extra,
    }


def run_structure(
    store: Store,
    run_id: str,
    grounding: Grounding | None = None,
    scopes: LintScopes | None = None,
) -> LintReport:
    """L1 on the rows changed since the last lint that ran it, or on every row."""
    scope = (scopes or LintScopes(store)).of("L1")
    report = structure.lint_structure(store, grounding, changed=scope.changed)
    _keep(store, run_id, report, structure.RULES)
    record_stage(store, run_id, "L1", _figures(report, scope=scope.figures()))
    return report


def run_grounding(
    store: Store,
    run_id: str,
    policy: ReviewPolicy,
    grounding: Grounding | None = None,
    scopes: LintScopes | None = None,
) -> tuple[LintReport, Intake]:
    """L2 (on the rows changed since the last lint that ran it, or on every row), and the
    archive proposals for entities left with only retired facts."""
    scope = (scopes or LintScopes(store)).of("L2")
    report = grounding_layer.lint_grounding(store, grounding, changed=scope.changed)
    _keep(store, run_id, report, grounding_layer.RULES)
    stale = [(f.subject, str(f.evidence["name"])) for f in report.findings
             if f.rule == "stale_entity" and f.subject]  # fmt: skip
    intake = propose_archives(store, stale, run_id, policy, calibrate(store, policy))
    report.proposed, report.auto_applied, report.queued = len(stale), intake.applied, intake.queued
    record_stage(
        store,
        run_id,
        "L2",
        _figures(report, archived=intake.applied, queued=intake.queued, scope=scope.figures()),
    )
    return report, intake


def settle_contradictions(store: Store) -> int:
    """Resolve open contradictions one of whose facts is no longer current."""
    rows = open_contradictions(store)
    if not rows:
        return 0
    pairs = {fid: _pair(evidence) for fid, evidence in rows}
    ids = sorted({t for pair in pairs.values() for t in pair})
    active = active_triple_ids(store, ids)
    settled = sorted(fid for fid, pair in pairs.items() if not set(pair) <= active)
    if settled:
        resolve_findings(store, settled, utcnow())
    return len(settled)


def _pair(evidence: str) -> tuple[str, str]:
    data = json.loads(evidence)
    return data["a"]["triple_id"], data["b"]["triple_id"]


def run_semantic(
    store: Store,
    judge: Judge,
    embedder: Embedder,
    run_id: str,
    since: dt.datetime | None,
    grounding: Grounding | None = None,
    *,
    threshold: float = 0.6,
    pairs_per_100: int = semantic.PAIRS_PER_100,
) -> SemanticResult:
    """L3 on the facts learned since ``since``. A contradiction stays open until one of its
    two facts is retired (the layer looks only at new facts, so not seeing a pair again
    does not mean it is gone)."""
    result = semantic.lint_semantic(
        store, judge, embedder, since, grounding, threshold=threshold, pairs_per_100=pairs_per_100
    )
    _keep(store, run_id, result.report, ())
    result.report.resolved = settle_contradictions(store)
    record_stage(
        store,
        run_id,
        "L3",
        _figures(
            result.report,
            new_triples=result.new_triples,
            candidates=result.candidates,
            asked=result.asked,
            proposals=len(result.proposals),
            rules_only=result.rules_only,
        ),
    )
    return result


def proposals_of_run(store: Store, run_id: str) -> list[Proposal]:
    """The changes this run's L3 findings propose (what L4 re-checks)."""
    proposals = []
    for _, evidence in open_contradictions(store, run_id):
        data = json.loads(evidence)
        if data.get("resolution") not in ("SUPERSEDE", "MERGE"):
            continue
        proposals.append(
            Proposal(
                data["a"]["triple_id"],
                data["b"]["triple_id"],
                ConflictReply(
                    verdict=data["resolution"],
                    confidence=data["confidence"],
                    reason=data["reason"],
                    newer=data.get("newer"),
                ),
            )
        )
    return proposals


def run_confirm(
    store: Store, judge: Judge, run_id: str, policy: ReviewPolicy
) -> tuple[LintReport, Counter[str]]:
    report, applied = lint_confirm(store, judge, proposals_of_run(store, run_id), run_id,
                                   policy=policy)  # fmt: skip
    report.resolved = settle_contradictions(store)  # a committed resolution settles its finding
    record_stage(
        store,
        run_id,
        "L4",
        {
            "proposed": report.proposed,
            "auto_applied": report.auto_applied,
            "queued": report.queued,
            "settled": report.resolved,
            **report.refused,
            "actions": dict(applied),
        },
    )
    return report, applied


@dataclass
class QueueTending:
    """What the review queue step did: deadlines passed, low-confidence memories queued."""

    expired: list[str] = field(default_factory=list)
    low_confidence: Intake = field(default_factory=Intake)

    def metadata(self) -> dict[str, int]:
        return {
            "expired_this_run": len(self.expired),
            "low_confidence_queued": self.low_confidence.queued,
        }


def tend_queue(
    store: Store, run_id: str, policy: ReviewPolicy, *, low_confidence_limit: int = 200
) -> QueueTending:
    """Expire overdue items (nothing committed) and queue low-confidence memories."""
    tending = QueueTending(
        expired=expire_overdue(store, run_id),
        low_confidence=queue_low_confidence(store, run_id, policy, limit=low_confidence_limit),
    )
    record_stage(
        store,
        run_id,
        "review_queue",
        {"expired": len(tending.expired), "low_confidence": tending.low_confidence.queued},
    )
    return tending


@dataclass
class LintRun:
    run_id: str
    reports: dict[str, LintReport]
    semantic: SemanticResult
    applied: Counter[str]
    queue: QueueTending


def lint_store(
    store: Store,
    judge: Judge,
    embedder: Embedder,
    *,
    policy: ReviewPolicy | None = None,
    run_id: str | None = None,
    settings: ScopeSettings | None = None,
) -> LintRun:
    """The whole lint in one call: L1, L2, L3, L4, then the review queue's deadlines and
    low-confidence memories; the run is marked succeeded. ``settings``: when L1 and L2 read
    the whole store rather than what changed."""
    policy = policy or ReviewPolicy()
    run_id = run_id or f"lint-{utcnow():%Y%m%dT%H%M%S%f}"
    since, params = lint_since(store, run_id)
    with tracked_run(store, LINT_KIND, params, run_id=run_id) as run:
        grounding = Grounding.load()
        scopes = (settings or ScopeSettings()).scopes(store)
        l1 = run_structure(store, run_id, grounding, scopes)
        l2, _ = run_grounding(store, run_id, policy, grounding, scopes)
        l3 = run_semantic(store, judge, embedder, run_id, since, grounding)
        l4, applied = run_confirm(store, judge, run_id, policy)
        queue = tend_queue(store, run_id, policy)
        run.stats = {"layers": ["L1", "L2", "L3", "L4"]}
    return LintRun(run_id, {"L1": l1, "L2": l2, "L3": l3.report, "L4": l4}, l3, applied, queue)
