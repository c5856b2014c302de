"""A night of several owners on Dagster's Celery executor, with two workers started here.

As a deployment runs it: a PostgreSQL Dagster instance (deploy/dagster.owners.yaml), the code
location with an owners registry (every nightly asset partitioned by owner) and
``MEMVAULT_EXECUTOR=celery``, two workers started with ``dagster-celery worker start`` and
deploy/celery.yaml on the local Redis, and each owner's runs launched in a process of their
own (as the daemon's run launcher does). The owners' stores are DuckDB files and PostgreSQL
schemas; one owner's store is a corrupt file: that owner's runs fail, every other owner's
night succeeds, and both workers did part of the work.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

import memvault
from memvault.owners import PARTITIONS_NAME, Registry
from memvault_demo.generator import DemoConfig, generate, write_jsonl
from tests.dagster.owner_night import celery_workers, deployment_env
from tests.helpers import PG_URL, TEST_NOW, require_service

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
BROKER = "redis://127.0.0.1:6379/11"
BACKEND = "redis://127.0.0.1:6379/12"
NIGHT = ("collect_job", "dream_job")


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(BROKER, socket_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def deployment(
    tmp_path: Path, pg_dagster_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """The registry of four owners (two DuckDB files, one PostgreSQL schema, one corrupt file),
    each with a small history in their inbox, and the environment of every process."""
    require_service(_redis_up(), f"Redis at {BROKER}")
    env = deployment_env(pg_dagster_home, tmp_path, BROKER, BACKEND)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    tag = secrets.token_hex(2)
    owners = {f"ann_{tag}": None, f"bo_{tag}": None, f"cy_{tag}": PG_URL, f"dee_{tag}": None}
    registry = Registry()
    with dg.DagsterInstance.get() as instance:
        for k, (name, base) in enumerate(owners.items()):
            registry.add(name, base)
            memvault.open(registry.get(name).store).close()
            records, _ = generate(DemoConfig(sessions=6, days=20, seed=11 + k, end=TEST_NOW))
            (tmp_path / "inbox" / name).mkdir(parents=True)
            write_jsonl(records, tmp_path / "inbox" / name / "history.jsonl")
            instance.add_dynamic_partitions(PARTITIONS_NAME, [name])
    broken = registry.get(f"dee_{tag}").store.removeprefix("duckdb://")
    Path(broken).write_bytes(b"not a database" * 512)
    yield env | {"tag": tag}
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS owner_cy_{tag} CASCADE")


@pytest.fixture
def workers(deployment: dict[str, str], tmp_path: Path) -> Iterator[list[subprocess.Popen]]:
    """Two Celery workers of one process each, as `dagster-celery worker start` starts them."""
    names = [f"w{k}-{deployment['tag']}" for k in (1, 2)]
    config = ROOT / "deploy" / "celery.yaml"
    with celery_workers(names, BROKER, BACKEND, tmp_path, config) as started:
        yield list(started.values())


def _launch_all(job: str, owners: list[str]) -> dict[str, str]:
    """One process per owner running ``job`` on that owner's partition; their run ids."""
    launched = {
        owner: subprocess.Popen(
            [sys.executable, "-m", "tests.dagster.launcher", job, "unused", "--owner", owner],
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for owner in owners
    }
    run_ids = {}
    for owner, process in launched.items():
        out, err = process.communicate(timeout=900)
        assert process.returncode == 0, err[-3000:]
        run_ids[owner] = out.strip().splitlines()[-1]
    return run_ids


@pytest.mark.integration
@pytest.mark.owners20  # the daemon-queue night (test_owner_night.py) covers it in the default run
@pytest.mark.timeout(1800)
def test_a_night_of_four_owners_on_two_celery_workers(
    deployment: dict[str, str], workers: list[subprocess.Popen]
) -> None:
    from celery import Celery

    registry = Registry()
    owners = registry.names()
    broken = f"dee_{deployment['tag']}"
    statuses: dict[str, dict[str, dg.DagsterRunStatus]] = {o: {} for o in owners}
    started = time.monotonic()
    for job in NIGHT:
        for owner, run_id in _launch_all(job, owners).items():
            with dg.DagsterInstance.get() as instance:
                run = instance.get_run_by_id(run_id)
                assert run is not None and run.tags["dagster/partition"] == owner
                statuses[owner][job] = run.status
    seconds = time.monotonic() - started
    print(f"night of {len(owners)} owners on 2 Celery workers: {seconds:.1f} s")

    for owner in owners:
        expected = dg.DagsterRunStatus.FAILURE if owner == broken else dg.DagsterRunStatus.SUCCESS
        assert set(statuses[owner].values()) == {expected}, (owner, statuses[owner])
    for owner in owners:
        if owner == broken:
            continue
        with memvault.open(registry.get(owner).store) as store:
            counts = store.counts(["sessions", "blocks"])
            dreams = store.fetch("SELECT count(*) FROM runs WHERE kind LIKE 'dream%'")
        assert counts["sessions"] == 6 and counts["blocks"] > 0, (owner, counts)
        assert dreams[0][0] > 0, f"{owner}'s dream wrote no run"

    stats = Celery(broker=BROKER, backend=BACKEND).control.inspect(timeout=5).stats() or {}
    done = {name: sum((s.get("total") or {}).values()) for name, s in stats.items()}
    assert len(done) == 2 and all(n > 0 for n in done.values()), done
