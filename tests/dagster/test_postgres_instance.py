"""The dagster-postgres instance configuration, proven against the real PostgreSQL server."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg
import psycopg
import pytest

from assets.collector import collected_sessions
from resources import CollectorSourcesResource, JudgeResource, StoreResource
from tests.helpers import FIXTURES, PG_URL, require_service

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pg_dagster_home(
    tmp_path: Path, postgres_available: bool, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A DAGSTER_HOME using deploy/dagster.postgres.yaml, on a database of its own."""
    require_service(postgres_available, f"PostgreSQL at {PG_URL}")
    database = f"mv_dagster_{secrets.token_hex(4)}"
    with psycopg.connect(PG_URL, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {database}")
    parts = urlsplit(PG_URL)
    for var, value in {
        "DAGSTER_PG_HOST": parts.hostname or "127.0.0.1",
        "DAGSTER_PG_PORT": str(parts.port or 5432),
        "DAGSTER_PG_USER": parts.username or "postgres",
        "DAGSTER_PG_PASSWORD": parts.password or "",
        "DAGSTER_PG_DB": database,
    }.items():
        monkeypatch.setenv(var, value)
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / "deploy" / "dagster.postgres.yaml", home / "dagster.yaml")
    yield home
    with psycopg.connect(PG_URL, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_a_run_lands_in_postgres_run_storage(pg_dagster_home: Path, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(FIXTURES / "small_history.jsonl", inbox)
    with dg.DagsterInstance.from_config(str(pg_dagster_home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        result = dg.materialize(
            [collected_sessions],
            instance=instance,
            resources={
                "store": StoreResource(url=f"duckdb://{tmp_path / 's.duckdb'}"),
                "sources": CollectorSourcesResource(inbox=str(inbox), claude_projects=None),
                "llm": JudgeResource(),
            },
        )
        assert result.success
        stored = instance.get_run_by_id(result.run_id)
        assert stored is not None and stored.status == dg.DagsterRunStatus.SUCCESS
        latest = instance.get_latest_materialization_event(dg.AssetKey("collected_sessions"))
        assert latest is not None
        assert latest.asset_materialization.metadata["sessions_total"].value == 1

    # Read the run back straight from PostgreSQL, not through Dagster's cache.
    database = os.environ["DAGSTER_PG_DB"]
    with psycopg.connect(PG_URL.rsplit("/", 1)[0] + f"/{database}") as con:
        row = con.execute("SELECT status FROM runs WHERE run_id = %s", [result.run_id]).fetchone()
    assert row == ("SUCCESS",)
