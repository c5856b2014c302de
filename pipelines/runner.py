"""Run memvault's named jobs the way the CLI does: in-process, on the instance the UI reads.

A run started here is a run of ``collect_job``, ``dream_job`` or ``garden_job``
like one launched from the UI: it shows under its job, in the timeline, and
can be re-executed from failure there. What the command line chose (the
store, a dry run, the gardener's mode) travels as the run's resource
configuration, so a re-execution from the UI works on the same store with the
same settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from memvault.config import masked_url
from memvault.paths import data_file
from pipelines.definitions import defs
from pipelines.recovery import prepare_instance, process_tags
from resources import GardenerResource, StoreResource


def dagster_home() -> Path:
    """``DAGSTER_HOME``, else ``.dagster/`` in the working directory, with a dagster.yaml in it."""
    home = Path(os.environ.get("DAGSTER_HOME") or Path.cwd() / ".dagster").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() and not config.is_symlink():
        config.write_text(data_file("dagster.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    return home


def persistent_instance() -> dg.DagsterInstance:
    """The instance the UI reads, so runs started from the CLI show up there."""
    os.environ["DAGSTER_HOME"] = str(dagster_home())
    return dg.DagsterInstance.get()


def resource_config(resource: dg.ConfigurableResource) -> dict[str, Any]:
    """A resource's settings as run configuration (unset optional fields left out)."""
    return {k: v for k, v in resource.model_dump().items() if v is not None}


def run_config_for(
    store_url: str, log_level: str = "WARNING", **overrides: dg.ConfigurableResource
) -> dict[str, Any]:
    """Run configuration that points a job's resources at ``store_url`` (password masked)."""
    url = masked_url(store_url)
    chosen: dict[str, dg.ConfigurableResource] = {
        "store": StoreResource(url=url),
        "gardener": GardenerResource(store_url=url),
        **overrides,
    }
    return {
        "resources": {key: {"config": resource_config(r)} for key, r in chosen.items()},
        "loggers": {"console": {"config": {"log_level": log_level}}},
    }


def run_job(
    job_name: str,
    store_url: str,
    *,
    instance: dg.DagsterInstance | None = None,
    log_level: str = "WARNING",
    tags: dict[str, str] | None = None,
    say: Callable[[str], None] | None = None,
    **overrides: dg.ConfigurableResource,
) -> dg.ExecuteInProcessResult:
    """Execute one of the code location's jobs in this process; failures are in the result.

    First, runs a dead process left behind are closed and their store-pool slots freed,
    and a wait for a live run holding the store is announced (``say``)."""
    job = defs.resolve_job_def(job_name)
    if instance is not None:
        prepare_instance(instance, say or (lambda _: None))
    return job.execute_in_process(
        run_config=run_config_for(store_url, log_level, **overrides),
        instance=instance,
        raise_on_error=False,
        tags={"memvault/started_by": "cli", **process_tags(), **(tags or {})},
    )


def materializations(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    """Asset key → metadata (plain values) of every materialization in a result."""
    out: dict[str, dict[str, Any]] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization  # type: ignore[union-attr]
        out[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    return out


def check_results(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    """Check name → passed, for every check evaluated in a result."""
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def traces(result: dg.ExecuteInProcessResult) -> list[str]:
    """The full error of every failed step (shown with ``MEMVAULT_DEBUG=1``)."""
    return [
        f"{event.step_key}:\n{event.step_failure_data.error.to_string()}"
        for event in result.all_events
        if event.is_step_failure and event.step_key and event.step_failure_data.error
    ]


def _root_cause(error: Any) -> str:
    """The innermost error's first line (the step's own exception, not Dagster's wrapper)."""
    while error.cause is not None:
        error = error.cause
    return error.message.strip().splitlines()[0]


def failures(result: dg.ExecuteInProcessResult) -> list[str]:
    """One line per failed step: the step and the cause the asset gave."""
    lines = []
    for event in result.all_events:
        if event.is_step_failure and event.step_key:
            error = event.step_failure_data.error
            cause = _root_cause(error) if error else "failed"
            user = getattr(event.step_failure_data, "user_failure_data", None)
            if user is not None and user.description:
                cause = user.description
            lines.append(f"{event.step_key}: {cause}")
    return lines
