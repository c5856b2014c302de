"""Fixtures of the Dagster tests: a Dagster instance on PostgreSQL."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.helpers import PG_URL, require_service

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
