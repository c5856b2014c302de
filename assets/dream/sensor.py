"""``dream_gate_sensor``: a dream starts only when enough hours passed AND enough sessions arrived.

The two thresholds are the ``dream`` resource's ``gate_hours`` and
``gate_sessions`` (``MEMVAULT_DREAM_GATE_HOURS`` / ``_SESSIONS``), the same
values ``memvault dream`` honours.

The gate state is read from the Dagster instance — the metadata of the last
``collected_sessions`` and ``dream_prune`` materializations — never from the
store: a DuckDB file being written is locked against every other process,
and a sensor must not wait on it. ``last_dream_at`` comes only from a
``dream_prune`` that succeeded (the last stage; a failed dream never gets
there), and a dry run carries the previous real dream's time forward.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

import dagster as dg

from assets.dream.jobs import dream_job
from assets.recovery import close_dead_runs
from memvault import clock
from memvault.config import dream_gate
from memvault.dream import evaluate_gate
from resources import DreamResource

COLLECTED = dg.AssetKey("collected_sessions")
PRUNED = dg.AssetKey("dream_prune")
ACTIVE_STATUSES = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


@dataclass(frozen=True)
class GateInputs:
    last_dream_at: dt.datetime | None
    sessions_total: int | None
    sessions_at_last_dream: int

    @property
    def sessions_since(self) -> int:
        return max(0, (self.sessions_total or 0) - self.sessions_at_last_dream)


def _records(key: dg.AssetKey, partition: str | None) -> dg.AssetKey | dg.AssetRecordsFilter:
    """All of an asset's materializations, or one partition's (an owner's)."""
    if partition is None:
        return key
    return dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition])


def _latest_metadata(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None = None
) -> dict[str, object]:
    found = instance.fetch_materializations(_records(key, partition), limit=1).records
    materialization = found[0].asset_materialization if found else None
    if materialization is None:
        return {}
    return {k: v.value for k, v in materialization.metadata.items()}


#: How many dream_prune materializations back the sensor looks for the last real dream's
#: session mark (dry runs in between carry none).
DRY_RUNS_LOOKED_PAST = 50


def _session_mark(instance: dg.DagsterInstance, partition: str | None = None) -> object:
    """``sessions_total_at_last_dream`` of the latest real (not dry-run) dream: a dry run
    writes -1, and must not reset the count of sessions since the last real dream."""
    found = instance.fetch_materializations(_records(PRUNED, partition), limit=DRY_RUNS_LOOKED_PAST)
    for record in found.records:
        materialization = record.asset_materialization
        mark = (
            materialization.metadata.get("sessions_total_at_last_dream")
            if materialization
            else None
        )
        if mark is not None and isinstance(mark.value, int) and mark.value >= 0:
            return mark.value
    return None


def gate_inputs(instance: dg.DagsterInstance, partition: str | None = None) -> GateInputs:
    """The gate's inputs from the instance: of the one store, or of one owner's partition."""
    collected = _latest_metadata(instance, COLLECTED, partition)
    pruned = _latest_metadata(instance, PRUNED, partition)
    last = pruned.get("last_dream_at")
    last_at = dt.datetime.fromtimestamp(last, dt.UTC) if isinstance(last, int | float) else None
    at_last = pruned.get("sessions_total_at_last_dream")
    if pruned.get("dry_run"):
        at_last = _session_mark(instance, partition)
    total = collected.get("sessions_total")
    return GateInputs(
        last_dream_at=last_at,
        sessions_total=int(total) if isinstance(total, int | float) else None,
        sessions_at_last_dream=int(at_last) if isinstance(at_last, int) and at_last >= 0 else 0,
    )


def gate_description(hours: float, sessions: int) -> str:
    """What the sensor does, with the gate it was loaded with (the UI shows it on the sensor's
    page, so it must name the settings in force, not the defaults)."""
    return (
        f"Starts the dream when both gates open: more than {hours:g} h (gate_hours) since the "
        f"last successful dream AND at least {sessions} new session{'s' if sessions != 1 else ''}"
        " (gate_sessions) collected since; the skip reason names the gate that held."
    )


#: Seconds between two evaluations of the gate (``MEMVAULT_DREAM_SENSOR_INTERVAL``, default 600).
INTERVAL = int(os.environ.get("MEMVAULT_DREAM_SENSOR_INTERVAL") or 600)


@dg.sensor(
    job=dream_job,
    minimum_interval_seconds=INTERVAL,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=gate_description(*dream_gate()),
)
def dream_gate_sensor(
    context: dg.SensorEvaluationContext, dream: DreamResource
) -> dg.SensorResult | dg.SkipReason:
    for note in close_dead_runs(context.instance):
        context.log.warning(note)
    running = context.instance.get_runs(
        filters=dg.RunsFilter(job_name=dream_job.name, statuses=ACTIVE_STATUSES), limit=1
    )
    if running:
        return dg.SkipReason(f"busy: dream run {running[0].run_id} is still in progress")
    inputs = gate_inputs(context.instance)
    if inputs.sessions_total is None:
        return dg.SkipReason("session gate: no collected_sessions materialization yet")
    now = clock.now()
    decision = evaluate_gate(now, inputs.last_dream_at, inputs.sessions_since, dream.config())
    if not decision.run:
        return dg.SkipReason(decision.reason)
    last = int(inputs.last_dream_at.timestamp()) if inputs.last_dream_at else 0
    # The hour bucket lets a failed dream be retried an hour later with the same inputs.
    run_key = f"dream:{last}:{inputs.sessions_total}:{now:%Y%m%d%H}"
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=run_key, tags={"memvault/gate": decision.reason})]
    )
