"""Many owners in the code location: the nightly assets partitioned by owner, the profile by
owner × day, each run on its owner's store and inbox, the dream's gate evaluated per owner.

The owner-partitioned definitions are built from the single-owner ones (as the code location
does when an owners registry exists); without a registry the code location is unchanged.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

import memvault
import pipelines.definitions
from memvault.owners import PARTITIONS_NAME, Registry
from pipelines.owners import OWNER_TAG, owner_definitions, owners_dream_gate_sensor
from resources import DreamResource
from tests.cli.test_owners import SMALL, bob_history
from tests.helpers import PG_URL, require_service

OWNER_DEFS = owner_definitions(pipelines.definitions.single_owner_defs())


def test_without_an_owners_registry_the_code_location_is_the_single_owner_one() -> None:
    assert not Registry().path.exists()
    assert pipelines.definitions.defs is pipelines.definitions.single_owner_defs()
    job = pipelines.definitions.defs.resolve_job_def("collect_job")
    assert job.partitions_def is None


def test_every_nightly_job_is_partitioned_by_owner_and_the_profile_by_owner_and_day() -> None:
    for name in ("collect_job", "dream_job", "garden_job", "lint_job", "layers_job",
                 "tiering_job", "prefetch_job", "gaps_job"):  # fmt: skip
        partitions = OWNER_DEFS.resolve_job_def(name).partitions_def
        assert isinstance(partitions, dg.DynamicPartitionsDefinition), name
        assert partitions.name == PARTITIONS_NAME
    profile = OWNER_DEFS.resolve_job_def("profile_job").partitions_def
    assert isinstance(profile, dg.MultiPartitionsDefinition)
    assert sorted(d.name for d in profile.partitions_defs) == ["day", "owner"]
    graph = OWNER_DEFS.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        assert graph.get(key).partitions_def is not None, f"{key} is not partitioned by owner"


@pytest.fixture(params=["duckdb", "postgresql"])
def owners(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    """Two owners (their stores on DuckDB files or PostgreSQL schemas), each with their own
    history waiting in their own inbox."""
    monkeypatch.setenv("MEMVAULT_OWNERS", str(tmp_path / "owners.json"))
    monkeypatch.setenv("MEMVAULT_INBOX", str(tmp_path / "inbox"))
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    base = None
    if request.param == "postgresql":
        require_service(request.getfixturevalue("postgres_available"), f"PostgreSQL at {PG_URL}")
        base = PG_URL
    tag = secrets.token_hex(3)
    alice, bob = f"alice_{tag}", f"bob_{tag}"
    registry = Registry()
    for name, history in ((alice, SMALL), (bob, bob_history(tmp_path))):
        registry.add(name, base)
        (tmp_path / "inbox" / name).mkdir(parents=True)
        (tmp_path / "inbox" / name / "history.jsonl").write_bytes(history.read_bytes())
    yield alice, bob
    if base:
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True) as con:
            for name in (alice, bob):
                con.execute(f"DROP SCHEMA IF EXISTS owner_{name} CASCADE")


def _texts(owner: str) -> list[str]:
    with memvault.open(Registry().get(owner).store) as store:
        return sorted(r[0] for r in store.fetch("SELECT text FROM blocks"))


def test_each_run_tends_its_owners_store_and_inbox_only(owners: tuple[str, str]) -> None:
    alice, bob = owners
    collect = owner_definitions(pipelines.definitions.single_owner_defs()).resolve_job_def(
        "collect_job"
    )  # built now: the inbox of the environment set by the fixture
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTITIONS_NAME, [alice, bob])
        result = collect.execute_in_process(instance=instance, partition_key=alice)
        assert result.success
        assert _texts(alice) == ["Ada works at Acme Corp."]
        assert _texts(bob) == [], "Alice's run wrote Bob's store"
        assert collect.execute_in_process(instance=instance, partition_key=bob).success
        assert _texts(bob) == ["Grace works at Globex Inc."]
        assert _texts(alice) == ["Ada works at Acme Corp."]

        unnamed = collect.execute_in_process(instance=instance, raise_on_error=False)
        assert not unnamed.success, "a run without an owner opened some store"

        mark = instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("collected_sessions"), asset_partitions=[alice]
            ),
            limit=1,
        ).records[0]
        assert mark.partition_key == alice


def test_a_profile_day_of_one_owner(owners: tuple[str, str]) -> None:
    alice, bob = owners
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTITIONS_NAME, [alice, bob])
        defs = owner_definitions(pipelines.definitions.single_owner_defs())
        collect = defs.resolve_job_def("collect_job")
        assert collect.execute_in_process(instance=instance, partition_key=alice).success
        key = dg.MultiPartitionKey({"owner": alice, "day": "2026-01-05"})
        assert str(key) == f"2026-01-05|{alice}"
        profile = defs.resolve_job_def("profile_job")
        result = profile.execute_in_process(instance=instance, partition_key=key)
        assert result.success
        shown = result.asset_materializations_for_node("daily_snapshot")
        assert [m.partition for m in shown] == [key]
    with memvault.open(Registry().get(alice).store) as store:
        assert [str(r[0]) for r in store.fetch("SELECT day FROM profile_daily")] == ["2026-01-05"]
    with memvault.open(Registry().get(bob).store) as store:
        assert store.fetch("SELECT day FROM profile_daily") == []


def _collected(instance: dg.DagsterInstance, owner: str, sessions: int) -> None:
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            "collected_sessions", partition=owner, metadata={"sessions_total": sessions}
        )
    )


def test_the_dream_gate_opens_only_for_owners_with_five_new_sessions() -> None:
    with dg.instance_for_test() as instance:
        owners = ["ana", "ben", "cy"]
        instance.add_dynamic_partitions(PARTITIONS_NAME, owners)
        _collected(instance, "ana", 6)
        _collected(instance, "ben", 2)  # cy: nothing collected yet
        context = dg.build_sensor_context(
            instance=instance, resources={"dream": DreamResource()}, definitions=OWNER_DEFS
        )
        result = owners_dream_gate_sensor(context)
        assert isinstance(result, dg.SensorResult)
        requests = result.run_requests or []
        assert [r.partition_key for r in requests] == ["ana"]
        assert requests[0].tags[OWNER_TAG] == "ana"

        _collected(instance, "ana", 6)
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                "dream_prune",
                partition="ana",
                metadata={"last_dream_at": 1.0e10, "sessions_total_at_last_dream": 6},
            )
        )
        skipped = owners_dream_gate_sensor(
            dg.build_sensor_context(
                instance=instance, resources={"dream": DreamResource()}, definitions=OWNER_DEFS
            )
        )
        assert isinstance(skipped, dg.SkipReason)
        reason = skipped.skip_message or ""
        for owner in owners:
            assert f"{owner}: " in reason, reason
        assert "cy: session gate, no collected_sessions" in reason
