"""The jobs launched the way a deployment launches them, not ``materialize`` in this process.

Each launch here is a process of its own (as a run worker is) that rebuilds the job from the
code location (``pipelines.definitions``) and runs it under the code location's multiprocess
executor, one process per step, on a Dagster instance on disk configured like a user's. The
night runs on a PostgreSQL store and a PostgreSQL instance (``deploy/dagster.postgres.yaml``);
the same night on a DuckDB store and a SQLite instance (``dagster.yaml``: the ``memvault_store``
pool holds one step at a time, so no check opens the file beside the next asset) is launched
through the webserver and the daemon by tests/integration/test_ui.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

import memvault
from tests.dagster.dream_support import seed_demo_store
from tests.dagster.run_checks import NIGHT, check_run

ROOT = Path(__file__).resolve().parents[2]


def launch(home: Path, job: str, store_url: str, *extra: str) -> str:
    """Run ``job`` in a fresh process on the instance at ``home``; returns the run id."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.dagster.launcher", job, store_url, *extra],
        cwd=ROOT,
        env=os.environ | {"DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def _night(home: Path, store_url: str) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for job in NIGHT:
        started = time.monotonic()
        run_id = launch(home, job, store_url)
        seconds[job] = round(time.monotonic() - started, 1)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            check_run(instance, run_id, job)
    return seconds


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    monkeypatch.setenv("MEMVAULT_INBOX", str(tmp_path / "inbox"))
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    return tmp_path


@pytest.fixture
def sqlite_home(env: Path) -> Path:
    home = env / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    return home


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_night_of_jobs_on_postgres_through_the_multiprocess_executor(
    env: Path, store_url: str, pg_dagster_home: Path
) -> None:
    seed_demo_store(store_url, env, sessions=24)
    seconds = _night(pg_dagster_home, store_url)
    with dg.DagsterInstance.from_config(str(pg_dagster_home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    print(f"\nPostgreSQL store, PostgreSQL instance, multiprocess executor: {seconds}")


def test_a_failed_dream_is_re_executed_from_the_failed_step(env: Path, sqlite_home: Path) -> None:
    """The UI's "re-execute from failure": the same dream (its run id) goes on, nothing twice."""
    url = f"duckdb://{env / 'store.duckdb'}"
    seed_demo_store(url, env, sessions=24)
    env_before = os.environ.get("MEMVAULT_LOCK_TIMEOUT")
    os.environ["MEMVAULT_LOCK_TIMEOUT"] = "0"
    try:
        blocker = memvault.open(url)  # another process holds the DuckDB file: orient cannot open it
        try:
            first = launch(sqlite_home, "dream_job", url)
        finally:
            blocker.close()
    finally:
        if env_before is None:
            os.environ.pop("MEMVAULT_LOCK_TIMEOUT")
        else:
            os.environ["MEMVAULT_LOCK_TIMEOUT"] = env_before
    with dg.DagsterInstance.from_config(str(sqlite_home)) as instance:
        run = instance.get_run_by_id(first)
        assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
        messages = [r.dagster_event for r in instance.all_logs(first) if r.dagster_event]
        [failure] = [e for e in messages if e.is_step_failure]
        assert failure.step_key == "dream_orient"
        assert "locked by another process" in str(failure.step_failure_data.error)  # type: ignore[union-attr]
    retry = launch(sqlite_home, "dream_job", url, "--reexecute-from-failure", first)
    with dg.DagsterInstance.from_config(str(sqlite_home)) as instance:
        check_run(instance, retry, "dream_job")
        run = instance.get_run_by_id(retry)
        assert run is not None and run.parent_run_id == first and run.root_run_id == first
    with memvault.open(url) as store:
        dreams = store.fetch("SELECT id, status FROM runs WHERE kind = 'dream'")
    assert len(dreams) == 1 and dreams[0][1] == "succeeded", dreams


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_two_dreams_from_two_instances_on_one_postgres_store(
    env: Path, store_url: str, tmp_path: Path
) -> None:
    """Both launched at once: one dreams, the other stops with a message naming the first (or
    runs after it) — never a duplicate-key error half-way through."""
    seed_demo_store(store_url, env, sessions=24)
    homes = []
    for name in ("one", "two"):
        home = tmp_path / name
        home.mkdir()
        shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
        homes.append(home)
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.dagster.launcher", "dream_job", store_url],
            cwd=ROOT,
            env=os.environ | {"DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for home in homes
    ]
    outcomes = []
    for process, home in zip(processes, homes, strict=True):
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-2000:]
        run_id = out.strip().splitlines()[-1]
        with dg.DagsterInstance.from_config(str(home)) as instance:
            run = instance.get_run_by_id(run_id)
            assert run is not None
            messages = " ".join(
                str(r.dagster_event.event_specific_data)
                for r in instance.all_logs(run_id)
                if r.dagster_event and r.dagster_event.is_step_failure
            )
        assert "duplicate key" not in messages and "UniqueViolation" not in messages, messages
        if run.status == dg.DagsterRunStatus.FAILURE:
            assert "another dream is running on this store" in messages, messages
        outcomes.append(run.status)
    assert dg.DagsterRunStatus.SUCCESS in outcomes, outcomes
    with memvault.open(store_url) as store:
        spans = store.fetch(
            "SELECT started_at, finished_at FROM runs WHERE kind = 'dream' "
            "AND status = 'succeeded' ORDER BY started_at"
        )
    assert len(spans) == outcomes.count(dg.DagsterRunStatus.SUCCESS)
    if len(spans) == 2:  # both dreamed: one after the other, never side by side
        assert spans[0][1] <= spans[1][0], spans
    print(f"\ntwo dreams at once on PostgreSQL: {[s.value for s in outcomes]}")
