"""The dream's guarantees on the consolidated store, as plain verdicts.

Five checks follow consolidation; each returns a :class:`~memvault.stage.Verdict` with the
offending rows as its figures (passing or not, so an evaluation is always shown). The
blocking ones stop the dream when they fail with ``error`` severity: it lost a fact, left two
one-at-a-time facts overlapping, would act again, or learned a fact that breaks its
predicate's definition. After a dry run nothing was applied, so a failure there is a warning
about the store, not the run's fault. Whoever runs the dream (the Dagster wiring) shows the
verdicts and ends a dream that a blocking check stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from memvault.dream.check_scope import STAGE as SCOPE_STAGE
from memvault.dream.check_scope import CheckScope, check_scope
from memvault.dream.orient import last_dream, new_ids_since
from memvault.dream.report import record_stage
from memvault.judge.base import Judge
from memvault.lint.findings import open_findings
from memvault.review.policy import ReviewPolicy
from memvault.stage import Verdict
from memvault.store import Store
from memvault.temporal import (
    ConflictConfig,
    Grounding,
    bitemporal_overlaps,
    data_loss_violations,
    grounding_violations,
    plan_conflicts,
)

#: Each check by name: whether its failure blocks the dream, and what it guarantees.
CHECKS: dict[str, tuple[bool, str]] = {
    "no_data_loss": (
        True,
        "No data loss: every fact ever stored is still active, superseded with the date it "
        "stopped holding, or merged into a surviving fact that carries its content.",
    ),
    "bitemporal_consistency": (
        True,
        "Bi-temporal consistency: for a predicate with one value at a time, no two current facts "
        "about the same subject overlap in the time they held (pairs waiting for a human's "
        "decision excepted).",
    ),
    "idempotency": (
        True,
        "Idempotency: planning again right after applying finds nothing to do and asks the "
        "judge nothing.",
    ),
    "grounding": (
        True,
        "Every active fact conforms to its predicate's definition (subject and object types, "
        "allowed values); a predicate without a definition is reported, never guessed. A fact "
        "learned since the last dream that does not conform stops the dream; older ones are "
        "reported as a warning (the lint's grounding layer proposes what to do with them).",
    ),
    "triples_expectations": (
        False,
        "Great Expectations suite on the facts table: ids unique, required columns set, known "
        "statuses, confidence between 0 and 1, retired facts dated, no fact ending before it "
        "began.",
    ),
}


def blocked_by(verdicts: Mapping[str, Verdict]) -> list[str]:
    """The checks whose verdict stops the dream: blocking ones that failed as errors."""
    return sorted(
        name
        for name, verdict in verdicts.items()
        if CHECKS.get(name, (False, ""))[0] and not verdict.passed and verdict.severity == "error"
    )


def _offending(offending: pl.DataFrame, *, warn_only: bool = False, **figures: Any) -> Verdict:
    """Offending rows → a verdict; a failure that is ``warn_only`` does not block (after a
    dry run the store is as it was before the dream: a warning about it, not this run's
    fault)."""
    return Verdict(
        offending.is_empty(),
        {"violations": offending.height, "sample": offending.head(20).to_dicts(), **figures},
        severity="warn" if warn_only else "error",
    )


def _ids(scope: CheckScope | None) -> list[str] | None:
    return None if scope is None else scope.triple_ids


def _scoped(scope: CheckScope | None) -> dict[str, Any]:
    return {} if scope is None else scope.metadata()


def grounding(store: Store, scope: CheckScope | None = None) -> Verdict:
    """The lint's grounding rule on the consolidated store (or the facts in ``scope``), beside
    what the last ``lint_grounding`` left open (its stable-but-changing predicates, its archive
    proposals)."""
    offending = grounding_violations(store, Grounding.load(), _ids(scope))
    by_problem = dict(offending.group_by("problem").len().iter_rows()) if offending.height else {}
    new = offending.filter(
        pl.col("triple_id").is_in(list(new_ids_since(store, "triples", last_dream(store)[1])))
    )
    return _offending(
        offending,
        # Only a new ungrounded fact blocks the dream: an old one is the lint's to settle.
        warn_only=new.is_empty(),
        new_violations=new.height,
        new_sample=new.head(20).to_dicts(),
        by_problem=[{"problem": p, "facts": n} for p, n in by_problem.items()],
        last_lint=[{"rule": r, "open findings": n} for r, n in open_findings(store, "L2").items()],
        **_scoped(scope),
    )


def no_data_loss(store: Store, dry_run: bool = False, scope: CheckScope | None = None) -> Verdict:
    return _offending(data_loss_violations(store, _ids(scope)), warn_only=dry_run, **_scoped(scope))


def bitemporal_consistency(
    store: Store, dry_run: bool = False, scope: CheckScope | None = None
) -> Verdict:
    return _offending(
        bitemporal_overlaps(store, Grounding.load(), _ids(scope)),
        warn_only=dry_run,
        **_scoped(scope),
    )


def idempotency(
    store: Store,
    judge: Judge,
    config: ConflictConfig,
    dry_run: bool = False,
    policy: ReviewPolicy | None = None,
    scope: CheckScope | None = None,
) -> Verdict:
    """Planning again finds nothing to do and asks the judge nothing (skipped after a dry
    run: nothing was applied)."""
    if dry_run:
        return Verdict(True, {"skipped": "dry run: nothing applied"})
    before = judge.stats.as_dict()
    plan = plan_conflicts(store, judge, config=config, policy=policy, triple_ids=_ids(scope))
    asked = {k: v - before[k] for k, v in judge.stats.as_dict().items()}
    questions = asked["calls"] + asked["heuristic_answers"] + asked["cache_hits"]
    return Verdict(
        plan.is_empty() and questions == 0,
        {
            "planned_again": sum(plan.counts().values()),
            "judge_questions": questions,
            "llm_calls": asked["calls"],
            "sample": [{"decision": a.describe()} for a in plan.actions[:20]],
            **_scoped(scope),
        },
    )


def triples_expectations(store: Store, scope: CheckScope | None = None) -> Verdict:
    """The facts table's suite, on every row or (``scope``) on the facts that changed."""
    from memvault.quality import validate_triples

    verdict = validate_triples(store, _ids(scope)).verdict("every row")
    return Verdict(verdict.passed, {**verdict.figures, **_scoped(scope)})


