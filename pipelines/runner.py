"""Run memvault's named jobs the way the CLI does: in-process, on the instance the UI reads.

A run started here is a run of ``collect_job``, ``dream_job`` or ``garden_job``
like one launched from the UI: it shows under its job, in the timeline, and
can be re-executed from failure there. What the command line chose (the
store, a dry run, the gardener's mode) travels as the run's resource
configuration, so a re-execution from the UI works on the same store with the
same settings.
"""

from __future__ import annotations

import datetime as dt
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.job_base import InMemoryJob
from dagster._core.definitions.repository_definition.valid_definitions import (
    SINGLETON_REPOSITORY_NAME,
)
from dagster._core.execution.api import execute_run
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.utils import make_new_run_id

import pipelines.definitions
from assets.recovery import prepare_instance, process_tags
from memvault.config import masked_url
from memvault.errors import MemvaultError
from memvault.owners import check_name, multi_owner
from memvault.paths import data_file
from memvault.profile.settings import ProfileSettings, day_range
from pipelines.owners import OWNER_TAG
from resources import StoreResource

#: The code location's name in the UI: ``memvault ui`` (``dg dev -m``) and ``workspace.yaml``
#: both load this module.
LOCATION = "pipelines.definitions"


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
    instance = dg.DagsterInstance.get()
    automation_on(instance)
    return instance


def automation_on(instance: dg.DagsterInstance) -> None:
    """Make the instance's automation flag say what runs: not paused.

    The tracks are chained by the code location's automation sensor, on by default. The UI
    tags a job or group of automated assets "Auto-materialize on/off" from an instance flag
    of its own (kept for Dagster's older automation daemon), which a new instance reads as
    paused: it said "off" while the sensor ran the night. Set once on a new instance; a
    choice made later in the UI is kept."""
    from dagster._daemon.asset_daemon import (
        _PRE_SENSOR_ASSET_DAEMON_PAUSED_KEY as PAUSED,
    )
    from dagster._daemon.asset_daemon import set_auto_materialize_paused

    if PAUSED not in instance.daemon_cursor_storage.get_cursor_values({PAUSED}):
        set_auto_materialize_paused(instance, False)


def resource_config(resource: dg.ConfigurableResource) -> dict[str, Any]:
    """A resource's settings as run configuration (unset optional fields left out)."""
    return {k: v for k, v in resource.model_dump().items() if v is not None}


def run_config_for(
    store_url: str, log_level: str = "WARNING", **overrides: dg.ConfigurableResource
) -> dict[str, Any]:
    """Run configuration that points a job's resources at ``store_url`` (password masked)."""
    chosen: dict[str, dg.ConfigurableResource] = {
        "store": StoreResource(url=masked_url(store_url)),
        **overrides,
    }
    return {
        "resources": {key: {"config": resource_config(r)} for key, r in chosen.items()},
        "loggers": {"console": {"config": {"log_level": log_level}}},
    }


def definitions() -> dg.Definitions:
    """The code location as the UI loads it now: rebuilt when the profile's partition start or
    timezone changed since this process imported it (``memvault demo`` sets them)."""
    import assets.profile

    if ProfileSettings.from_env() != assets.profile.SETTINGS:
        importlib.reload(assets.profile)
        importlib.reload(pipelines.definitions)
    return pipelines.definitions.defs


def partition_range_tags(first: str, last: str) -> dict[str, str]:
    """Tags that make one run cover the partitions ``first`` .. ``last`` (as a backfill does)."""
    return {
        "dagster/asset_partition_range_start": first,
        "dagster/asset_partition_range_end": last,
    }


def owner_tags(owner: str | None, day: str | None = None) -> dict[str, str]:
    """The tags that make a run tend ``owner``'s store when the installation tends several
    owners (their runs are partitioned by owner, or by owner × day when ``day`` is given),
    as the UI tags a run it launches for one partition; none for a single-owner install."""
    if not multi_owner():
        return {}
    if owner is None:
        raise MemvaultError(
            "this installation tends several owners (an owners registry exists): "
            "name one with --owner NAME (`memvault owners list`)"
        )
    check_name(owner)
    partition = f"{day}|{owner}" if day else owner
    return {"dagster/partition": partition, OWNER_TAG: owner}


