"""The door to temporal conflict resolution (design.md T1–T6): planned first, applied second.

:func:`plan_conflicts` reads the store and decides; it writes nothing, so the
dream can log a dry run (D7) and the idempotency check can re-plan after an
apply and expect an empty plan. :func:`apply_conflict_plan`
(:mod:`~memvault.temporal.conflict.apply`) writes the decisions in audited batches.

Cheap first, expensive last; each step has its module in this package:

* :mod:`~memvault.temporal.conflict.model`: the settings, an action, a plan.
* :mod:`~memvault.temporal.conflict.candidates`: the triples read and the pairs only a
  judge can settle: different objects stated for the same ``valid_at`` or without one,
  a change of a stable functional predicate, and two wordings of a multi-valued
  predicate that look like the same thing. Two clearly different objects of a
  multi-valued predicate are not a conflict at all.
* :mod:`~memvault.temporal.conflict.rules`: what rules settle without a model
  (restatements, the one-value-at-a-time timeline, preference versions).
* :mod:`~memvault.temporal.conflict.judge`: the judge's task (two statements, a verdict)
  and what a merge may join (the offline heuristic).
* :mod:`~memvault.temporal.conflict.routing`: the judge, escalation to the stronger
  model, the second judgment and the review rules' consent.
* :mod:`~memvault.temporal.conflict.verdicts`: the check every verdict passes before it
  may touch the store, and the action it decides.
* :mod:`~memvault.temporal.conflict.review`: what stays unsure goes to the review queue
  and nothing changes (T3). Every judged pair gets a ``conflict_verdicts`` row and is
  never asked again.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from memvault.normalize import utcnow
from memvault.review.calibration import calibrate
from memvault.review.policy import ReviewPolicy
from memvault.store import Store
from memvault.temporal.conflict.candidates import (
    CandidateState,
    candidate_rows,
    judge_protected,
    known_verdicts,
    load_attitudes,
)
from memvault.temporal.conflict.model import ConflictAction, ConflictConfig, ConflictPlan
from memvault.temporal.conflict.routing import judge_pairs
from memvault.temporal.conflict.rules import rule_actions
from memvault.temporal.grounding import Grounding
from memvault.temporal.timeline import GROUP

if TYPE_CHECKING:
    from memvault.judge.base import Judge


#: Rounds of judging per plan: a verdict can uncover a pair (a restatement of what it retired).
_MAX_ROUNDS = 3


def plan_conflicts(
    store: Store,
    judge: Judge,
    *,
    grounding: Grounding | None = None,
    config: ConflictConfig | None = None,
    dry_run: bool = False,
    now: dt.datetime | None = None,
    policy: ReviewPolicy | None = None,
    triple_ids: Sequence[str] | None = None,
) -> ConflictPlan:
    """Decide every conflict the store holds now; writes nothing.

    ``triple_ids``: only the conflicts of those facts' (subject, predicate) groups (the dream's
    idempotency check on an incremental night: the groups that changed since its last check).

    ``now`` is the store time the plan stamps on retired rows (default: the
    current UTC time); tests pass a fixed one to compare runs.
    """
    grounding = grounding or Grounding.load()
    config = config or ConflictConfig()
    policy = policy or ReviewPolicy()
    now = now or utcnow()
    stats: Counter[str] = Counter()
    before = judge.stats.as_dict()
    rows = candidate_rows(store, grounding, triple_ids)
    stats["candidate_triples"] = rows.height
    stats["groups"] = rows.select(GROUP).n_unique() if rows.height else 0

    failures: list[str] = []

    def finish(actions: list[ConflictAction], pending: list[str]) -> ConflictPlan:
        after = judge.stats.as_dict()
        return ConflictPlan(
            judge_failures=failures,
            actions=actions,
            stats=stats,
            judge_kind=judge.kind,
            judge_stats={k: after[k] - before.get(k, 0) for k in after},
            now=now,
            config=config,
            dry_run=dry_run,
            pending_pairs=pending,
        )

    if rows.is_empty():
        return finish([], [])
    verdicts = known_verdicts(store)
    known = set(verdicts["id"].to_list())
    calibration = calibrate(store, policy)
    protected = judge_protected(rows, verdicts)
    attitudes = load_attitudes(store) if rows["preference"].any() else pl.DataFrame()
    judged: list[ConflictAction] = []
    judged_into: dict[str, str] = {}
    asked: set[str] = set()
    for round_ in range(_MAX_ROUNDS + 1):
        # Rules see the store as the judged verdicts will leave it, so re-planning after
        # the apply finds the same timeline (and nothing to do).
        state = CandidateState.of(rows, attitudes, protected, judged_into, config)
        fresh = state.pairs.filter(~pl.col("pair_id").is_in(sorted(known | asked)))
        budget = config.max_judged_pairs - len(asked)
        if fresh.is_empty() or budget <= 0 or round_ == _MAX_ROUNDS:
            break
        batch = fresh.head(budget)
        asked |= set(batch["pair_id"].to_list())
        verdicts_now = judge_pairs(
            store, judge, batch, rows, grounding, config, now, stats, failures, policy, calibration
        )
        judged += verdicts_now
        judged_into |= {
            a.target_id: a.other_id for a in verdicts_now if a.kind == "merge" and a.other_id
        }
        protected |= {a.target_id for a in verdicts_now if a.kind == "supersede"}
    pending = fresh["pair_id"].to_list()
    stats["deferred"] = len(pending)
    stats["skipped_known"] = state.pairs.filter(pl.col("pair_id").is_in(sorted(known))).height
    by_rules = rule_actions(
        rows, state.timeline, state.undated_merges, state.multi_merges, state.links, protected,
        judged_into,
    )  # fmt: skip
    stats["by_rule"] = len(by_rules)
    stats["candidates"] = len(by_rules) + len(asked) + stats["skipped_known"] + stats["deferred"]
    return finish([*judged, *by_rules], pending)
