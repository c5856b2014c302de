"""The code location for many owners: every nightly asset partitioned by owner.

Built from the single-owner definitions, not beside them, so the two never drift: each asset
without partitions becomes partitioned by owner (Dagster's dynamic partitions ``owners``,
which ``memvault owners add`` extends), each daily asset by owner × day (a multi-partition:
a backfill is "every day of one owner" or "one day of every owner"). A daily self-dependency
(the snapshot reads its previous day) maps the day back and keeps the owner. The schedules
request a run per owner, the dream's sensor evaluates each owner's gate, and every run is
tagged with its owner, so run queue limits can hold one writing run per owner's store.

The store of a run is its owner's: :class:`resources.StoreResource` reads the owner from the
run's partition (``by_owner``). A run never spans two owners.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import dagster as dg

from assets.dream.jobs import dream_job
from assets.dream.sensor import ACTIVE_STATUSES, INTERVAL, gate_inputs
from assets.recovery import close_dead_runs
from memvault import clock
from memvault.config import dream_gate
from memvault.dream import evaluate_gate
from memvault.owners import PARTITIONS_NAME
from resources import CollectorSourcesResource, DreamResource, StoreResource

# The owner × day dependency maps each dimension on its own (a beta class of Dagster's).
warnings.filterwarnings("ignore", message=r".*MultiPartitionMapping.*", category=dg.BetaWarning)

#: The owners, one partition each (``memvault owners add`` / ``remove``).
OWNER_PARTITIONS = dg.DynamicPartitionsDefinition(name=PARTITIONS_NAME)
#: The dimension names of the owner × day partitions (a key reads ``DAY|OWNER``).
OWNER, DAY = "owner", "day"
#: The tag every run of an owner carries (the run queue limits per owner key on it).
OWNER_TAG = "memvault/owner"


def partitions_for(single: dg.PartitionsDefinition | None) -> dg.PartitionsDefinition:
    """An asset's partitions with owners: by owner, or by owner × its days."""
    if single is None:
        return OWNER_PARTITIONS
    if isinstance(single, dg.TimeWindowPartitionsDefinition):
        return dg.MultiPartitionsDefinition({OWNER: OWNER_PARTITIONS, DAY: single})
    raise dg.DagsterInvariantViolationError(
        f"no owner partitioning for {type(single).__name__} partitions"
    )


def _dep(dep: dg.AssetDep, spec_partitions: dg.PartitionsDefinition | None) -> dg.AssetDep:
    """A dependency's partition mapping with owners: a day offset stays on the days, the owner
    is the same owner."""
    mapping = dep.partition_mapping
    if mapping is None or not isinstance(spec_partitions, dg.TimeWindowPartitionsDefinition):
        return dep
    return dg.AssetDep(
        dep.asset_key,
        partition_mapping=dg.MultiPartitionMapping(
            {
                OWNER: dg.DimensionPartitionMapping(OWNER, dg.IdentityPartitionMapping()),
                DAY: dg.DimensionPartitionMapping(DAY, mapping),
            }
        ),
    )


def _by_owner(asset: dg.AssetsDefinition) -> dg.AssetsDefinition:
    def spec(s: dg.AssetSpec) -> dg.AssetSpec:
        return s.replace_attributes(
            partitions_def=partitions_for(s.partitions_def),
            deps=[_dep(d, s.partitions_def) for d in s.deps],
        )

    return asset.map_asset_specs(spec)


def _owner_runs(context: dg.ScheduleEvaluationContext, job_name: str) -> list[dg.RunRequest]:
    """One run request per owner for a scheduled tick."""
    tick = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
    return [
        dg.RunRequest(
            run_key=f"{job_name}:{owner}:{tick}", partition_key=owner, tags={OWNER_TAG: owner}
        )
        for owner in context.instance.get_dynamic_partitions(PARTITIONS_NAME)
    ]


