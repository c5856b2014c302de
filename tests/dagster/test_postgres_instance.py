"""The dagster-postgres instance configuration, proven against the real PostgreSQL server."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import psycopg

from assets.collector import collected_sessions
from resources import CollectorSourcesResource, JudgeResource, StoreResource
from tests.helpers import FIXTURES, PG_URL

ROOT = Path(__file__).resolve().parents[2]


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
