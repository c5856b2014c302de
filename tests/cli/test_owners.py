"""Many owners on one installation: the registry, each owner's own store, and isolation.

Two owners, Alice and Bob, each with a small history of their own (Bob's names every person,
company, skill and preference differently from Alice's), on DuckDB files and on PostgreSQL
schemas of one shared server. Whatever a command does for Alice (recall, show, asof,
feedback, export, the audit log of her runs) must show nothing of Bob's.
"""

from __future__ import annotations

import json
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

import memvault
from memvault.owners import PARTITIONS_NAME, OwnerError, Registry, check_name
from pipelines.cli.app import app
from tests.helpers import FIXTURES, PG_URL, clear_cli_environment, require_service

SMALL = FIXTURES / "small_history.jsonl"
#: Bob's history: Alice's small history with every name, id and word of it changed.
BOB_WORDS = {
    "Ada Lovelace": "Grace Hopper",
    "Acme Corp": "Globex Inc",
    "org_acme": "org_globex",
    '"b1"': '"g1"',
    '"s1"': '"t1"',
    "Python": "Cobol",
    "concise": "verbose",
    "Ada": "Grace",
    "ada": "grace",
}
BOB_ONLY = ("Grace", "Globex", "g1", "Cobol", "verbose")


def bob_history(folder: Path) -> Path:
    text = SMALL.read_text(encoding="utf-8")
    for old, new in BOB_WORDS.items():
        text = text.replace(old, new)
    path = folder / "bob.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def memvault_cli(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv))
    said = result.stdout + result.stderr
    assert "unexpected" not in said, said
    return result.exit_code, said


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory with a registry of its own and a Dagster instance."""
    clear_cli_environment(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMVAULT_OWNERS", str(tmp_path / "registry" / "owners.json"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    monkeypatch.setenv("MEMVAULT_STORE", f"duckdb://{tmp_path / 'single' / 'memvault.duckdb'}")
    return tmp_path


@pytest.mark.parametrize(
    "name",
    [
        "",
        "Alice",
        "../etc",
        "a/b",
        "a'b",
        'a"b',
        "a;drop table blocks",
        "a b",
        "a-b",
        "a.b",
        "émile",
        "1abc",
        "_a",
        "a" * 41,
        "a\x00b",
        "../x",
        "a;drop",
        "A B",
    ],
)
def test_an_owner_name_with_path_or_sql_characters_is_refused(env: Path, name: str) -> None:
    with pytest.raises(OwnerError, match="refused"):
        check_name(name)
    code, said = memvault_cli("owners", "add", name)
    assert code != 0 and "refused" in said, said
    assert len(said.strip().splitlines()) == 1, f"not a one-line error: {said!r}"
    assert not (env / "registry" / "owners.json").exists(), "a refused name was registered"
    assert not list(env.rglob("*.duckdb")), "a refused name got a store"


@pytest.mark.parametrize("name", ["../x", "a;drop", "A B", "a" * 41, 'a"; drop schema public--'])
def test_a_refused_name_makes_no_schema_on_the_shared_server(
    env: Path, name: str, postgres_available: bool
) -> None:
    require_service(postgres_available, f"PostgreSQL at {PG_URL}")
    import psycopg

    def schemas() -> set[str]:
        with psycopg.connect(PG_URL) as con:
            rows = con.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'owner_%'")
            return {r[0] for r in rows}

    before = schemas()
    code, said = memvault_cli("owners", "add", name, "--store", PG_URL)
    assert code != 0 and "refused" in said and len(said.strip().splitlines()) == 1, said
    assert not (env / "registry" / "owners.json").exists(), "a refused name was registered"
    assert not {s for s in schemas() - before if name.lower()[:5] in s}, "a schema was made"


def test_the_default_owner_is_the_one_store_of_a_single_owner_install(env: Path) -> None:
    assert Registry().owners() == {}
    assert Registry().get("default").store == f"duckdb://{env / 'single' / 'memvault.duckdb'}"
    code, said = memvault_cli("owners", "list")
    assert code == 0 and "no owners registered" in said
    code, said = memvault_cli("ingest", str(SMALL))
    assert code == 0, said
    code, said = memvault_cli("recall", "where does Ada work", "--owner", "default")
    assert code == 0 and "Ada works at Acme" in said, said


def test_add_list_remove_keeps_the_data_and_the_partition_follows(env: Path) -> None:
    code, said = memvault_cli("owners", "add", "alice")
    assert code == 0, said
    registry = env / "registry" / "owners.json"
    assert stat.S_IMODE(registry.stat().st_mode) == 0o600
    assert stat.S_IMODE((env / "registry" / "owners").stat().st_mode) == 0o700
    store = env / "registry" / "owners" / "alice.duckdb"
    assert json.loads(registry.read_text())["owners"]["alice"]["store"] == f"duckdb://{store}"
    assert store.is_file(), "the owner's store is created when the owner is added"
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions(PARTITIONS_NAME) == ["alice"]

    assert memvault_cli("owners", "add", "alice")[0] == 1, "an owner is added once"
    assert memvault_cli("ingest", str(SMALL), "--owner", "alice")[0] != 0, "global --owner only"
    code, said = memvault_cli("--owner", "alice", "ingest", str(SMALL))
    assert code == 0, said
    code, said = memvault_cli("owners", "list", "--json")
    assert json.loads(said[said.index("[") :]) == [{"name": "alice", "store": f"duckdb://{store}"}]

    code, said = memvault_cli("owners", "remove", "alice")
    assert code == 0 and "left as it is" in said, said
    assert Registry().owners() == {}
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions(PARTITIONS_NAME) == []
    assert memvault_cli("recall", "Ada", "--owner", "alice")[0] == 1, "a removed owner is unknown"
    with memvault.open(f"duckdb://{store}") as kept:
        assert kept.counts(["blocks"])["blocks"] == 1, "removing an owner removed data"

    code, said = memvault_cli("owners", "add", "alice")
    assert code == 0, said
    code, said = memvault_cli("recall", "where does Ada work", "--owner", "alice")
    assert code == 0 and "Ada works at Acme" in said, "re-adding the owner found the memories"


def test_two_owners_cannot_share_a_store(env: Path) -> None:
    assert memvault_cli("owners", "add", "alice")[0] == 0
    shared = f"duckdb://{env / 'registry' / 'owners' / 'alice.duckdb'}"
    code, said = memvault_cli("owners", "add", "bob", "--store", shared)
    assert code == 1 and "belongs to owner 'alice'" in said, said
    assert list(Registry().owners()) == ["alice"]


@pytest.fixture(params=["duckdb", "postgresql"])
def backend(request: pytest.FixtureRequest, env: Path) -> Iterator[str | None]:
    """The base of the owners' stores: None (a DuckDB file each) or a PostgreSQL server (a
    schema each, dropped afterwards)."""
    if request.param == "duckdb":
        yield None
        return
    require_service(request.getfixturevalue("postgres_available"), f"PostgreSQL at {PG_URL}")
    yield PG_URL
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as con:
        for owner in Registry().owners().values():
            schema = owner.store.rsplit("schema=", 1)[-1]
            con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_an_owner_sees_nothing_of_another_owners_memory(env: Path, backend: str | None) -> None:
    tag = secrets.token_hex(3)
    alice, bob = f"alice_{tag}", f"bob_{tag}"
    for name in (alice, bob):
        extra = ("--store", backend) if backend else ()
        code, said = memvault_cli("owners", "add", name, *extra)
        assert code == 0, said
    if backend:
        assert Registry().get(alice).store.endswith(f"schema=owner_{alice}")
    assert memvault_cli("--owner", alice, "ingest", str(SMALL))[0] == 0
    assert memvault_cli("--owner", bob, "ingest", str(bob_history(env)))[0] == 0

    # Recall: a question both memories answer, asked of Alice's, finds none of Bob's.
    code, said = memvault_cli("recall", "who works at which company", "--owner", alice, "--json")
    assert code == 0, said
    answer = json.loads(said[said.index("{") :])
    found = json.dumps([answer["results"], answer["facts"]])
    assert "Acme" in found and not any(word in found for word in BOB_ONLY), found
    code, said = memvault_cli("recall", "where does Grace work", "--owner", bob, "--json")
    assert code == 0 and "Grace works at Globex" in said, said
    code, said = memvault_cli("feedback", answer["recall_id"], "correct", "--owner", bob)
    assert code != 0, "Bob's store knows nothing of Alice's recall"

    assert memvault_cli("show", "g1", "--owner", alice)[0] != 0
    code, said = memvault_cli("show", "g1", "--owner", bob)
    assert code == 0 and "Globex" in said, said
    code, said = memvault_cli("asof", "Grace Hopper", "--owner", alice)
    assert "Globex" not in said and "works_at" not in said, said

    # Export and the audit log: all of Alice's, nothing of Bob's.
    code, exported = memvault_cli("export", "--owner", alice)
    assert code == 0 and "Ada works at Acme" in exported
    assert not any(word in exported for word in BOB_ONLY), exported
    with memvault.open(Registry().get(alice).store) as store:
        audited = store.fetch("SELECT after_image FROM audit_log")
        runs = store.fetch("SELECT id FROM runs")
    with memvault.open(Registry().get(bob).store) as store:
        bob_runs = {r[0] for r in store.fetch("SELECT id FROM runs")}
    assert audited and not any(w in str(audited) for w in BOB_ONLY)
    assert runs and not bob_runs & {r[0] for r in runs}
    code, said = memvault_cli("--owner", alice, "runs", "--json")
    assert not bob_runs & {r["id"] for r in json.loads(said[said.index("[") :])}
