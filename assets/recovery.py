"""Runs left behind by a process that died, found and closed on the instance.

A run killed mid-way (the OOM killer, a stopped container, Ctrl-\\) keeps its
Dagster status STARTED and, worse, its slot in the ``memvault_store`` pool: every
later run would wait for that slot forever. Before memvault starts a job (and
each time the dream sensor looks), runs whose process is gone are marked failed
with a message saying so, and pool slots held by runs that are over are freed.
A slot held by a run that is alive is left alone, and the wait is announced.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import dagster as dg

from assets.common import STORE_POOL
from memvault.store.liveness import HOST, process_alive

RUNNING = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
#: Tags memvault puts on the runs it starts in-process, so they can be checked.
#: The run the process tags were written for: a re-execution from the UI inherits its parent's
#: tags, and its own process is then its run worker, not the parent's (gone) CLI process.
HOST_TAG, PID_TAG, RUN_TAG = "memvault/host", "memvault/pid", "memvault/pid_of_run"


def process_tags(run_id: str) -> dict[str, str]:
    """Tags naming the process that runs ``run_id`` in-process (the CLI)."""
    return {HOST_TAG: HOST, PID_TAG: str(os.getpid()), RUN_TAG: run_id}


def _carrier(instance: dg.DagsterInstance, run: dg.DagsterRun) -> tuple[str | None, int | None]:
    """Host and process id carrying a run: its tags, else the run worker that started it
    (on an instance whose event log is local to this machine)."""
    if PID_TAG in run.tags and run.tags.get(RUN_TAG) == run.run_id:
        return run.tags.get(HOST_TAG), int(run.tags[PID_TAG])
    if "Sqlite" not in type(instance.event_log_storage).__name__:
        return None, None  # a shared instance: another machine may be running it
    records = instance.get_records_for_run(
        run.run_id, of_type=dg.DagsterEventType.RUN_START, limit=1
    ).records
    event = records[0].event_log_entry.dagster_event if records else None
    return (HOST, event.pid) if event is not None and event.pid else (None, None)


def close_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed the runs whose process is gone and free pool slots of runs that are over;
    one line per thing done."""
    notes = []
    for run in instance.get_runs(dg.RunsFilter(statuses=RUNNING)):
        host, pid = _carrier(instance, run)
        if host != HOST or pid is None or process_alive(pid):
            continue
        message = (
            f"the process running {run.job_name} run {run.run_id} ({pid} on {host}) is gone; "
            "memvault marked the run failed and freed its store-pool slot"
        )
        instance.report_run_failed(run, message=message)
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        notes.append(message)
    info = instance.event_log_storage.get_concurrency_info(STORE_POOL)
    for run_id in sorted(info.active_run_ids | info.pending_run_ids):
        holder = instance.get_run_by_id(run_id)
        if holder is None or holder.is_finished:
            instance.event_log_storage.free_concurrency_slots_for_run(run_id)
            notes.append(f"freed the store-pool slot still held by finished run {run_id}")
    return notes


def pool_holders(instance: dg.DagsterInstance) -> list[str]:
    """The live runs holding the store pool now (a new run waits for them)."""
    info = instance.event_log_storage.get_concurrency_info(STORE_POOL)
    out = []
    for run_id in sorted(info.active_run_ids):
        holder = instance.get_run_by_id(run_id)
        if holder is not None and not holder.is_finished:
            out.append(f"{holder.job_name} run {run_id}")
    return out


def prepare_instance(instance: dg.DagsterInstance, say: Callable[[str], None]) -> None:
    """Before a job starts: close what dead processes left, and say what the job waits for."""
    for note in close_dead_runs(instance):
        say(note)
    holders = pool_holders(instance)
    if holders:
        say(f"waiting for the store: {', '.join(holders)} holds it (one step at a time)")
