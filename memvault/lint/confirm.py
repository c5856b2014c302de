"""L4 confirmation: flag → re-check → commit.

A change a lint layer would make (L3: one fact supersedes or restates a
contradicting one) is flagged with its first judgment, re-checked by a second,
independent judgment (the escalation model when one is configured, else the
``confirm_change`` prompt, worded differently, so never a cache hit on the first
answer), and committed only when both agree and the review rules allow it. Before any
of that, the proposal is checked against the data and the predicate's definition
(:func:`memvault.temporal.conflict.verdicts.verdict_problem`): a merge of two different values,
or a supersede on a predicate that holds several values without a strictly later
``valid_at``, is refused, counted and queued, whatever the judges say. The
dream's judged conflicts take the same path (``memvault.temporal.conflict.routing``);
anything else waits in the review queue with both judgments.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence

import polars as pl

from memvault.judge.base import Judge
from memvault.lint.findings import LintReport
from memvault.lint.semantic import Proposal
from memvault.normalize import utcnow
from memvault.review.calibration import calibrate
from memvault.review.policy import ReviewPolicy
from memvault.store import Store
from memvault.store.queries.verdicts import unconfirmed_applied_verdicts
from memvault.temporal.conflict.apply import apply_conflict_plan
from memvault.temporal.conflict.candidates import flagged_rows
from memvault.temporal.conflict.model import ConflictConfig, ConflictPlan
from memvault.temporal.conflict.routing import Decisions, confirm_and_route, pair_requests
from memvault.temporal.conflict.verdicts import count_refusal, verdict_problem
from memvault.temporal.grounding import Grounding

#: What the data check refused of the proposals (a refused merge or one the predicate's
#: definition forbids also counts as an invalid verdict).
REFUSALS = ("invalid_verdicts", "refused_merges", "refused_by_definitions")


def lint_confirm(
    store: Store,
    judge: Judge,
    proposals: Sequence[Proposal],
    run_id: str,
    *,
    policy: ReviewPolicy | None = None,
    config: ConflictConfig | None = None,
    now: dt.datetime | None = None,
    dry_run: bool = False,
) -> tuple[LintReport, Counter[str]]:
    """Re-check the proposed changes and commit or queue each; returns the report and the
    actions applied (by kind)."""
    report = LintReport("L4")
    stats: Counter[str] = Counter()
    if not proposals:
        return report, stats
    policy = policy or ReviewPolicy()
    config = config or ConflictConfig()
    now = now or utcnow()
    grounding = Grounding.load()
    pairs = pl.DataFrame(
        {
            "a": [p.triple_a for p in proposals],
            "b": [p.triple_b for p in proposals],
            "why": ["the knowledge lint found these two facts contradicting"] * len(proposals),
        }
    )
    rows = flagged_rows(store, [*pairs["a"], *pairs["b"]], grounding)
    requests, meta = pair_requests(store, pairs, rows, grounding, config)
    confident = []
    decisions = Decisions(requests, meta, config, now, stats, [])
    for i, proposal in enumerate(proposals):
        problem, newer = verdict_problem(proposal.reply, requests[i])
        if problem is not None:
            count_refusal(stats, problem)
            decisions.review(i, [("lint", proposal.reply)], str(problem))
        else:
            confident.append((i, [("lint", proposal.reply)], newer))
    confirm_and_route(judge, decisions, confident, policy, calibrate(store, policy))
    report.notes += decisions.failures
    plan = ConflictPlan(
        actions=decisions.actions(),
        stats=stats,
        judge_kind=judge.kind,
        judge_stats={},
        now=now,
        config=config,
        dry_run=dry_run,
    )
    applied = apply_conflict_plan(store, plan, run_id, phase="lint_confirm")
    report.proposed = len(proposals)
    report.auto_applied = int(stats["auto_approved"])
    report.queued = int(applied.get("review", 0))  # unsure, disagreed or invalid: all wait
    report.refused = {k: int(stats[k]) for k in REFUSALS}
    return report, applied


def unconfirmed_changes(store: Store) -> pl.DataFrame:
    """Judged merges and supersessions applied on one judgment alone (neither a rule's, a
    human's, nor confirmed by a second judgment): there must be none."""
    return unconfirmed_applied_verdicts(store)
