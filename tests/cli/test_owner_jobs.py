"""The job commands with several owners: `memvault --owner NAME collect|dream|lint|garden|
profile backfill` run the owner's partition of the code location's job, as the UI runs one
partition, and a job command that names no owner is refused before anything runs.

Each command runs in its own process, as a user types it: the code location is built
owner-partitioned when the process starts with a registry.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

import memvault
from memvault.owners import PARTITIONS_NAME, Registry
from pipelines.owners import OWNER_TAG
from tests.cli.test_owners import SMALL, bob_history, env  # noqa: F401 (the fixture)

ROOT = Path(__file__).resolve().parents[2]
MEMVAULT = Path(sys.executable).parent / "memvault"


def _memvault(*argv: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [str(MEMVAULT), *argv],
        env=os.environ | {"PYTHONPATH": path, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
    )


def _partitions(home: Path, owners: list[str]) -> None:
    """The owners' partitions in the instance, as `memvault owners add` adds them."""
    home.mkdir(exist_ok=True)
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions(PARTITIONS_NAME, owners)


def _texts(owner: str) -> list[str]:
    with memvault.open(Registry().get(owner).store) as store:
        return sorted(r[0] for r in store.fetch("SELECT text FROM blocks"))


def test_a_job_command_runs_the_owners_partition_and_refuses_none(
    env: Path,  # noqa: F811 (the fixture)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Collect and a profile backfill for Alice (the owner routing is the same for every job
    command and store backend: the partition tag picks the store)."""
    monkeypatch.setenv("MEMVAULT_INBOX", str(env / "inbox"))
    monkeypatch.setenv("MEMVAULT_PROFILE_START", "2026-01-01")
    alice, bob = "alice", "bob"
    registry = Registry()
    for name, history in ((alice, SMALL), (bob, bob_history(env))):
        registry.add(name)
        (env / "inbox" / name).mkdir(parents=True)
        (env / "inbox" / name / "history.jsonl").write_bytes(history.read_bytes())
    _partitions(env / "dagster_home", [alice, bob])

    refused = _memvault("collect")
    assert refused.returncode != 0
    assert "name one with --owner NAME" in refused.stderr, refused.stderr[-2000:]

    done = _memvault("--owner", alice, "collect")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _texts(alice) == ["Ada works at Acme Corp."]
    assert _texts(bob) == [], "Alice's collect wrote Bob's store"

    done = _memvault("--owner", alice, "backfill", "--from", "2026-01-04", "--to", "2026-01-05")
    assert done.returncode == 0, done.stderr[-3000:]
    with memvault.open(Registry().get(alice).store) as store:
        days = sorted(str(r[0]) for r in store.fetch("SELECT day FROM profile_daily"))
    assert days == ["2026-01-04", "2026-01-05"]
    with memvault.open(Registry().get(bob).store) as store:
        assert store.fetch("SELECT day FROM profile_daily") == []

    with dg.DagsterInstance.get() as instance:
        (run,) = instance.get_runs(dg.RunsFilter(job_name="collect_job"))
        assert run.tags["dagster/partition"] == alice
        assert run.tags[OWNER_TAG] == alice
        assert run.status == dg.DagsterRunStatus.SUCCESS
        marks = instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("collected_sessions"), asset_partitions=[alice]
            ),
            limit=5,
        ).records
        assert [m.partition_key for m in marks] == [alice]
        runs = instance.get_runs(dg.RunsFilter(job_name="profile_job"))
        assert sorted(r.tags["dagster/partition"] for r in runs) == [
            f"2026-01-04|{alice}",
            f"2026-01-05|{alice}",
        ]
