"""The dream's gate per owner, from what the owners' own collector runs reported.

Five owners on DuckDB files and PostgreSQL schemas; four of them have had their inbox
collected by collect_job (6, 5, 4 and 2 sessions), one has never been collected. The real
dream sensor of the owners' code location, evaluated against that instance, requests a dream
for the two owners with at least 5 new sessions only, and says for each other owner why it
waits.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

import memvault
import pipelines.definitions
from memvault.owners import PARTITIONS_NAME, Registry
from memvault_demo.generator import DemoConfig, generate, write_jsonl
from pipelines.owners import OWNER_TAG, owner_definitions, owners_dream_gate_sensor
from resources import DreamResource
from tests.helpers import PG_URL, TEST_NOW, require_service

#: Each owner's sessions waiting in their inbox (None: never collected), and their backend.
SESSIONS = {"six": (6, "duckdb"), "five": (5, "pg"), "four": (4, "duckdb"), "two": (2, "pg"),
            "none": (None, "duckdb")}  # fmt: skip


@pytest.fixture
def owners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_available: bool
) -> Iterator[dict[str, str]]:
    """The owners (short name -> owner name), registered with their stores and histories."""
    require_service(postgres_available, f"PostgreSQL at {PG_URL}")
    monkeypatch.setenv("MEMVAULT_OWNERS", str(tmp_path / "owners.json"))
    monkeypatch.setenv("MEMVAULT_INBOX", str(tmp_path / "inbox"))
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    tag = secrets.token_hex(3)
    names = {short: f"{short}_{tag}" for short in SESSIONS}
    registry = Registry()
    for k, (short, (sessions, backend)) in enumerate(SESSIONS.items()):
        name = names[short]
        registry.add(name, PG_URL if backend == "pg" else None)
        memvault.open(registry.get(name).store).close()
        inbox = tmp_path / "inbox" / name
        inbox.mkdir(parents=True)
        if sessions:
            records, _ = generate(DemoConfig(sessions=sessions, days=10, seed=31 + k, end=TEST_NOW))
            write_jsonl(records, inbox / "history.jsonl")
    yield names
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as con:
        for short, (_, backend) in SESSIONS.items():
            if backend == "pg":
                con.execute(f"DROP SCHEMA IF EXISTS owner_{names[short]} CASCADE")


class _Heard(logging.Handler):
    """The lines the sensor logged (the tick's log in the UI)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_the_gate_opens_only_for_owners_with_five_new_sessions_collected(
    owners: dict[str, str],
) -> None:
    defs = owner_definitions(pipelines.definitions.single_owner_defs())
    collect = defs.resolve_job_def("collect_job")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTITIONS_NAME, sorted(owners.values()))
        for short, (sessions, _) in SESSIONS.items():
            if sessions is None:
                continue
            assert collect.execute_in_process(
                instance=instance, partition_key=owners[short]
            ).success
            with memvault.open(Registry().get(owners[short]).store) as store:
                assert store.counts(["sessions"])["sessions"] == sessions, short

        context = dg.build_sensor_context(
            instance=instance, resources={"dream": DreamResource()}, definitions=defs
        )
        heard = _Heard()
        context.log.addHandler(heard)
        result = owners_dream_gate_sensor(context)
        assert isinstance(result, dg.SensorResult)
        requests = result.run_requests or []
        assert sorted(r.partition_key or "" for r in requests) == sorted(
            [owners["six"], owners["five"]]
        )
        for request in requests:
            assert request.tags[OWNER_TAG] == request.partition_key
            assert request.tags["memvault/gate"].startswith("never dreamed")
        assert len({r.run_key for r in requests}) == 2, "one owner's run key hides another's"

        said = "\n".join(heard.lines)
        assert f"{owners['four']}: session gate: 4 new session(s)" in said, said
        assert f"{owners['two']}: session gate: 2 new session(s)" in said, said
        assert f"{owners['none']}: session gate, no collected_sessions" in said, said
        for short in ("six", "five"):
            assert f"{owners[short]}: " not in said, f"{short} was given a reason to wait"
