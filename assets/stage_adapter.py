"""The one adapter between the core's stages (:mod:`memvault.stage`) and Dagster.

A track's stages become the assets of one step: the adapter materializes the selected ones in
their order (a subsettable multi-asset runs only the stages asked for), times each, shows its
report's figures as the UI likes them, and evaluates the checks that follow a stage. A stage
that fails after saving its resume point fails the step with its figures so far. A run of a
track keeps one id across re-execution from failure: :func:`root_run_id`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg

from assets.common import as_metadata, check_result
from memvault.stage import Report, RunRow, Stage, StageFailed, Timer, Verdict, tracked_run
from memvault.store import Store

__all__ = [
    "check_result",
    "evaluate_checks",
    "evaluated",
    "materialize",
    "materialize_stages",
    "root_run_id",
    "step_run",
    "track_run_id",
    "verdict_of",
]

#: A check evaluated in the step of the asset it checks: the core's verdict.
Check = Callable[[], Verdict]

#: What a stage's step or check's step is given.
StepContext = dg.AssetExecutionContext | dg.AssetCheckExecutionContext


def root_run_id(context: StepContext) -> str:
    """The id of the Dagster run this one re-executes (its own id for a first run): every
    re-execution from failure of a run shares it."""
    return context.run.root_run_id or context.run.run_id


def track_run_id(context: StepContext, track: str) -> str:
    """One id per run of ``track`` (``dream``, ``lint``), the same across re-execution."""
    root = root_run_id(context)
    return f"{track}-{root[:8]}-{root[9:13]}"


@contextmanager
def step_run(
    context: StepContext, store: Store, kind: str, *, run_id: str | None = None, **params: Any
) -> Iterator[RunRow]:
    """The store's ``runs`` row of this step (:func:`memvault.stage.tracked_run`), naming
    the Dagster run: finished when the step ends, failed when it raises."""
    with tracked_run(
        store, kind, {"dagster_run_id": context.run.run_id, **params}, run_id=run_id
    ) as run:
        yield run


def shown(report: Report, seconds: float, **extra: Any) -> dict[str, Any]:
    """A stage's report (and ``extra``) in the UI's terms, with the seconds it took."""
    return as_metadata({**report.metadata(), **extra}) | {"duration_s": seconds}


def materialize(stage: Stage, *, keyed: bool = False, **extra: Any) -> dg.MaterializeResult:
    """Run one stage, timed: its materialization (for the asset ``stage.name`` when ``keyed``,
    as in a multi-asset); a stage that failed after saving its resume point fails the step
    with its figures so far."""
    timer = Timer()
    try:
        report = stage.run()
    except StageFailed as failed:
        raise dg.Failure(
            description=str(failed),
            metadata=as_metadata(failed.figures) | {"duration_s": timer.seconds},
        ) from failed
    return dg.MaterializeResult(
        asset_key=stage.name if keyed else None, metadata=shown(report, timer.seconds, **extra)
    )


def materialize_stages(
    context: dg.AssetExecutionContext,
    stages: Iterable[Stage],
    *,
    checks_after: Mapping[str, Mapping[str, Check]] | None = None,
    **extra: Any,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """The selected stages in order, each materialized as soon as it is done, and after a stage
    the selected checks that follow it (``checks_after``: stage → check name → check)."""
    selected = {key.to_user_string() for key in context.selected_asset_keys}
    checks = {key.name for key in context.selected_asset_check_keys}
    for stage in stages:
        if stage.name in selected:
            yield materialize(stage, keyed=True, **extra)
        for name, check in (checks_after or {}).get(stage.name, {}).items():
            if name in checks:
                yield evaluated(name, check, asset=stage.name)


def verdict_of(check: Callable[[], Verdict]) -> Verdict:
    """The check's verdict; a check that raises is a failed verdict with its error (one that
    raised would record no evaluation at all)."""
    try:
        return check()
    except Exception as exc:
        return _raised(exc)


def _raised(exc: Exception) -> Verdict:
    return Verdict(False, {"error": f"{type(exc).__name__}: {exc}"})


def evaluated(name: str, check: Check, asset: str | None = None) -> dg.AssetCheckResult:
    """The check's result (of ``asset``'s check ``name``), failed with its error if it
    raises."""
    return check_result(name, verdict_of(check), asset)


def evaluate_checks(
    context: dg.AssetCheckExecutionContext, checks: Mapping[str, Callable[[], Verdict]]
) -> dict[str, Verdict]:
    """The verdicts of the selected ones of ``checks`` (name → check), in their order."""
    selected = {key.name for key in context.selected_asset_check_keys}
    return {name: verdict_of(check) for name, check in checks.items() if name in selected}
