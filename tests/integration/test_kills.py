"""Kill -9 at a named point of a dream, a garden run, an ingest and an undo: the next run
completes, nothing hangs, nothing is lost.

A killed in-process run keeps its Dagster status and its slot in the store pool; without
recovery every later command would wait for that slot forever. Each process is stopped at a
pause point of memvault.testing_hooks (``MEMVAULT_TEST_PAUSE_AT``), so every run of this file
kills at the same, meaningful place: mid transaction, or after some writes were committed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memvault
from memvault.ingest import CHUNK_RECORDS
from memvault.temporal import data_loss_violations
from memvault_demo.generator import DemoConfig, generate, write_jsonl
from tests.dagster.dream_support import seed_demo_store
from tests.helpers import TEST_NOW, export_text

pytestmark = pytest.mark.integration
MEMVAULT = str(Path(sys.executable).with_name("memvault"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return os.environ | {
        "DAGSTER_HOME": str(tmp_path / ".dagster"),
        "MEMVAULT_EMBEDDER": "hashing",
        "MEMVAULT_CLAUDE_PROJECTS": "none",
        "MEMVAULT_INBOX": str(tmp_path / "inbox"),
        "MEMVAULT_LOCK_TIMEOUT": "60",
    }


def _kill_at(point: str, args: list[str], env: dict[str, str], cwd: Path) -> None:
    """Start ``memvault ARGS``, wait until it pauses at ``point``, and SIGKILL it there."""
    marker = cwd / f"paused-at-{point}"
    paused = env | {"MEMVAULT_TEST_PAUSE_AT": point, "MEMVAULT_TEST_PAUSE_MARKER": str(marker)}
    process = subprocess.Popen(
        [MEMVAULT, *args], env=paused, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300
    while not marker.exists():
        if process.poll() is not None:
            raise AssertionError(
                f"memvault ended before {point}: {process.stderr.read()[-2000:]!r}"
            )  # type: ignore[union-attr]
        assert time.monotonic() < deadline, f"memvault never reached {point}"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL


def _running(store: str) -> list[tuple[str, str]]:
    with memvault.open(store) as opened:
        return opened.fetch("SELECT id, kind FROM runs WHERE status = 'running'")


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [MEMVAULT, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_killed_dream_does_not_block_the_next(tmp_path: Path, env: dict[str, str]) -> None:
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=24)
    with memvault.open(store) as opened:
        before = export_text(opened)
    _kill_at("dream-consolidate", ["dream", "--force", "--store", store], env, tmp_path)
    [(killed, kind)] = _running(store)
    assert kind == "dream"
    # The next run of any kind notices the dead dream and reverts it (all or nothing).
    listed = _run(["runs", "--store", store], env, tmp_path)
    assert "failed and was reverted" in listed.stderr and "is gone" in listed.stderr
    with memvault.open(store) as opened:
        assert opened.run(killed)["status"] == "reverted"  # type: ignore[index]
        assert export_text(opened) == before
    _run(["dream", "--force", "--store", store], env, tmp_path)
    with memvault.open(store) as opened:
        assert data_loss_violations(opened).is_empty()
        statuses = dict(
            opened.fetch("SELECT status, count(*) FROM runs WHERE kind = 'dream' GROUP BY 1")
        )
    assert statuses == {"reverted": 1, "succeeded": 1}, statuses
    assert _running(store) == []


def test_a_killed_garden_run_does_not_block_the_next(tmp_path: Path, env: dict[str, str]) -> None:
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=24)
    _kill_at("garden-dedup", ["garden", "--store", store], env, tmp_path)
    assert [kind for _, kind in _running(store)], "the kill left no run in progress"
    _run(["garden", "--store", store], env, tmp_path)
    assert _running(store) == []


@pytest.mark.parametrize("staged", [True, False], ids=["staged in the store", "in memory"])
def test_a_killed_ingest_leaves_nothing_half_written(
    tmp_path: Path, env: dict[str, str], staged: bool
) -> None:
    records, _ = generate(DemoConfig(sessions=150, days=120, seed=5, end=TEST_NOW))
    history = tmp_path / "history.jsonl"
    write_jsonl(records, history)
    if staged:  # past one chunk (the second copy repeats the first identically: dropped)
        history.write_text(history.read_text() * 2)
    lines = len(history.read_text().splitlines())
    assert (lines > CHUNK_RECORDS) == staged
    clean = f"duckdb://{tmp_path / 'clean.duckdb'}"
    _run(["ingest", str(history), "--store", clean], env, tmp_path)
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    _kill_at("ingest-written", ["ingest", str(history), "--store", store], env, tmp_path)
    with memvault.open(store) as opened:
        assert opened.counts(("blocks", "triples", "audit_log")) == {
            "blocks": 0,
            "triples": 0,
            "audit_log": 0,
        }, "every row was inserted before the kill, none may be left"
        # its staging, when it had one in the store
        assert opened.fetch("SELECT count(*) FROM ingest_staging") == [(int(staged),)]
    _run(["ingest", str(history), "--store", store], env, tmp_path)
    with memvault.open(store) as a, memvault.open(clean) as b:
        assert a.counts() == b.counts()
        assert a.fetch("SELECT count(*) FROM ingest_staging") == [(0,)], "dropped at the next start"
        assert not a.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'ingest_stage_%'"
        )
    assert _running(store) == []


def test_a_killed_undo_can_be_run_again(tmp_path: Path, env: dict[str, str]) -> None:
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=60)
    with memvault.open(store) as opened:
        before = export_text(opened)
        [(ingest_run,)] = opened.fetch("SELECT id FROM runs WHERE kind = 'ingest'")
    _kill_at("undo-restored", ["undo", ingest_run, "--store", store], env, tmp_path)
    with memvault.open(store) as opened:
        # Every row was restored before the kill, in a transaction that never committed.
        assert export_text(opened) == before
        assert opened.run(ingest_run)["status"] == "succeeded"  # type: ignore[index]
    _run(["undo", ingest_run, "--store", store], env, tmp_path)
    with memvault.open(store) as opened:
        assert opened.counts(("blocks",))["blocks"] == 0
        assert opened.run(ingest_run)["status"] == "undone"  # type: ignore[index]
    assert _running(store) == [], "the killed undo is marked failed by the next"
