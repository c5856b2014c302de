"""A multi-owner deployment started by a test: Celery workers, the Dagster daemon, and runs
submitted to its queue as the UI's launchpad submits them.

The runs are created from the code location as a remote job (what the webserver does on
"Launch run" or "Re-execute from failure") and submitted to the instance's queued run
coordinator; the daemon dequeues them under deploy/dagster.owners.yaml's limits (one run per
owner, a global limit) and launches each in a run process of its own, whose steps go to the
Celery workers. The daemon's sensors are stopped first: the test decides which runs start.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from dagster._core.execution.plan.resume_retry import ReexecutionStrategy
from dagster._core.remote_representation.code_location import CodeLocation
from dagster._core.remote_representation.external import RemoteJob, RemoteRepository
from dagster._core.workspace.context import BaseWorkspaceRequestContext, WorkspaceProcessContext
from dagster._core.workspace.load_target import ModuleTarget

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOCATION = "pipelines.definitions"
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def deployment_env(home: Path, root: Path, broker: str, backend: str) -> dict[str, str]:
    """The environment every process of a test deployment shares (webserver, daemon, run
    processes, workers): its instance in ``home`` (deploy/dagster.owners.yaml copied there),
    its owners registry and inboxes under ``root``, the Celery executor on ``broker``."""
    shutil.copy(ROOT / "deploy" / "dagster.owners.yaml", home / "dagster.yaml")
    return {
        "DAGSTER_HOME": str(home),
        "MEMVAULT_OWNERS": str(root / "owners.json"),
        "MEMVAULT_INBOX": str(root / "inbox"),
        "MEMVAULT_EMBEDDER": "hashing",
        "MEMVAULT_CLAUDE_PROJECTS": "none",
        "MEMVAULT_EXECUTOR": "celery",
        "MEMVAULT_CELERY_BROKER": broker,
        "MEMVAULT_CELERY_BACKEND": backend,
        "PYTHONPATH": str(ROOT),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def _stop(process: subprocess.Popen, grace: float = 30) -> None:
    """SIGTERM to the process group, SIGKILL if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextmanager
