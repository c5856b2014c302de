"""The lint as a track: four layers, cheapest first, then the review queue, and one check.

Every layer of one lint shares its run (a ``runs`` row of kind ``lint``), so a lint
re-executed from a failed layer continues the same lint. The track is used as a context that
holds the run (:func:`~memvault.store.tracked.tracked_run`): begun or continued on entry,
finished when the block ends, whichever of the layers it ran, and failed with the error when
a layer raises (a lint of only some layers, or a track made and never entered, leaves no open
run row).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Self

from memvault.dream.report import stage_figures
from memvault.embed import Embedder
from memvault.judge.base import Judge
from memvault.lint.confirm import unconfirmed_changes
from memvault.lint.run import (
    LINT_KIND,
    ScopeSettings,
    lint_since,
    run_confirm,
    run_grounding,
    run_semantic,
    run_structure,
    tend_queue,
)
from memvault.review.calibration import calibrate
from memvault.review.policy import ReviewPolicy
from memvault.review.queue import summarize_queue
from memvault.stage import Figures, RunRow, Stage, Verdict, judge_figures, tracked_run
from memvault.store import Store

STRUCTURE, GROUNDING, SEMANTIC, CONFIRM, QUEUE = (
    "lint_structure",
    "lint_grounding",
    "lint_semantic",
    "lint_confirm",
    "review_queue",
)


class LintTrack:
    """One lint's layers on one open store; ``judge`` builds a fresh judge for a layer that
    asks one (its figures are that layer's), ``warn`` hears what a person should know."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        *,
        judge: Callable[[], Judge],
        embedder: Callable[[], Embedder],
        policy: Callable[[], ReviewPolicy],
        similarity: float,
        pairs_per_100: int,
        warn: Callable[[str], None] = print,
        scope: ScopeSettings | None = None,
    ) -> None:
        self.store, self.run_id = store, run_id
        self.judge, self.embedder, self.policy, self.warn = judge, embedder, policy, warn
        self.similarity, self.pairs_per_100 = similarity, pairs_per_100
        self.scopes = (scope or ScopeSettings()).scopes(store)
        self.since, params = lint_since(store, run_id)
        self._run: AbstractContextManager[RunRow] = tracked_run(
            store, LINT_KIND, params, run_id=run_id
        )

    def __enter__(self) -> Self:
        self._run.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return self._run.__exit__(kind, error, traceback)

    def stages(self) -> list[Stage]:
        return [
            Stage(STRUCTURE, self._named(self.structure), ("lint_findings",)),
            Stage(GROUNDING, self._named(self.grounding), ("lint_findings", "review_queue")),
            Stage(SEMANTIC, self._named(self.semantic), ("lint_findings",)),
            Stage(CONFIRM, self._named(self.confirm), ("triples", "review_queue")),
            Stage(QUEUE, self._named(self.queue), ("review_queue",)),
        ]

    def checks(self) -> dict[str, Callable[[], Verdict]]:
        """The check after the confirmation layer, by name."""
        return {"judged_changes_confirmed": self.confirmed}

    def _named(self, layer: Callable[[], dict[str, Any]]) -> Callable[[], Figures]:
        """A layer whose figures come after the lint's run id."""
        return lambda: Figures({"lint_run_id": self.run_id, **layer()})

    def structure(self) -> dict[str, Any]:
        report = run_structure(self.store, self.run_id, scopes=self.scopes)
        since: Any = self.since or "the first lint: every fact"
        scope = _scope_shown(self.store, self.run_id, "L1")
        return {"new_facts_since": since, **scope, **report.metadata()}

    def grounding(self) -> dict[str, Any]:
        report, intake = run_grounding(self.store, self.run_id, self.policy(), scopes=self.scopes)
        return {
            **_scope_shown(self.store, self.run_id, "L2"),
            **report.metadata(),
            "archive_proposals": report.proposed,
            "archived_by_rules": intake.applied,
            "archive_queued": intake.queued,
        }

    def semantic(self) -> dict[str, Any]:
        judge = self.judge()
        result = run_semantic(
            self.store,
            judge,
            self.embedder(),
            self.run_id,
            self.since,
            threshold=self.similarity,
            pairs_per_100=self.pairs_per_100,
        )
        for note in result.report.notes:
            self.warn(note)
        return {**result.metadata(), **result.report.metadata(), **judge_figures(judge)}

    def confirm(self) -> dict[str, Any]:
        judge = self.judge()
        report, applied = run_confirm(self.store, judge, self.run_id, self.policy())
        for note in report.notes:
            self.warn(f"second judgment failed, queued for review: {note}")
        return {
            "proposed": report.proposed,
            "auto_applied": report.auto_applied,
            "queued_for_review": report.queued,
            **report.refused,
            "second_judgment": "escalation model" if judge.can_escalate else "confirm prompt",
            **judge_figures(judge),
            "actions": [{"action": a, "count": n} for a, n in applied.items()],
        }

    def queue(self) -> dict[str, Any]:
        policy = self.policy()
        tending = tend_queue(self.store, self.run_id, policy)
        figures = {
            **summarize_queue(self.store).metadata(),
            **tending.metadata(),
            **calibrate(self.store, policy).metadata(policy),
        }
        if tending.expired:
            self.warn(
                f"{len(tending.expired)} review items passed their deadline: not applied, still "
                "waiting (`memvault review list`)"
            )
        return figures

    def confirmed(self) -> Verdict:
        """Nothing changed on one judgment."""
        offending = unconfirmed_changes(self.store)
        return Verdict(
            offending.is_empty(),
            {"unconfirmed_changes": offending.height, "sample": offending.head(20).to_dicts()},
        )


def _scope_shown(store: Store, run_id: str, layer: str) -> dict[str, Any]:
    """What a layer read, as its run recorded it: the whole store, or what changed (how many
    facts, entities and references) and why."""
    scope = stage_figures(store, run_id).get(layer, {}).get("scope", {})
    whole = scope.get("scope") == "full"
    shown = {
        "scope": "every row" if whole else "rows changed since the last lint",
        "scope_reason": scope.get("reason", ""),
    }
    for key in ("facts", "entities", "references"):
        if key in scope:
            shown[f"{key}_rechecked"] = scope[key]
    return shown
