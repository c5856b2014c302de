"""Runs left running by a dead CLI process are closed; a re-execution is not mistaken for one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import dagster as dg
from dagster._core.storage.dagster_run import DagsterRun

from assets.recovery import close_dead_runs, process_tags


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_dead_cli_run_is_closed_but_its_reexecution_keeps_running(tmp_path: Path) -> None:
    with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
        parent = DagsterRun(job_name="collect_job", run_id="a" * 36, status=dg.DagsterRunStatus.STARTED,
                            tags={**process_tags("a" * 36), "memvault/pid": str(_dead_pid())})  # fmt: skip
        # The UI's "Re-execute" copies the parent's tags; its own process is its run worker.
        child = DagsterRun(job_name="collect_job", run_id="b" * 36, status=dg.DagsterRunStatus.STARTED,
                           tags=dict(parent.tags), parent_run_id=parent.run_id, root_run_id=parent.run_id)  # fmt: skip
        instance.add_run(parent)
        instance.add_run(child)
        notes = close_dead_runs(instance)
        assert len(notes) == 1 and parent.run_id in notes[0]
        assert instance.get_run_by_id(parent.run_id).status == dg.DagsterRunStatus.FAILURE  # type: ignore[union-attr]
        assert instance.get_run_by_id(child.run_id).status == dg.DagsterRunStatus.STARTED  # type: ignore[union-attr]
