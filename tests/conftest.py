"""Shared fixtures: a fresh store on every backend, PostgreSQL included.

The store tests run on DuckDB and on the real PostgreSQL server
(``MEMVAULT_TEST_PG``, default 127.0.0.1:5432/test). Each test gets its own
PostgreSQL schema, dropped afterwards. Without a server the PostgreSQL cases
skip on a laptop, but fail under ``CI=true``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import memvault
from memvault import clock
from memvault.store import Store
from tests.helpers import PG_URL, TEST_NOW, require_service

#: Settings of the test run itself, kept from the caller's environment.
TEST_SETTINGS = (
    "MEMVAULT_TEST_PG",
    "MEMVAULT_PERF_CACHE",
    "MEMVAULT_TEST_TODAY",
    "MEMVAULT_REALTALK",
)

_HERMETIC_ROOT: Path | None = None


def _make_hermetic() -> Path:
    """Give this test process its own home, Dagster instance and memvault settings.

    Runs before any test module is imported (the code location reads its settings when it
    loads), in every pytest process (xdist workers included). What a user leaves behind —
    the checkout's ``.dagster/`` and ``.memvault/`` (``memvault demo`` writes both),
    ``MEMVAULT_*``, ``DAGSTER_HOME`` and ``XDG_*`` in the shell, ``~/.claude/projects`` — is
    never read.
    memvault's clock is set to read :data:`~tests.helpers.TEST_NOW` now, whatever the date.
    """
    root = Path(tempfile.mkdtemp(prefix="memvault-tests-"))
    for name in list(os.environ):
        if name.startswith("MEMVAULT_") and name not in TEST_SETTINGS:
            del os.environ[name]
    (root / "home").mkdir()
    os.environ["HOME"] = str(root / "home")
    os.environ["DAGSTER_HOME"] = str(root / "dagster")
    (root / "dagster").mkdir()
    shutil.copyfile(Path(__file__).parents[1] / "dagster.yaml", root / "dagster" / "dagster.yaml")
    os.environ["MEMVAULT_STORE"] = f"duckdb://{root / 'store' / 'memvault.duckdb'}"
    os.environ["MEMVAULT_INBOX"] = str(root / "inbox")
    os.environ["MEMVAULT_OWNERS"] = str(root / "owners.json")  # none: a single-owner install
    # This user's private directories (sockets and discovery files of `memvault serve`,
    # durable state), shared with every process a test starts.
    for variable, name in (("XDG_RUNTIME_DIR", "run"), ("XDG_STATE_HOME", "state")):
        (root / name).mkdir(mode=0o700)
        os.environ[variable] = str(root / name)
    os.environ[clock.VARIABLE] = repr(clock.shift_to(TEST_NOW))
    return root


def pytest_configure(config: pytest.Config) -> None:
    global _HERMETIC_ROOT
    _HERMETIC_ROOT = _make_hermetic()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _HERMETIC_ROOT is not None:
        shutil.rmtree(_HERMETIC_ROOT, ignore_errors=True)


#: The test files that take minutes (the launches as the webserver and the daemon make them),
#: longest first. They are collected first, so that under ``-n 2 --dist loadfile`` (with
#: ``--no-loadscope-reorder``, which keeps this order instead of putting the files with the
#: most tests first) each test process starts on one and the short files fill in around them:
#: the run ends when both processes do, not minutes after with one long file left.
LONGEST_FIRST = (
    "tests/dagster/test_job_launch.py",
    "tests/dagster/test_celery_owners.py",
    "tests/integration/test_ui.py",
    "tests/dagster/test_serve_night.py",
    "tests/dagster/test_profile_backfill.py",
    "tests/integration/test_kills.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: k for k, path in enumerate(LONGEST_FIRST)}
    root = Path(config.rootpath)

    def order(item: pytest.Item) -> int:
        return rank.get(Path(item.path).relative_to(root).as_posix(), len(rank))

    items.sort(key=order)  # stable: every other file keeps its place


def _postgres_reachable() -> bool:
    import psycopg

    try:
        with psycopg.connect(PG_URL, connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


@pytest.fixture(scope="session")
def postgres_available() -> bool:
    return _postgres_reachable()


def _drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["duckdb", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty store on each backend."""
    if request.param == "duckdb":
        yield f"duckdb://{tmp_path / 'store.duckdb'}"
        return
    require_service(request.getfixturevalue("postgres_available"), f"PostgreSQL at {PG_URL}")
    schema = f"mvtest_{secrets.token_hex(4)}"
    yield f"{PG_URL}?schema={schema}"
    _drop_schema(schema)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with memvault.open(store_url) as opened:
        yield opened


@pytest.fixture
def duck_store(tmp_path: Path) -> Iterator[Store]:
    with memvault.open(f"duckdb://{tmp_path / 'store.duckdb'}") as opened:
        yield opened