def celery_workers(
    names: Iterable[str], broker: str, backend: str, logs: Path, config: Path
) -> Iterator[dict[str, subprocess.Popen]]:
    """One `dagster-celery worker start` per name, one process each, as a deployment starts
    them; yields them once every one answers a ping."""
    from celery import Celery

    started: dict[str, subprocess.Popen] = {}
    try:
        for name in names:
            log = (logs / f"{name}.log").open("w")
            command = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
                       "-y", str(config), "--name", name, "--", "--concurrency", "1"]  # fmt: skip
            started[name] = subprocess.Popen(
                command,
                cwd=ROOT,
                env=os.environ.copy(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        app = Celery(broker=broker, backend=backend)
        deadline = time.monotonic() + 180
        while len(answering(app, started)) < len(started):
            for name, process in started.items():
                assert process.poll() is None, (logs / f"{name}.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the workers did not answer"
            time.sleep(1)
        yield started
    finally:
        for process in started.values():
            _stop(process)


def answering(app: object, names: Iterable[str]) -> set[str]:
    """Which of the named workers answer a ping (others on the same broker are not ours)."""
    replies = app.control.ping(timeout=1.0) or []  # type: ignore[attr-defined]
    heard = {name.split("@", 1)[0] for reply in replies for name in reply}
    return heard & set(names)


def steps_done(app: object, names: Iterable[str]) -> dict[str, int]:
    """How many tasks each of the named workers has run."""
    stats = app.control.inspect(timeout=5).stats() or {}  # type: ignore[attr-defined]
    done = {n.split("@", 1)[0]: sum((s.get("total") or {}).values()) for n, s in stats.items()}
    return {name: done.get(name, 0) for name in names}


@contextmanager
def daemon(logs: Path) -> Iterator[subprocess.Popen]:
    """`dagster-daemon run` on the code location, as the Dagster host runs it."""
    log = (logs / "daemon.log").open("w")
    process = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-m", LOCATION, "-d", str(ROOT)],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        _stop(process)
        log.close()


class Launchpad:
    """The code location as the webserver sees it: creates runs and submits them to the queue."""

    def __init__(self, instance: dg.DagsterInstance, workspace: BaseWorkspaceRequestContext):
        self.instance, self.workspace = instance, workspace
        self.location: CodeLocation = workspace.get_code_location(LOCATION)
        [self.repository] = self.location.get_repositories().values()

    def job(self, name: str) -> RemoteJob:
        return self.repository.get_full_job(name)

    @property
    def repo(self) -> RemoteRepository:
        return self.repository

    def stop_sensors(self) -> None:
        """Every sensor stopped (the UI's toggle), so the daemon starts only the test's runs."""
        for sensor in self.repository.get_sensors():
            self.instance.stop_sensor(sensor.get_remote_origin_id(), sensor.selector_id, sensor)

    def submit(self, job_name: str, owner: str) -> str:
        """A run of ``job_name`` for ``owner``'s partition, queued; its id."""
        job = self.job(job_name)
        plan = self.location.get_execution_plan(
            job, {}, step_keys_to_execute=None, known_state=None, instance=self.instance
        ).execution_plan_snapshot
        run = self.instance.create_run(
            job_name=job.name,
            run_id=None,
            run_config={},
            resolved_op_selection=None,
            step_keys_to_execute=plan.step_keys_to_execute,
            op_selection=None,
            status=None,
            root_run_id=None,
            parent_run_id=None,
            tags={**job.tags, "dagster/partition": owner, "memvault/owner": owner},
            job_snapshot=job.job_snapshot,
            execution_plan_snapshot=plan,
            parent_job_snapshot=job.parent_job_snapshot,
            remote_job_origin=job.get_remote_origin(),
            job_code_origin=job.get_python_origin(),
            asset_selection=None,
            asset_check_selection=None,
            asset_graph=self.repository.asset_graph,
        )
        self.instance.submit_run(run.run_id, self.workspace)
        return run.run_id

    def reexecute_from_failure(self, run_id: str) -> str:
        """The UI's "Re-execute from failure" of ``run_id``, queued; the new run's id."""
        parent = self.instance.get_run_by_id(run_id)
        assert parent is not None
        run = self.instance.create_reexecuted_run(
            request_context=self.workspace,
            parent_run=parent,
            code_location=self.location,
            remote_job=self.job(parent.job_name),
            strategy=ReexecutionStrategy.FROM_FAILURE,
            use_parent_run_tags=True,
        )
        self.instance.submit_run(run.run_id, self.workspace)
        return run.run_id


@contextmanager
def launchpad(instance: dg.DagsterInstance) -> Iterator[Launchpad]:
    target = ModuleTarget(
        module_name=LOCATION, attribute=None, working_directory=str(ROOT), location_name=None
    )
    with WorkspaceProcessContext(instance, target) as context:
        yield Launchpad(instance, context.create_request_context())


def wait_for(
    instance: dg.DagsterInstance, run_ids: Iterable[str], timeout: float, logs: Path
) -> dict[str, dg.DagsterRun]:
    """The runs once all have finished (the daemon's log on a timeout)."""
    wanted = list(run_ids)
    deadline = time.monotonic() + timeout
    while True:
        runs = {r.run_id: r for r in instance.get_runs(dg.RunsFilter(run_ids=wanted))}
        if len(runs) == len(wanted) and all(r.status in FINISHED for r in runs.values()):
            return runs
        if time.monotonic() > deadline:
            pending = {i: r.status.value for i, r in runs.items() if r.status not in FINISHED}
            daemon_log = (logs / "daemon.log").read_text()[-3000:]
            raise AssertionError(f"runs not finished after {timeout} s: {pending}\n{daemon_log}")
        time.sleep(2)


def step_events(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> list:
    """The step keys of ``run_id``'s events of one kind, in order."""
    records = instance.get_records_for_run(run_id, of_type=kind).records
    return [
        r.event_log_entry.dagster_event.step_key for r in records if r.event_log_entry.dagster_event
    ]