@dataclass
class DreamChecks:
    """The checks of one dream on its store: what they read (an incremental night the facts
    changed since the last dream's checks; the first dream, a requested one and one a week
    every fact) and what follows their verdicts."""

    store: Store
    run_id: str
    judge: Judge
    config: ConflictConfig
    policy: ReviewPolicy | None
    dry_run: bool
    scope: CheckScope

    @classmethod
    def scoped(
        cls,
        store: Store,
        run_id: str,
        judge: Judge,
        config: ConflictConfig,
        policy: ReviewPolicy | None,
        *,
        dry_run: bool,
        full: bool,
        full_every_days: float,
    ) -> DreamChecks:
        scope = check_scope(store, run_id, full=full, full_every_days=full_every_days)
        return cls(store, run_id, judge, config, policy, dry_run, scope)

    def describe(self) -> str:
        return f"checks' scope: {self.scope.reason} ({self.scope.figures()['triples']} facts)"

    def checks(self) -> dict[str, Callable[[], Verdict]]:
        """Each check by name, in :data:`CHECKS`' order."""
        store, scope, dry = self.store, self.scope, self.dry_run
        return {
            "no_data_loss": lambda: no_data_loss(store, dry, scope),
            "bitemporal_consistency": lambda: bitemporal_consistency(store, dry, scope),
            "idempotency": lambda: idempotency(
                store, self.judge, self.config, dry, self.policy, scope
            ),
            "grounding": lambda: grounding(store, scope),
            "triples_expectations": lambda: triples_expectations(store, scope),
        }

    def settle(self, verdicts: Mapping[str, Verdict]) -> list[str]:
        """The checks that stop the dream; when none does and every check ran on a real
        dream, the next dream's checks start where these read up to."""
        blocked = blocked_by(verdicts)
        if not blocked and not self.dry_run and set(verdicts) == set(CHECKS):
            record_stage(self.store, self.run_id, SCOPE_STAGE, self.scope.figures())
        return blocked
