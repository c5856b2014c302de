"""A Celery worker killed with SIGKILL in the middle of an owner's night.

Two workers on RabbitMQ (deploy/celery.yaml's settings: a step is acknowledged only when it
has finished, and RabbitMQ hands an unacknowledged task to another consumer as soon as the
connection of the one that had it drops). The owner's collect_job is launched; once its
collector step is running on a worker and has begun its ingest in the store, that worker's
whole process group is killed with SIGKILL. The step runs again on the other worker and the
run succeeds, then the dream; the store holds each collected session once, every row the
night wrote has its audit row, and `memvault undo` of the dream, then of the collector's
ingest, restores the store as it was before each.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

import memvault
from memvault.owners import PARTITIONS_NAME, Registry
from memvault_demo.generator import DemoConfig, generate, write_jsonl
from pipelines.cli.app import app
from tests.dagster.owner_night import (
    ROOT,
    celery_workers,
    deployment_env,
    step_events,
    steps_done,
)
from tests.helpers import PG_URL, TEST_NOW, require_service, table_dump

BROKER = "pyamqp://guest@127.0.0.1:5672//"
BACKEND = "redis://127.0.0.1:6379/10"
SESSIONS = 6
#: The tables a night writes and an undo restores (the communities are derived: each dream
#: replaces them, no undo brings back the previous ones).
TABLES = ("sessions", "blocks", "entities", "triples", "mentions", "edges")


def _rabbit_up() -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
        return True
    except OSError:
        return False


@pytest.fixture
def owner(tmp_path: Path, pg_dagster_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """One owner on a PostgreSQL schema (readable while a step writes it), a history waiting."""
    require_service(_rabbit_up(), "RabbitMQ at 127.0.0.1:5672")
    env = deployment_env(pg_dagster_home, tmp_path, BROKER, BACKEND)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    name = f"kill_{secrets.token_hex(3)}"
    Registry().add(name, PG_URL)
    memvault.open(Registry().get(name).store).close()
    records, _ = generate(DemoConfig(sessions=SESSIONS, days=20, seed=5, end=TEST_NOW))
    (tmp_path / "inbox" / name).mkdir(parents=True)
    write_jsonl(records, tmp_path / "inbox" / name / "history.jsonl")
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions(PARTITIONS_NAME, [name])
    yield name
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS owner_{name} CASCADE")


def _launch(job: str, owner: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.dagster.launcher", job, "unused", "--owner", owner],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finished(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=900)
    assert process.returncode == 0, err[-3000:]
    return out.strip().splitlines()[-1]


def _started(instance: dg.DagsterInstance, step: str, timeout: float) -> tuple[str, int]:
    """The run and the process of the first start of ``step`` in any run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for run in instance.get_runs(limit=5):
            records = instance.get_records_for_run(
                run.run_id, of_type=dg.DagsterEventType.STEP_START
            ).records
            for record in records:
                event = record.event_log_entry.dagster_event
                if event is not None and event.step_key == step and event.pid:
                    return run.run_id, event.pid
        time.sleep(0.1)
    raise AssertionError(f"{step} did not start in {timeout} s")


def _ingest_running(url: str) -> bool:
    """Whether the collector's ingest has begun in the store (its run row, still running)."""
    with memvault.open(url) as store:
        rows = store.fetch("SELECT count(*) FROM runs WHERE kind = 'ingest' AND status = 'running'")
    return bool(rows[0][0])


def _state(url: str) -> dict[str, list[dict]]:
    with memvault.open(url) as store:
        return {t: table_dump(store, t) for t in TABLES}


def _undo(owner: str, run_id: str) -> None:
    result = CliRunner().invoke(app, ["--owner", owner, "undo", run_id])
    assert result.exit_code == 0, result.stdout + result.stderr