def run_job(
    job_name: str,
    store_url: str,
    *,
    instance: dg.DagsterInstance | None = None,
    log_level: str = "WARNING",
    tags: dict[str, str] | None = None,
    owner: str | None = None,
    say: Callable[[str], None] | None = None,
    **overrides: dg.ConfigurableResource,
) -> dg.ExecuteInProcessResult:
    """Execute one of the code location's jobs in this process; failures are in the result.
    With several owners, the run is ``owner``'s partition (unless ``tags`` name one).

    First, runs a dead process left behind are closed and their store-pool slots freed,
    and a wait for a live run holding the store is announced (``say``)."""
    job = definitions().resolve_job_def(job_name)
    run_config = run_config_for(store_url, log_level, **overrides)
    run_id = make_new_run_id()
    partitioned = any(
        t.startswith(("dagster/partition", "dagster/asset_partition")) for t in tags or {}
    )
    all_tags = {"memvault/started_by": "cli", **process_tags(run_id), **(tags or {})}
    if not partitioned:
        all_tags |= owner_tags(owner)
    if instance is None:
        return job.execute_in_process(
            run_config=run_config, raise_on_error=False, tags=all_tags, run_id=run_id
        )
    prepare_instance(instance, say or (lambda _: None))
    run = instance.create_run_for_job(
        job_def=job,
        run_id=run_id,
        run_config=run_config,
        tags=all_tags,
        remote_job_origin=job_origin(job_name),
    )
    # The steps run in this process (as `execute_in_process` would), but the run is recorded
    # as a run of the code location's job, so the UI lists it and can re-execute it.
    execute_run(InMemoryJob(job.with_executor_def(dg.in_process_executor)), run, instance)
    return run_result(instance, run.run_id, job)


def job_origin(job_name: str) -> RemoteJobOrigin:
    """Where the UI finds ``job_name``: the code location ``memvault ui`` and ``workspace.yaml``
    load (the module ``pipelines.definitions``), its one repository."""
    target = LoadableTargetOrigin(
        executable_path=sys.executable, module_name=LOCATION, working_directory=os.getcwd()
    )
    location = ManagedGrpcPythonEnvCodeLocationOrigin(loadable_target_origin=target)
    return RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME).get_job_origin(job_name)


def run_result(
    instance: dg.DagsterInstance, run_id: str, job: dg.JobDefinition
) -> dg.ExecuteInProcessResult:
    """A finished run's events as the result ``execute_in_process`` returns."""
    run = instance.get_run_by_id(run_id)
    assert run is not None, run_id
    events = [
        record.dagster_event
        for record in instance.all_logs(run_id)
        if record.dagster_event is not None
    ]
    return dg.ExecuteInProcessResult(events, run, None, job)


def profile_batches(first: dt.date, last: dt.date) -> Iterator[tuple[str, str]]:
    """The range cut into runs of at most ``MEMVAULT_PROFILE_BATCH_DAYS`` partitions, oldest
    first (each run's first day reads the day before it, written by the previous run)."""
    import assets.profile

    keys = set(assets.profile.DAILY_PARTITIONS.get_partition_keys())
    days = [d.isoformat() for d in day_range(first, last) if d.isoformat() in keys]
    size = assets.profile.SETTINGS.batch_days
    for i in range(0, len(days), size):
        yield days[i], days[min(i + size, len(days)) - 1]


def partition_keys(first: dt.date, last: dt.date) -> list[str]:
    """The daily partitions between ``first`` and ``last`` (days outside the partitions left
    out: before the start, or not yet complete)."""
    return [key for batch in profile_batches(first, last) for key in _expand(*batch)]


def _expand(first: str, last: str) -> list[str]:
    return [
        d.isoformat() for d in day_range(dt.date.fromisoformat(first), dt.date.fromisoformat(last))
    ]


def submit_backfill(
    instance: dg.DagsterInstance,
    first: dt.date,
    last: dt.date,
    store_url: str,
    owner: str | None = None,
) -> str:
    """Submit a backfill of the profile's daily assets to the instance's daemon (as the UI's
    "Materialize" over a range does); the daemon runs it in batches. Returns its id. With
    several owners, the days are ``owner``'s (their owner × day partitions)."""
    from dagster._core.execution.backfill import PartitionBackfill
    from dagster._core.utils import make_new_backfill_id

    import assets.profile

    keys = partition_keys(first, last)
    if not keys:
        from memvault.errors import MemvaultError

        raise MemvaultError(f"no daily partition between {first} and {last}")
    if owner_tags(owner):
        keys = [f"{day}|{owner}" for day in keys]
    backfill_id = make_new_backfill_id()
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=backfill_id,
        asset_graph=definitions().resolve_asset_graph(),
        partition_names=keys,
        asset_selection=[asset.key for asset in assets.profile.PROFILE_ASSETS],
        backfill_timestamp=dt.datetime.now(dt.UTC).timestamp(),  # wall clock: Dagster records when
        tags={"memvault/started_by": "cli"},
        dynamic_partitions_store=instance,
        all_partitions=False,
        title=f"profile {keys[0]} .. {keys[-1]}",
        description=f"memvault backfill on {masked_url(store_url)}",
        run_config=run_config_for(store_url),
    )
    instance.add_backfill(backfill)
    return backfill_id


def materializations(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    """Asset key → metadata (plain values) of every materialization in a result."""
    out: dict[str, dict[str, Any]] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization  # type: ignore[union-attr]
        out[mat.asset_key.to_user_string()] = {k: _plain(v) for k, v in mat.metadata.items()}
    return out


def _plain(value: dg.MetadataValue) -> Any:
    """A metadata value as the shell shows it: a timestamp as an ISO time (UTC), not seconds."""
    if isinstance(value, dg.TimestampMetadataValue):
        return dt.datetime.fromtimestamp(value.value, tz=dt.UTC).isoformat(timespec="seconds")
    return value.value


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
