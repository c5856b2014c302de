"""The many-owners benchmark: nights of N small owners on one and on two Celery workers.

What it measures. For each number of owners N and each number of workers W, a fresh
deployment as docs/deploy.md describes it: a PostgreSQL Dagster instance
(deploy/dagster.owners.yaml, a database of its own), the code location with an owners
registry (every nightly asset partitioned by owner) and ``MEMVAULT_EXECUTOR=celery``, W
workers started with ``dagster-celery worker start -A dagster_celery.app -y
deploy/celery.yaml -- --concurrency 1`` on the local Redis, and N owners, each with a DuckDB
file of their own and a small generated history in their inbox (6 sessions over 20 days,
as in tests/dagster/test_celery_owners.py). An owner's night is ``collect_job`` then
``dream_job`` on that owner's partition, each run in a process of its own (as the daemon's
run launcher starts a run worker per run: ``tests/dagster/launcher.py``); at most
``MEMVAULT_OWNERS_RUNS`` (default 4) owners' nights are in flight at once, the same bound for
every W, so the second worker's speed-up is the workers' alone. The clock starts when the
workers answer a ping and stops when the last run process exits.

The figures, per configuration:

* total wall, wall per owner-night (total / N) and the median owner-night's latency (its
  collect run's process start to its dream run's process exit);
* the speed-up of W=2 over W=1 at the same N (the issue aims at >= 1.6x on 2 cores);
* from Dagster's event log, per owner-night (the sum over its two runs): the steps' own
  durations (``STEP_START`` to its end: the night's work), the worker's step start-up (the
  Celery task's "Executing steps ... in celery worker" to ``STEP_START``), the wait in the
  queue (Dagster's "Submitting celery task" to that worker event; it includes the task's
  loading of the job, the code location's import on a worker's first task), the run's
  launch (its process start to ``RUN_START``: a Python process, the code location, the
  instance), run
  start to its first step start, and the run's own time beyond its steps (run duration minus
  the steps': submission, queue, start-up, the executor's one-second poll);
* CPU seconds per owner-night of the run processes (the orchestrator's side) and of the
  workers (steps plus their start-up), and the workers' utilisation (the steps' own time over
  W x wall);
* an extrapolation, labelled as such, to 10,000 owners from each W at the largest N: worker
  hours per night (W x wall / N per owner) and the workers an 8-hour night needs, and the
  run processes' CPU hours on the Dagster host. Linear: it assumes owners as small as these
  and a Dagster instance and broker that keep up.

Run it (it is not part of the default run; it needs PostgreSQL and Redis)::

    MEMVAULT_OWNERS_SIZES=20,50,100 nice .venv/bin/pytest tests/perf/test_owners_perf.py -m perf -s

``MEMVAULT_OWNERS_SIZES`` is a comma list of owner counts (default ``20,50,100``),
``MEMVAULT_OWNERS_WORKERS`` the worker counts (default ``1,2``), ``MEMVAULT_OWNERS_RUNS``
the owner-nights in flight at once (default 4). A tiny check: ``MEMVAULT_OWNERS_SIZES=4``.
The JSON (``owners.json`` in the test's tmp dir and ``/tmp/memvault-perf/owners-<sizes>.json``)
is rewritten after each configuration, with the commit measured and the load average; the
table is printed at the end. Every owner's night must succeed, and with two workers both must
have run steps, or the test fails.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dagster as dg
import pytest

from tests.perf.test_scale import _setting  # the shell's setting (conftest drops MEMVAULT_*)

pytestmark = pytest.mark.perf

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
BROKER = "redis://127.0.0.1:6379/13"
BACKEND = "redis://127.0.0.1:6379/14"
NIGHT = ("collect_job", "dream_job")
SESSIONS, DAYS = 6, 20  # an owner's small history, as in the Celery launch test
OWNERS_AT_SCALE = 10_000
NIGHT_HOURS = 8
CACHE = Path("/tmp/memvault-perf")
#: A worker as docs/deploy.md starts one (its name and concurrency follow).
WORKER = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
          "-y", str(ROOT / "deploy" / "celery.yaml")]  # fmt: skip


SIZES = [int(n) for n in (_setting("MEMVAULT_OWNERS_SIZES") or "20,50,100").split(",") if n]
WORKERS = [int(n) for n in (_setting("MEMVAULT_OWNERS_WORKERS") or "1,2").split(",") if n]
IN_FLIGHT = int(_setting("MEMVAULT_OWNERS_RUNS") or 4)


# -- processes and their CPU -----------------------------------------------------------------


def _session_cpu_s(leader: int) -> float:
    """CPU seconds (user + system, with their finished children's) of every process in the
    session ``leader`` started (a Celery worker: its main process and its pool)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the name: state ppid pgrp session ... utime(12) stime(13) cutime(14) cstime(15)
        if int(fields[3]) == leader:
            total += sum(int(f) for f in fields[11:15])
    return total / tick


def _children_cpu_s() -> float:
    """CPU seconds of this process's finished children (the run processes once reaped)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


# -- one deployment --------------------------------------------------------------------------


@contextlib.contextmanager
def _dagster_database(pg_url: str) -> Iterator[dict[str, str]]:
    """A PostgreSQL database of its own for one configuration's Dagster instance; its
    ``DAGSTER_PG_*`` settings."""
    import psycopg

    database = f"mv_owners_bench_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {database}")
    parts = urlsplit(pg_url)
    try:
        yield {
            "DAGSTER_PG_HOST": parts.hostname or "127.0.0.1",
            "DAGSTER_PG_PORT": str(parts.port or 5432),
            "DAGSTER_PG_USER": parts.username or "postgres",
            "DAGSTER_PG_PASSWORD": parts.password or "",
            "DAGSTER_PG_DB": database,
        }
    finally:
        with psycopg.connect(pg_url, autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def _histories(folder: Path, count: int) -> list[Path]:
    """``count`` small generated histories (seeds 11, 12, ...), made once per test."""
    from memvault_demo.generator import DemoConfig, generate, write_jsonl
    from tests.helpers import TEST_NOW

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        path = folder / f"history{k}.jsonl"
        if not path.exists():
            records, _ = generate(
                DemoConfig(sessions=SESSIONS, days=DAYS, seed=11 + k, end=TEST_NOW)
            )
            write_jsonl(records, path)
        paths.append(path)
    return paths


def _deploy(root: Path, owners: int, histories: list[Path], pg: dict[str, str]) -> dict[str, str]:
    """The owners (a DuckDB file each, a history in each inbox) on a fresh instance; the
    environment of every process of this deployment."""
    import memvault
    from memvault.owners import PARTITIONS_NAME, Registry
    from tests.dagster.owner_night import deployment_env

    home = root / "dagster_home"
    home.mkdir(parents=True)
    env = os.environ.copy() | pg | deployment_env(home, root, BROKER, BACKEND)
    env.pop("MEMVAULT_LLM_BASE_URL", None)
    registry = Registry(root / "owners.json")
    names = [f"o{k:05d}" for k in range(owners)]
    for k, name in enumerate(names):
        registry.add(name)
        memvault.open(registry.get(name).store).close()
        (root / "inbox" / name).mkdir(parents=True)
        shutil.copy(histories[k % len(histories)], root / "inbox" / name / "history.jsonl")
    with _instance(env) as instance:
        instance.add_dynamic_partitions(PARTITIONS_NAME, names)
    return env


@contextlib.contextmanager
def _instance(env: dict[str, str]) -> Iterator[dg.DagsterInstance]:
    """The deployment's Dagster instance, opened in this process (its yaml reads DAGSTER_PG_*
    from the environment)."""
    saved = {k: os.environ.get(k) for k in env if k.startswith("DAGSTER_PG_")}
    os.environ.update({k: env[k] for k in saved})
    try:
        with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
            yield instance
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _purge_broker() -> None:
    """No step left in the benchmark's queue by an earlier, interrupted run."""
    from celery import Celery

    Celery(broker=BROKER, backend=BACKEND).control.purge()