def _per_owner_schedule(schedule: dg.ScheduleDefinition) -> dg.ScheduleDefinition:
    job = schedule.job
    name = job.name

    def evaluate(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
        return _owner_runs(context, name)

    return dg.ScheduleDefinition(
        name=schedule.name,
        job=job,
        cron_schedule=schedule.cron_schedule,
        execution_timezone=schedule.execution_timezone,
        execution_fn=evaluate,
        default_status=schedule.default_status,
        description=f"{schedule.description} (a run per owner)",
    )


def owner_definitions(single: dg.Definitions) -> dg.Definitions:
    """``single`` with every asset partitioned by owner, its schedules run per owner, the
    dream's sensor evaluating each owner's gate, and the store resolved by the run's owner."""
    replaced: dict[str, Any] = {owners_dream_gate_sensor.name: owners_dream_gate_sensor}
    return dg.Definitions(
        assets=[
            _by_owner(a) if isinstance(a, dg.AssetsDefinition) else a for a in single.assets or []
        ],
        asset_checks=list(single.asset_checks or []),
        jobs=list(single.jobs or []),
        schedules=[
            _per_owner_schedule(s) if isinstance(s, dg.ScheduleDefinition) else s
            for s in single.schedules or []
        ],
        sensors=[replaced.pop(s.name, s) for s in single.sensors or []] + list(replaced.values()),
        resources=owner_resources(single),
        executor=night_executor() or single.executor,
        loggers=dict(single.loggers or {}),
    )


def owners_gate_description(hours: float, sessions: int) -> str:
    """The owners' gate sensor's description with the gate it was loaded with."""
    return (
        f"Starts each owner's dream when both of that owner's gates open: more than {hours:g} h "
        f"(gate_hours) since their last successful dream AND at least {sessions} new "
        f"session{'s' if sessions != 1 else ''} (gate_sessions) collected since; a run per "
        "owner whose gates opened, and the reason each other owner waits."
    )


@dg.sensor(
    name="dream_gate_sensor",
    job=dream_job,
    minimum_interval_seconds=INTERVAL,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=owners_gate_description(*dream_gate()),
)
def owners_dream_gate_sensor(
    context: dg.SensorEvaluationContext, dream: DreamResource
) -> dg.SensorResult | dg.SkipReason:
    for note in close_dead_runs(context.instance):
        context.log.warning(note)
    now = clock.now()
    requests: list[dg.RunRequest] = []
    waiting: list[str] = []
    for owner in context.instance.get_dynamic_partitions(PARTITIONS_NAME):
        running = context.instance.get_runs(
            filters=dg.RunsFilter(
                job_name=dream_job.name,
                statuses=ACTIVE_STATUSES,
                tags={"dagster/partition": owner},
            ),
            limit=1,
        )
        if running:
            waiting.append(f"{owner}: busy, dream run {running[0].run_id} is still in progress")
            continue
        inputs = gate_inputs(context.instance, owner)
        if inputs.sessions_total is None:
            waiting.append(f"{owner}: session gate, no collected_sessions materialization yet")
            continue
        decision = evaluate_gate(now, inputs.last_dream_at, inputs.sessions_since, dream.config())
        if not decision.run:
            waiting.append(f"{owner}: {decision.reason}")
            continue
        last = int(inputs.last_dream_at.timestamp()) if inputs.last_dream_at else 0
        requests.append(
            dg.RunRequest(
                run_key=f"dream:{owner}:{last}:{inputs.sessions_total}:{now:%Y%m%d%H}",
                partition_key=owner,
                tags={OWNER_TAG: owner, "memvault/gate": decision.reason},
            )
        )
    for line in waiting:
        context.log.info(line)
    if not requests:
        return dg.SkipReason("; ".join(waiting) or "no owners registered (memvault owners add)")
    return dg.SensorResult(run_requests=requests)


def owner_resources(single: dg.Definitions) -> dict[str, Any]:
    """The single-owner resources, the store and the inbox each run's owner's."""
    resources = dict(single.resources or {})
    resources["store"] = StoreResource(by_owner=True)
    resources["sources"] = CollectorSourcesResource(by_owner=True)
    return resources


#: The Celery settings of deploy/celery.yaml: a step is acknowledged when it finished, so a
#: worker that dies mid-step leaves it to another.
CELERY_SETTINGS = {
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    "worker_prefetch_multiplier": 1,
    "broker_transport_options": {"visibility_timeout": 600},
}


def night_executor() -> dg.ExecutorDefinition | None:
    """Dagster's Celery executor when ``MEMVAULT_EXECUTOR=celery`` (each step a task for the
    deployment's workers; broker and result backend ``MEMVAULT_CELERY_BROKER`` /
    ``MEMVAULT_CELERY_BACKEND``, default the local Redis), else None: the code location's own."""
    chosen = (os.environ.get("MEMVAULT_EXECUTOR") or "multiprocess").strip().lower()
    if chosen == "multiprocess":
        return None
    if chosen != "celery":
        raise dg.DagsterInvariantViolationError(
            f"MEMVAULT_EXECUTOR={chosen!r}: use multiprocess (the default) or celery"
        )
    from dagster_celery import celery_executor

    return celery_executor.configured(
        {
            "broker": os.environ.get("MEMVAULT_CELERY_BROKER") or "redis://127.0.0.1:6379/0",
            "backend": os.environ.get("MEMVAULT_CELERY_BACKEND") or "redis://127.0.0.1:6379/1",
            "config_source": CELERY_SETTINGS,
        },
        name="celery",
    )
