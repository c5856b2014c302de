"""A night of many owners as a deployment runs it: the daemon's run queue, two Celery workers.

The owners' stores alternate between DuckDB files and PostgreSQL schemas of one server, each
with a small generated history in its inbox. Every owner's collect_job is submitted to the
queue (as the per-owner schedule's requests are), the daemon launches them under
deploy/dagster.owners.yaml's limits and their steps run on two workers started here; then
each owner's dream_job. One owner's store is damaged (its embeddings table refuses every
write): its collect run fails at that step, every other owner's night succeeds; once the
store is repaired, the UI's "re-execute from failure" resumes that owner at the failed step
(the collected sessions are not collected again) and its dream follows.

Four owners in the default run; the night of 20 owners runs with ``-m owners20`` (see
docs/deploy.md for the command and what it costs).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

import memvault
from memvault.owners import PARTITIONS_NAME, Registry
from memvault_demo.generator import DemoConfig, generate, write_jsonl
from tests.dagster.owner_night import (
    ROOT,
    celery_workers,
    daemon,
    deployment_env,
    launchpad,
    step_events,
    steps_done,
    wait_for,
)
from tests.helpers import PG_URL, TEST_NOW, require_service

#: Redis databases of this test's own (the four-owner test has 11 and 12, the benchmark 13
#: and 14): a worker takes any task on its broker, and another instance's run is unknown to it.
BROKER = "redis://127.0.0.1:6379/9"
BACKEND = "redis://127.0.0.1:6379/10"
SESSIONS = 6


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(BROKER, socket_timeout=2).ping())
    except redis.RedisError:
        return False


def _damage(schema: str) -> None:
    """The owner's embeddings table refuses every write (a damaged store)."""
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as con:
        con.execute(
            f"CREATE FUNCTION {schema}.damaged() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'simulated damage: embeddings unwritable'; END $$"
        )
        con.execute(
            f"CREATE TRIGGER damaged BEFORE INSERT OR UPDATE ON {schema}.embeddings "
            f"FOR EACH ROW EXECUTE FUNCTION {schema}.damaged()"
        )


def _repair(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as con:
        con.execute(f"DROP TRIGGER damaged ON {schema}.embeddings")
        con.execute(f"DROP FUNCTION {schema}.damaged()")


@pytest.fixture
def deployment(
    tmp_path: Path, pg_dagster_home: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> Iterator[dict[str, str]]:
    """``count`` owners, DuckDB files and PostgreSQL schemas in turn, each with a history in
    their inbox; the environment every process of the deployment shares."""
    require_service(_redis_up(), f"Redis at {BROKER}")
    env = deployment_env(pg_dagster_home, tmp_path, BROKER, BACKEND)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    tag = secrets.token_hex(2)
    registry = Registry()
    names = [f"o{k:02d}_{tag}" for k in range(count)]
    with dg.DagsterInstance.get() as instance:
        for k, name in enumerate(names):
            registry.add(name, PG_URL if k % 2 else None)
            memvault.open(registry.get(name).store).close()
            records, _ = generate(DemoConfig(sessions=SESSIONS, days=20, seed=11 + k, end=TEST_NOW))
            (tmp_path / "inbox" / name).mkdir(parents=True)
            write_jsonl(records, tmp_path / "inbox" / name / "history.jsonl")
        instance.add_dynamic_partitions(PARTITIONS_NAME, names)
    damaged = names[1]  # a PostgreSQL schema
    _damage(f"owner_{damaged}")
    yield {"damaged": damaged, "tag": tag}
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as con:
        for k, name in enumerate(names):
            if k % 2:
                con.execute(f"DROP SCHEMA IF EXISTS owner_{name} CASCADE")


def _night(deployment: dict[str, str], tmp_path: Path) -> None:
    from celery import Celery

    damaged = deployment["damaged"]
    registry = Registry()
    owners = registry.names()
    config = ROOT / "deploy" / "celery.yaml"
    workers = [f"w1-{deployment['tag']}", f"w2-{deployment['tag']}"]
    with (
        dg.DagsterInstance.get() as instance,
        celery_workers(workers, BROKER, BACKEND, tmp_path, config),
        launchpad(instance) as pad,
    ):
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        pad.stop_sensors()
        with daemon(tmp_path):
            started = time.monotonic()
            collects = {o: pad.submit("collect_job", o) for o in owners}
            runs = wait_for(instance, collects.values(), 1800, tmp_path)
            collected = time.monotonic()
            for owner, run_id in collects.items():
                want = (
                    dg.DagsterRunStatus.FAILURE if owner == damaged else dg.DagsterRunStatus.SUCCESS
                )
                assert runs[run_id].status == want, (owner, runs[run_id].status)
            failed = collects[damaged]
            assert step_events(instance, failed, dg.DagsterEventType.STEP_FAILURE) == [
                "memory_embeddings"
            ]

            dreams = {o: pad.submit("dream_job", o) for o in owners if o != damaged}
            _repair(f"owner_{damaged}")
            resumed = pad.reexecute_from_failure(failed)
            wait_for(instance, [resumed], 1800, tmp_path)
            dreams[damaged] = pad.submit("dream_job", damaged)
            runs = wait_for(instance, [resumed, *dreams.values()], 1800, tmp_path)
            seconds = time.monotonic() - started
        print(
            f"\nnight of {len(owners)} owners (daemon queue, 2 Celery workers): collect "
            f"{collected - started:.0f} s, whole night {seconds:.0f} s, "
            f"{seconds / len(owners):.1f} s per owner"
        )
        for owner, run_id in dreams.items():
            assert runs[run_id].status == dg.DagsterRunStatus.SUCCESS, owner
            assert runs[run_id].tags["dagster/partition"] == owner

        again = runs[resumed]
        assert again.status == dg.DagsterRunStatus.SUCCESS
        assert again.parent_run_id == failed and again.tags["dagster/partition"] == damaged
        assert step_events(instance, resumed, dg.DagsterEventType.STEP_START) == [
            "memory_embeddings"
        ], "the re-execution redid a step that had succeeded"

        done = steps_done(Celery(broker=BROKER, backend=BACKEND), workers)
        assert all(n > 0 for n in done.values()), f"a worker did nothing: {done}"

    for owner in owners:
        with memvault.open(registry.get(owner).store) as store:
            counts = store.counts(["sessions", "blocks", "embeddings"])
            dreams_written = store.fetch(
                "SELECT count(*) FROM runs WHERE kind = 'dream' AND status = 'succeeded'"
            )[0][0]
        assert counts["sessions"] == SESSIONS and counts["blocks"] > 0, (owner, counts)
        assert counts["embeddings"] > 0, (owner, counts)
        assert dreams_written == 1, f"{owner}: {dreams_written} dreams"


@pytest.mark.integration
@pytest.mark.timeout(3600)
@pytest.mark.parametrize(
    "count",
    [pytest.param(4, id="4-owners"), pytest.param(20, id="20-owners", marks=pytest.mark.owners20)],
)
def test_a_night_of_owners_from_the_daemons_queue_on_two_celery_workers(
    deployment: dict[str, str], tmp_path: Path, count: int
) -> None:
    _night(deployment, tmp_path)
