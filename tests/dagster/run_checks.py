"""What a finished run must show when it was launched as a deployment launches it."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

import dagster as dg

from pipelines.cli.demo import NIGHT

__all__ = ["NIGHT", "WITHOUT_CHECKS", "check_run"]


#: Jobs whose assets carry no asset check.
WITHOUT_CHECKS = frozenset({"gaps_job", "layers_job", "prefetch_job"})


def check_run(instance: dg.DagsterInstance, run_id: str, job: str | None) -> None:
    """The run of ``job`` (None: a run the automation started) succeeded, its asset checks ran
    and passed, and every step had a process of its own."""
    run = instance.get_run_by_id(run_id)
    assert run is not None and run.job_name == (job or run.job_name)
    records = instance.all_logs(run_id)
    failures = [_failure(r.dagster_event) for r in records if r.dagster_event and r.dagster_event.is_failure]  # fmt: skip
    assert run.status == dg.DagsterRunStatus.SUCCESS, (job, failures)
    events = [r.dagster_event for r in records if r.dagster_event]
    checks = [
        e.event_specific_data for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    unchecked = job in WITHOUT_CHECKS if job else not _checked(run.asset_selection or set())
    assert (checks or unchecked) and all(c.passed for c in checks), (job, checks)  # type: ignore[union-attr]
    workers = {e.step_key for e in events if e.event_type_value == "STEP_WORKER_STARTED"}
    steps = {e.step_key for e in events if e.event_type_value == "STEP_SUCCESS"}
    assert steps and workers == steps, "every step ran in a process of its own"


def _failure(event: dg.DagsterEvent) -> str:
    """A failure event in the step's own words (its exception's message), else its message."""
    error = getattr(event.event_specific_data, "error", None)
    return f"{event.step_key}: {error.message.strip()}" if error else str(event.message)


def _checked(assets: AbstractSet[dg.AssetKey]) -> bool:
    """Whether any of ``assets`` has an asset check (a run the automation started)."""
    from pipelines.definitions import defs

    return bool(defs.resolve_asset_graph().get_check_keys_for_assets(set(assets)))
