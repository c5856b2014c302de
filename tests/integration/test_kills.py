"""Kill -9 at a random point of a dream, a garden run, an ingest and an undo: the next run
completes, nothing hangs, nothing is lost.

A killed in-process run keeps its Dagster status and its slot in the store pool; without
recovery every later command would wait for that slot forever. The points are drawn from
``MEMVAULT_KILL_SEED`` (printed), so a failure can be replayed.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memvault
from memvault.demo.generator import DemoConfig, generate, write_jsonl
from memvault.temporal import data_loss_violations
from tests.dagster.dream_support import seed_demo_store
from tests.helpers import export_text

pytestmark = pytest.mark.integration
SEED = int(os.environ.get("MEMVAULT_KILL_SEED") or random.SystemRandom().randrange(10**6))
RNG = random.Random(SEED)
MEMVAULT = str(Path(sys.executable).with_name("memvault"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    print(f"\nkill points from MEMVAULT_KILL_SEED={SEED}")
    return os.environ | {
        "DAGSTER_HOME": str(tmp_path / ".dagster"),
        "MEMVAULT_EMBEDDER": "hashing",
        "MEMVAULT_CLAUDE_PROJECTS": "none",
        "MEMVAULT_INBOX": str(tmp_path / "inbox"),
        "MEMVAULT_LOCK_TIMEOUT": "60",
    }


def _kill_during(args: list[str], env: dict[str, str], cwd: Path, after: float) -> None:
    process = subprocess.Popen(
        [MEMVAULT, *args], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(after)
    process.send_signal(signal.SIGKILL)
    process.wait()


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [MEMVAULT, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_killed_dream_does_not_block_the_next(tmp_path: Path, env: dict[str, str]) -> None:
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=24)
    point = RNG.uniform(3.0, 9.0)
    _kill_during(["dream", "--force", "--store", store], env, tmp_path, point)
    started = time.monotonic()
    done = _run(["dream", "--force", "--store", store], env, tmp_path)
    print(f"dream killed after {point:.1f} s; the next took {time.monotonic() - started:.1f} s")
    with memvault.open(store) as opened:
        assert data_loss_violations(opened).is_empty()
        statuses = dict(
            opened.fetch("SELECT status, count(*) FROM runs WHERE kind = 'dream' GROUP BY 1")
        )
    assert statuses.get("succeeded", 0) >= 1 and statuses.get("running", 0) == 0, statuses
    if statuses.get("failed"):  # killed mid-run: said so, once
        assert "is gone" in done.stderr


def test_a_killed_garden_run_does_not_block_the_next(tmp_path: Path, env: dict[str, str]) -> None:
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=24)
    point = RNG.uniform(3.0, 8.0)
    _kill_during(["garden", "--store", store], env, tmp_path, point)
    _run(["garden", "--store", store], env, tmp_path)
    print(f"garden killed after {point:.1f} s")
    with memvault.open(store) as opened:
        running = opened.fetch("SELECT count(*) FROM runs WHERE status = 'running'")[0][0]
    assert running == 0


def test_a_killed_ingest_leaves_nothing_half_written(tmp_path: Path, env: dict[str, str]) -> None:
    records, _ = generate(DemoConfig(sessions=150, days=120, seed=5))
    history = tmp_path / "history.jsonl"
    write_jsonl(records, history)
    clean = f"duckdb://{tmp_path / 'clean.duckdb'}"
    _run(["ingest", str(history), "--store", clean], env, tmp_path)
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    point = RNG.uniform(2.0, 6.0)
    _kill_during(["ingest", str(history), "--store", store], env, tmp_path, point)
    with memvault.open(store) as opened:
        half = opened.counts(("blocks",))["blocks"]
    assert half in (0, memvault.open(clean).counts(("blocks",))["blocks"]), "all or nothing"
    _run(["ingest", str(history), "--store", store], env, tmp_path)
    with memvault.open(store) as a, memvault.open(clean) as b:
        assert a.counts() == b.counts()
        assert a.fetch("SELECT count(*) FROM runs WHERE status = 'running'")[0][0] == 0


def test_a_killed_undo_can_be_run_again(tmp_path: Path, env: dict[str, str]) -> None:
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=60)
    with memvault.open(store) as opened:
        before = export_text(opened)
        [(ingest_run,)] = opened.fetch("SELECT id FROM runs WHERE kind = 'ingest'")
    point = RNG.uniform(2.0, 5.0)
    _kill_during(["undo", ingest_run, "--store", store], env, tmp_path, point)
    with memvault.open(store) as opened:
        state = opened.run(ingest_run)["status"]  # type: ignore[index]
        assert export_text(opened) in (before, "") or state == "undone"
    if state != "undone":
        _run(["undo", ingest_run, "--store", store], env, tmp_path)
    with memvault.open(store) as opened:
        assert opened.counts(("blocks",))["blocks"] == 0
        assert opened.run(ingest_run)["status"] == "undone"  # type: ignore[index]
        assert opened.fetch("SELECT count(*) FROM runs WHERE status = 'running'")[0][0] == 0
