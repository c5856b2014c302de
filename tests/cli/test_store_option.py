"""Every command honours ``--store`` before its name, after it, and ``MEMVAULT_STORE``.

The commands are enumerated from the typer app, so a new command fails here until it has a
row in ``CASES``. Each case runs in an empty working directory on its own copy of a small
store and checks that the command did what it should and that every store it opened was the
one given (never the default ``.memvault/``). Commands that launch a Dagster job other than
``garden_job`` (run for real: it is the one that used to crash) are stopped at the launch,
after the store URL they would run on was recorded; ``demo`` and ``ui`` likewise.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import memvault
import memvault.supervise
from memvault.errors import MemvaultError
from memvault.store import Store
from pipelines.cli.app import app
from tests.helpers import FIXTURES, clear_cli_environment

SMALL = FIXTURES / "small_history.jsonl"
STUBBED = "stubbed launch"


@dataclass(frozen=True)
class Case:
    """How to run one command on the small store: its arguments, exit code, and a word of
    its output. ``{run}``, ``{recall}`` and ``{review}`` are ids from the small store."""

    args: tuple[str, ...] = ()
    code: int = 0
    says: str = ""


CASES: dict[str, Case] = {
    "init": Case(says="store ready"),
    "status": Case(says="blocks"),
    "ingest": Case((str(SMALL),), says="already ingested"),
    "export": Case(says='"type":"block"'),
    "runs": Case(says="ingest"),
    "undo": Case(("{run}",), says="undid"),
    "collect": Case(code=1, says=STUBBED),
    "lint": Case(code=1, says=STUBBED),
    "demo": Case(code=1, says=STUBBED),
    "ui": Case(says="Dagster UI on"),
    "dream": Case(says="dream skipped"),
    "asof": Case(("Ada Lovelace",), says="works_at"),
    "inbox": Case(says="nothing new in the inbox"),
    "tier": Case(("--dry-run",), says="dry run: nothing written"),
    "usage": Case(("b1",), says="b1"),
    "profile": Case(code=1, says="no day has a profile yet"),
    "diary": Case(code=1, says="no day has a profile yet"),
    "gaps": Case(says="knowledge gaps"),
    "backfill": Case(("--from", "2026-01-05", "--to", "2026-01-05"), code=1, says=STUBBED),
    "recall": Case(("where does Ada work",), says="Ada works at Acme"),
    "show": Case(("b1",), says="Ada works at Acme"),
    "feedback": Case(("{recall}", "correct"), says="recorded verdict"),
    "serve": Case(says="memvault serve: index"),  # stdio: the empty input ends it at once
    "garden": Case(says="Gardening report"),
    "garden approve": Case(("--all",), says="approved 0 proposal(s)"),
    "garden proposals": Case(says="no pending garden proposals"),
    "review": Case(says="attitude"),
    "review list": Case(says="attitude"),
    "review show": Case(("{review}",), says="prefers long answers"),
    "review approve": Case(("{review}",), says="memvault undo"),
    "review reject": Case(("{review}",), says="memvault undo"),
    "attitudes": Case(says="prefers concise answers"),
    "attitudes set": Case(("workflow", "plans before coding"), says="stored"),
    "skills": Case(says="Python"),
    "skills use": Case(("Python",), says="Python"),
}
#: The owners commands keep the registry of owners (tests/cli/test_owners.py), not a store.
REGISTRY_COMMANDS = {"owners add", "owners list", "owners remove"}
#: ``demo`` builds a fresh store (wiping it), so it never takes MEMVAULT_STORE; it builds
#: .memvault/demo.duckdb instead, on purpose.
IGNORES_ENVIRONMENT = {"demo"}


def command_names() -> list[str]:
    """Every command of the app, sub-apps' commands included (a sub-app whose callback runs
    without a command is a command too)."""
    names: list[str] = []

    def walk(group: Any, prefix: str) -> None:
        for name, command in group.commands.items():
            path = f"{prefix}{name}"
            children = getattr(command, "commands", None)
            if children is None or getattr(command, "invoke_without_command", False):
                names.append(path)
            if children is not None:
                walk(command, f"{path} ")

    walk(typer.main.get_command(app), "")
    return names


def test_every_command_has_a_case() -> None:
    missing = sorted(set(command_names()) - set(CASES) - REGISTRY_COMMANDS)
    assert not missing, f"add a row to CASES for {missing}"
    assert not set(CASES) - set(command_names()), "CASES names a command that is gone"


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A small DuckDB store (the small history plus one preference waiting for review), and
    the ids the commands take."""
    from memvault.ingest import ingest_file
    from memvault.layers.attitudes import upsert

    path = tmp_path_factory.mktemp("template") / "small.duckdb"
    with memvault.open(f"duckdb://{path}") as store:
        run = ingest_file(store, str(SMALL)).run_id
        queued = upsert(store, "writing_style", "prefers long answers", 0.9, ["s1"])
        assert queued.status == "queued" and queued.review_id
        [(recall_id,)] = store.fetch("SELECT id FROM recall_log")
    return path, {"run": str(run), "recall": str(recall_id), "review": str(queued.review_id)}