@pytest.mark.integration
@pytest.mark.timeout(1800)
def test_a_worker_killed_mid_step_leaves_the_night_whole(owner: str, tmp_path: Path) -> None:
    from celery import Celery

    url = Registry().get(owner).store
    tag = owner.removeprefix("kill_")
    workers = [f"k1-{tag}", f"k2-{tag}"]
    config = ROOT / "deploy" / "celery.yaml"
    before_night = _state(url)
    with (
        dg.DagsterInstance.get() as instance,
        celery_workers(workers, BROKER, BACKEND, tmp_path, config) as started,
    ):
        collect = _launch("collect_job", owner)
        _, pid = _started(instance, "collected_sessions", 600)
        deadline = time.monotonic() + 30
        while not _ingest_running(url):
            assert time.monotonic() < deadline, "the ingest did not begin"
            time.sleep(0.05)
        [victim] = [n for n, p in started.items() if os.getpgid(pid) == p.pid]
        os.killpg(started[victim].pid, signal.SIGKILL)
        killed_at = time.monotonic()
        run_id = _finished(collect)
        print(f"\nthe step finished on the other worker {time.monotonic() - killed_at:.0f} s later")
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        starts = step_events(instance, run_id, dg.DagsterEventType.STEP_START)
        assert starts.count("collected_sessions") == 2, starts
        [survivor] = [w for w in workers if w != victim]
        done = steps_done(Celery(broker=BROKER, backend=BACKEND), [survivor])
        assert done[survivor] >= 2, done

        after_collect = _state(url)
        dream_id = _finished(_launch("dream_job", owner))
        dream = instance.get_run_by_id(dream_id)
        assert dream is not None and dream.status == dg.DagsterRunStatus.SUCCESS

    with memvault.open(url) as store:
        sessions = [r[0] for r in store.fetch("SELECT id FROM sessions")]
        runs = store.fetch("SELECT id, kind, status FROM runs ORDER BY started_at")
        audit = store.fetch("SELECT DISTINCT run_id, target_table, target_id FROM audit_log")
        rows = {
            t: {r[0] for r in store.fetch(f"SELECT id FROM {t}")} for t in ("sessions", "blocks")
        }
    assert len(sessions) == SESSIONS == len(set(sessions)), sessions
    succeeded = {r[0] for r in runs if r[2] == "succeeded"}
    assert {a[0] for a in audit} <= succeeded, f"audit rows of a run that did not finish: {runs}"
    for table, ids in rows.items():
        audited = {a[2] for a in audit if a[1] == table}
        assert audited == ids, f"{table}: rows without audit, or audit without rows"
    ingests = [r for r in runs if r[1] == "ingest" and r[2] == "succeeded"]
    assert len(ingests) == 1, runs
    killed = [r for r in runs if r[1] == "ingest" and r[2] == "failed"]
    assert len(killed) == 1, f"the killed attempt's ingest was not closed as abandoned: {runs}"
    dreams = [r for r in runs if r[1] == "dream"]
    assert [r[2] for r in dreams] == ["succeeded"], runs

    _undo(owner, dreams[0][0])
    assert _state(url) == after_collect, "undoing the dream did not restore the collected store"
    _undo(owner, ingests[0][0])
    assert _state(url) == before_night, "undoing the collector's ingest left rows behind"


def _dream_running(url: str) -> bool:
    with memvault.open(url) as store:
        rows = store.fetch("SELECT count(*) FROM runs WHERE kind = 'dream' AND status = 'running'")
    return bool(rows[0][0])


def _running_step_pid(instance: dg.DagsterInstance, run_id: str) -> int:
    """The process of the run's latest step start."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_START).records
    pids = [r.event_log_entry.dagster_event.pid for r in records if r.event_log_entry.dagster_event]
    assert pids and pids[-1], records
    return int(pids[-1])


@pytest.mark.integration
@pytest.mark.timeout(1800)
def test_a_worker_killed_mid_dream_reverts_that_dream_and_the_next_one_succeeds(
    owner: str, tmp_path: Path
) -> None:
    """A dream is all or nothing: the step run again on the other worker (same host) finds
    the dream's process gone, reverts what the dream had written, and stops; a new dream
    run succeeds on the store as the collector left it."""
    url = Registry().get(owner).store
    tag = owner.removeprefix("kill_")
    workers = [f"d1-{tag}", f"d2-{tag}"]
    with (
        dg.DagsterInstance.get() as instance,
        celery_workers(workers, BROKER, BACKEND, tmp_path, ROOT / "deploy" / "celery.yaml") as up,
    ):
        collect_id = _finished(_launch("collect_job", owner))
        assert instance.get_run_by_id(collect_id).status == dg.DagsterRunStatus.SUCCESS  # type: ignore[union-attr]
        after_collect = _state(url)
        dream = _launch("dream_job", owner)
        deadline = time.monotonic() + 600
        while not _dream_running(url):
            assert time.monotonic() < deadline and dream.poll() is None, "the dream did not begin"
            time.sleep(0.05)
        [first] = instance.get_runs(dg.RunsFilter(job_name="dream_job"), limit=1)
        pid = _running_step_pid(instance, first.run_id)
        [victim] = [n for n, p in up.items() if os.getpgid(pid) == p.pid]
        os.killpg(up[victim].pid, signal.SIGKILL)
        failed_id = _finished(dream)
        failed = instance.get_run_by_id(failed_id)
        assert failed is not None and failed.status == dg.DagsterRunStatus.FAILURE
        failures = [
            str(r.event_log_entry.dagster_event.step_failure_data.error)  # type: ignore[union-attr]
            for r in instance.get_records_for_run(
                failed_id, of_type=dg.DagsterEventType.STEP_FAILURE
            ).records
        ]
        assert any("start a new dream" in f for f in failures), failures
        with memvault.open(url) as store:
            statuses = [r[0] for r in store.fetch("SELECT status FROM runs WHERE kind = 'dream'")]
        assert statuses == ["reverted"], statuses
        assert _state(url) == after_collect, "the killed dream's writes were not reverted"

        again = _finished(_launch("dream_job", owner))
        assert instance.get_run_by_id(again).status == dg.DagsterRunStatus.SUCCESS  # type: ignore[union-attr]
    with memvault.open(url) as store:
        statuses = sorted(r[0] for r in store.fetch("SELECT status FROM runs WHERE kind = 'dream'"))
    assert statuses == ["reverted", "succeeded"], statuses