@contextlib.contextmanager
def _workers(env: dict[str, str], count: int, root: Path) -> Iterator[list[int]]:
    """``count`` Celery workers of one process each, as ``dagster-celery worker start`` starts
    them; yields their session leaders' pids once all answer a ping."""
    from celery import Celery

    tag = secrets.token_hex(2)
    started = []
    for k in range(1, count + 1):
        log = (root / f"worker{k}.log").open("w")
        started.append(
            subprocess.Popen(
                [*WORKER, "--name", f"bench{k}-{tag}", "--", "--concurrency", "1"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    try:
        app = Celery(broker=BROKER, backend=BACKEND)
        deadline = time.monotonic() + 180
        while len([r for r in app.control.ping(timeout=1.0) or [] if tag in str(r)]) < count:
            assert time.monotonic() < deadline, (root / "worker1.log").read_text()[-3000:]
            assert all(p.poll() is None for p in started), (root / "worker1.log").read_text()[-3000:]  # fmt: skip
            time.sleep(1)
        yield [p.pid for p in started]
    finally:
        for process in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


# -- the night -------------------------------------------------------------------------------


@dataclass
class Launch:
    """One run's process: when it started and ended (wall clock, as the event log's)."""

    owner: str
    job: str
    started: float
    ended: float = 0.0
    run_id: str = ""
    error: str = ""


def _launch(env: dict[str, str], owner: str, job: str) -> Launch:
    """Run ``job`` on ``owner``'s partition in a process of its own (a run worker)."""
    launch = Launch(owner, job, time.time())
    done = subprocess.run(
        [sys.executable, "-m", "tests.dagster.launcher", job, "unused", "--owner", owner],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    launch.ended = time.time()
    if done.returncode != 0:
        launch.error = done.stderr[-3000:]
    else:
        launch.run_id = done.stdout.strip().splitlines()[-1]
    return launch


def _night(env: dict[str, str], owner: str) -> list[Launch]:
    """An owner's night: the collector, then the dream (not after a failed collect)."""
    launches = []
    for job in NIGHT:
        launches.append(_launch(env, owner, job))
        if launches[-1].error:
            break
    return launches


@dataclass
class RunFigures:
    """One run's times from its process and Dagster's event log, in seconds."""

    status: str
    launch_s: float  # process start -> RUN_START
    to_first_step_s: float  # RUN_START -> first STEP_START
    run_s: float  # RUN_START -> run end
    exit_s: float  # run end -> process exit
    steps_s: float  # sum of STEP_START -> step end
    step_startup_s: float  # sum of worker pick-up -> STEP_START
    queue_s: float  # sum of submission -> worker pick-up
    workers: dict[str, int] = field(default_factory=dict)  # steps per Celery worker
    errors: list[str] = field(default_factory=list)  # a failed run's failures


def _run_figures(instance: dg.DagsterInstance, launch: Launch) -> RunFigures:
    run = instance.get_run_by_id(launch.run_id)
    assert run is not None and run.tags.get("dagster/partition") == launch.owner
    submitted: dict[str, float] = {}
    picked: dict[str, float] = {}
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    workers: dict[str, int] = {}
    errors: list[str] = []
    run_start = run_end = 0.0
    for record in instance.all_logs(launch.run_id):
        event = record.dagster_event
        if event is None:
            continue
        kind, step, at = event.event_type_value, event.step_key, record.timestamp
        if kind == "PIPELINE_START":
            run_start = at
        elif kind in ("PIPELINE_SUCCESS", "PIPELINE_FAILURE", "PIPELINE_CANCELED"):
            run_end = at
            if kind != "PIPELINE_SUCCESS":
                error = getattr(event.event_specific_data, "error", None)
                errors.append(f"{record.user_message} {error or ''}"[:3000])
        elif kind == "ENGINE_EVENT" and getattr(event.event_specific_data, "error", None):
            errors.append(f"{record.user_message} {event.event_specific_data.error}"[:3000])  # type: ignore[union-attr]
            continue
        elif step is None:
            continue
        elif kind == "STEP_START":
            started[step] = at
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            ended[step] = at
            if kind == "STEP_FAILURE" and event.step_failure_data:
                errors.append(f"{step}: {event.step_failure_data.error}"[:2000])
        elif kind != "ENGINE_EVENT":
            continue
        elif record.user_message.startswith("Submitting celery task"):
            submitted.setdefault(step, at)
        elif "Celery worker" in (data := getattr(event.event_specific_data, "metadata", {})):
            # the worker's task began: "Executing steps ... in celery worker" (its message is
            # not stored; its metadata names the worker)
            picked.setdefault(step, at)
            name = str(getattr(data["Celery worker"], "value", data["Celery worker"]))
            workers[name] = workers.get(name, 0) + 1
    return RunFigures(
        status=run.status.value,
        launch_s=run_start - launch.started,
        to_first_step_s=(min(started.values()) - run_start) if started else 0.0,
        run_s=run_end - run_start,
        exit_s=launch.ended - run_end,
        steps_s=sum(ended[s] - started[s] for s in started if s in ended),
        step_startup_s=sum(started[s] - picked[s] for s in started if s in picked),
        queue_s=sum(picked[s] - submitted[s] for s in picked if s in submitted),
        workers=workers,
        errors=errors,
    )


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def measure(root: Path, owners: int, workers: int, histories: list[Path], pg_url: str) -> dict[str, Any]:  # fmt: skip
    """One configuration: N owners' nights on W workers; its figures."""
    with _dagster_database(pg_url) as pg:
        env = _deploy(root, owners, histories, pg)
        _purge_broker()
        with _workers(env, workers, root) as leaders:
            worker_cpu0 = sum(_session_cpu_s(p) for p in leaders)
            runs_cpu0 = _children_cpu_s()
            load0 = os.getloadavg()[0]
            started = time.time()
            names = [f"o{k:05d}" for k in range(owners)]
            with ThreadPoolExecutor(max_workers=IN_FLIGHT) as pool:
                nights = list(pool.map(lambda o: _night(env, o), names))
            wall = time.time() - started
            worker_cpu = sum(_session_cpu_s(p) for p in leaders) - worker_cpu0
            runs_cpu = _children_cpu_s() - runs_cpu0
            load1 = os.getloadavg()[0]
        failed = [(l.owner, l.job, l.error) for n in nights for l in n if l.error]  # noqa: E741
        assert not failed, failed[:3]
        with _instance(env) as instance:
            figures = [[(l, _run_figures(instance, l)) for l in night] for night in nights]  # noqa: E741
    runs = [f for night in figures for _, f in night]
    bad = [(x.owner, x.job, f.errors) for n in figures for x, f in n if f.status != "SUCCESS"]
    assert not bad, bad[:2]
    per_worker: dict[str, int] = {}
    for f in runs:
        for name, n in f.workers.items():
            per_worker[name] = per_worker.get(name, 0) + n
    latencies = sorted(n[-1].ended - n[0].started for n in nights)
    steps_total = sum(f.steps_s for f in runs)
    return {
        "owners": owners,
        "workers": workers,
        "in_flight": IN_FLIGHT,
        "wall_s": round(wall, 1),
        "wall_per_owner_night_s": round(wall / owners, 2),
        "night_latency_p50_s": round(statistics.median(latencies), 1),
        "night_latency_max_s": round(latencies[-1], 1),
        "runs": len(runs),
        "steps": sum(sum(f.workers.values()) for f in runs),
        "steps_per_worker": per_worker,
        # per owner-night (the sum over its collect and dream runs), mean over the owners
        "per_owner_night_s": {
            "steps_own": round(steps_total / owners, 2),
            "worker_step_startup": round(sum(f.step_startup_s for f in runs) / owners, 2),
            "queue_wait": round(sum(f.queue_s for f in runs) / owners, 2),
            "run_launch": round(sum(f.launch_s for f in runs) / owners, 2),
            "run_start_to_first_step": round(sum(f.to_first_step_s for f in runs) / owners, 2),
            "run_beyond_steps": round(sum(f.run_s - f.steps_s for f in runs) / owners, 2),
            "run_process_exit": round(sum(f.exit_s for f in runs) / owners, 2),
        },
        "cpu_per_owner_night_s": {
            "run_processes": round(runs_cpu / owners, 2),
            "workers": round(worker_cpu / owners, 2),
        },
        "worker_utilisation": round(steps_total / (workers * wall), 3),
        "worker_s_per_owner_night": round(workers * wall / owners, 2),
        "load_average": [round(load0, 2), round(load1, 2)],
    }


def extrapolate(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """10,000 owners from each worker count at its largest N: linear, so labelled."""
    out = []
    for w in sorted({c["workers"] for c in configs}):
        largest = max((c for c in configs if c["workers"] == w), key=lambda c: c["owners"])
        worker_hours = OWNERS_AT_SCALE * largest["worker_s_per_owner_night"] / 3600
        out.append(
            {
                "label": f"EXTRAPOLATED linearly from {largest['owners']} owners on {w} worker(s)",
                "owners": OWNERS_AT_SCALE,
                "worker_hours_per_night": round(worker_hours, 1),
                f"workers_for_{NIGHT_HOURS}h_night": math.ceil(worker_hours / NIGHT_HOURS),
                "run_process_cpu_hours": round(
                    OWNERS_AT_SCALE * largest["cpu_per_owner_night_s"]["run_processes"] / 3600, 1
                ),
            }
        )
    return out


def speedups(configs: list[dict[str, Any]]) -> dict[int, float]:
    """W=2's wall over W=1's, per N measured with both."""
    wall = {(c["owners"], c["workers"]): c["wall_s"] for c in configs}
    return {
        n: round(wall[(n, 1)] / wall[(n, 2)], 2)
        for n in sorted({c["owners"] for c in configs})
        if (n, 1) in wall and (n, 2) in wall
    }


def table(configs: list[dict[str, Any]]) -> str:
    head = (
        f"{'owners':>6} {'W':>2} {'wall s':>8} {'s/night':>8} {'p50 lat':>8} {'steps':>7} "
        f"{'startup':>7} {'queue':>7} {'launch':>7} {'1st step':>8} {'run-steps':>9} "
        f"{'cpu runs':>8} {'cpu wkrs':>8} {'util':>5} {'speed-up':>8}"
    )
    up = speedups(configs)
    lines = [head, "-" * len(head)]
    for c in configs:
        p, cpu = c["per_owner_night_s"], c["cpu_per_owner_night_s"]
        ratio = f"{up[c['owners']]:.2f}x" if c["workers"] == 2 and c["owners"] in up else ""
        lines.append(
            f"{c['owners']:>6} {c['workers']:>2} {c['wall_s']:>8.1f} "
            f"{c['wall_per_owner_night_s']:>8.2f} {c['night_latency_p50_s']:>8.1f} "
            f"{p['steps_own']:>7.2f} {p['worker_step_startup']:>7.2f} {p['queue_wait']:>7.2f} "
            f"{p['run_launch']:>7.2f} {p['run_start_to_first_step']:>8.2f} "
            f"{p['run_beyond_steps']:>9.2f} {cpu['run_processes']:>8.2f} "
            f"{cpu['workers']:>8.2f} {c['worker_utilisation']:>5.2f} {ratio:>8}"
        )
    lines.append(
        "per owner-night, seconds: steps = the steps' own durations (the night's work); startup "
        "= a worker's step start-up; queue = waiting for a worker; launch = run process start "
        "to run start; 1st step = run start to its first step; run-steps = run durations minus "
        "their steps'; cpu = CPU seconds of the run processes / of the workers; util = steps' "
        "time over workers x wall"
    )
    for e in extrapolate(configs):
        lines.append(
            f"{e['label']}: {e['owners']:,} owners need {e['worker_hours_per_night']} worker-hours "
            f"a night = {e[f'workers_for_{NIGHT_HOURS}h_night']} workers for an {NIGHT_HOURS}-hour "
            f"night; run processes {e['run_process_cpu_hours']} CPU-hours on the Dagster host"
        )
    return "\n".join(lines)


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(BROKER, socket_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.mark.timeout(12 * 3600)
def test_nights_of_many_owners_on_one_and_two_workers(
    tmp_path: Path, postgres_available: bool
) -> None:
    from tests.helpers import PG_URL, require_service

    require_service(postgres_available, f"PostgreSQL at {PG_URL}")
    require_service(_redis_up(), f"Redis at {BROKER}")
    histories = _histories(tmp_path / "histories", min(max(SIZES), 20))
    label = "-".join(map(str, SIZES)) + ("" if WORKERS == [1, 2] else f"-w{'-'.join(map(str, WORKERS))}")  # fmt: skip
    outputs = [tmp_path / "owners.json", CACHE / f"owners-{label}.json"]
    CACHE.mkdir(exist_ok=True)
    report: dict[str, Any] = {
        "commit": _commit(),
        "sizes": SIZES,
        "workers": WORKERS,
        "in_flight": IN_FLIGHT,
        "history": {"sessions": SESSIONS, "days": DAYS},
        "cpus": os.cpu_count(),
        "configs": [],
    }
    lock = threading.Lock()
    for owners in SIZES:
        for workers in WORKERS:
            root = tmp_path / f"n{owners}-w{workers}"
            config = measure(root, owners, workers, histories, PG_URL)
            with lock:
                report["configs"].append(config)
                report["speed_up"] = speedups(report["configs"])
                report["extrapolated"] = extrapolate(report["configs"])
                for path in outputs:
                    path.write_text(json.dumps(report, indent=2) + "\n")
            print(f"\n{owners} owners on {workers} worker(s): {json.dumps(config)}", flush=True)
            shutil.rmtree(root / "owners", ignore_errors=True)  # the stores: not needed now
    print("\n" + table(report["configs"]))
    print(f"JSON: {outputs[1]}")
    for config in report["configs"]:
        if config["workers"] >= 2:
            busy = [n for n in config["steps_per_worker"].values() if n > 0]
            assert len(busy) == config["workers"], config["steps_per_worker"]