@pytest.fixture(scope="module")
def dagster_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Dagster instance for the module (a fresh one costs seconds per test)."""
    return tmp_path_factory.mktemp("dagster_home")


@pytest.fixture
def opened_urls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str | None]]:
    """Every store URL a command opened or would launch a job / the UI / the demo on."""
    seen: list[str | None] = []
    original = Store.__dict__["open"].__func__

    def spy_open(cls: type[Store], url: str, **options: Any) -> Store:
        seen.append(url)
        return original(cls, url, **options)

    import pipelines.cli.app
    import pipelines.cli.demo
    import pipelines.runner

    real_run_job = pipelines.runner.run_job

    def launch(job_name: str, url: str, **options: Any) -> Any:
        seen.append(url)
        if job_name == "garden_job":
            return real_run_job(job_name, url, **options)
        raise MemvaultError(f"{STUBBED} of {job_name}")

    def demo(store: str | None, **_: Any) -> Any:
        seen.append(store)
        raise MemvaultError(f"{STUBBED} of the demo")

    def dg_dev(command: list[str], env: dict[str, str], **_: Any) -> int:
        seen.append(env["MEMVAULT_STORE"])
        return 0

    monkeypatch.setattr(Store, "open", classmethod(spy_open))
    monkeypatch.setattr(pipelines.runner, "run_job", launch)
    monkeypatch.setattr(pipelines.cli.demo, "run_demo", demo)
    monkeypatch.setattr(memvault.supervise, "run_supervised", dg_dev)
    yield seen


@pytest.mark.parametrize("where", ["before", "after", "environment"])
@pytest.mark.parametrize("command", [c for c in command_names() if c not in REGISTRY_COMMANDS])
def test_the_store_option_reaches_every_command(
    command: str,
    where: str,
    small_store: tuple[Path, dict[str, str]],
    dagster_home: Path,
    opened_urls: list[str | None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template, ids = small_store
    case = CASES[command]
    store_file = tmp_path / "given" / "store.duckdb"
    store_file.parent.mkdir()
    shutil.copy(template, store_file)
    url = f"duckdb://{store_file}"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    clear_cli_environment(monkeypatch)
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMVAULT_INBOX", str(tmp_path / "inbox"))
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))

    args = [a.format(**ids) for a in case.args]
    name = command.split()
    if where == "before":
        argv = ["--store", url, *name, *args]
    elif where == "after":
        argv = [*name, *args, "--store", url]
    else:
        monkeypatch.setenv("MEMVAULT_STORE", url)
        argv = [*name, *args]

    result = CliRunner().invoke(app, argv)
    said = result.stdout + result.stderr
    assert "unexpected" not in said, said
    assert result.exception is None or isinstance(result.exception, SystemExit), said
    assert result.exit_code == case.code, said
    assert case.says in said, said
    assert not (work / ".memvault").exists(), "the default store was touched"
    expected = None if where == "environment" and command in IGNORES_ENVIRONMENT else url
    assert opened_urls, "the command opened no store"
    assert set(opened_urls) == {expected}, opened_urls
