"""After ``memvault demo``, every command it suggests answers from the demo's memory.

A newcomer runs the demo as the README says (``.venv/bin/memvault demo``, the venv not
activated), then types what its summary suggests, as printed, from the same directory, in a
new shell. Here the demo runs (small) as a subprocess in a directory that stands for a fresh
clone (its ``.venv`` a link to this one), where the user already has a store of their own;
each suggested command is parsed from the demo's own output and run exactly as printed with
a clean environment (the system PATH, a HOME, and the tests' fixed clock). Each
must answer from the demo's memory, not from an empty store, and leave the user's own
store as it was. The suggested ``memvault ui`` serves the demo's runs and stops on Ctrl-C
(SIGINT to its own process) with every process it started.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import memvault
from memvault import clock
from memvault.ingest import ingest_file
from memvault.processes import process_alive
from tests.helpers import FIXTURES

pytestmark = pytest.mark.integration

VENV = Path(sys.executable).parent.parent
#: The smallest history that still gives skills, preferences and discoveries.
DEMO = (".venv/bin/memvault", "demo", "--sessions", "6", "--days", "8")
#: What an empty store answers (the issue's list): no suggested command may say it.
EMPTY = (
    "no vectors",
    "no memory matches",
    "no day has a profile yet",
    "no knowledge gaps",
    "no skills yet",
    "no preferences yet",
    "nothing new",
    "no diary page",
)


def new_shell(home: Path) -> dict[str, str]:
    """A new shell's environment: the system PATH (no venv activated), a HOME, nothing of
    memvault's but the tests' clock (so the demo's days are the tests' days); PYTHONPATH when
    this run has one (a checkout used without installing it)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    env[clock.VARIABLE] = os.environ[clock.VARIABLE]
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


@dataclass
class Demo:
    root: Path  # where the user ran it: the clone's root
    env: dict[str, str]
    output: str  # what it printed on stdout
    steps: list[str]  # the suggested commands, as printed
    own_store: Path  # the user's own default store, there before the demo
    own_digest: str

    def line(self, prefix: str) -> str:
        """The summary's line starting with ``prefix`` (wrapped lines joined)."""
        flat = re.sub(r"\s*\n\s*", " ", self.output)
        labels = r"(?: (?:tiers:|preferences:|skills:|discoveries waiting|next steps|recall ')|$)"
        found = re.search(rf"{re.escape(prefix)}(.*?)(?={labels})", flat)
        assert found, f"the demo printed no {prefix!r} line:\n{self.output}"
        return found.group(1)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    root = tmp_path_factory.mktemp("clone")
    home = tmp_path_factory.mktemp("home")
    (root / ".venv").symlink_to(VENV, target_is_directory=True)
    own = root / ".memvault" / "memvault.duckdb"
    with memvault.open(f"duckdb://{own}") as store:  # the user's own memory, already there
        ingest_file(store, FIXTURES / "small_history.jsonl")
    digest = _digest(own)
    env = new_shell(home)
    started = time.monotonic()
    done = subprocess.run(DEMO, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"demo: {time.monotonic() - started:.1f} s")
    lines = done.stdout.splitlines()
    header = [n for n, line in enumerate(lines) if line.startswith("next steps")]
    assert header, done.stdout
    steps = []  # the indented lines under the header, one command each
    for line in lines[header[0] + 1 :]:
        if not line.startswith("  "):
            break
        steps.append(line.strip())
    return Demo(root, env, done.stdout, steps, own, digest)


def test_paths_are_printed_as_a_person_writes_them(demo: Demo) -> None:
    assert "//" not in demo.output.replace("://", ""), demo.output
    history = re.search(r"history file: (\S+)", demo.output)
    assert history and (demo.root / history.group(1)).is_file()


def test_every_suggested_command_answers_from_the_demo_memory(demo: Demo) -> None:
    store = "duckdb://.memvault/demo.duckdb"
    commands = [shlex.split(step) for step in demo.steps]
    assert all(argv[0] == DEMO[0] for argv in commands), "as the demo was started: no venv active"
    assert all(argv[2:4] == ["--store", store] for argv in commands), demo.steps
    names = [argv[1] for argv in commands]
    assert names[-1] == "ui", "the UI comes last: it keeps running"
    assert set(names) == {
        "profile", "diary", "gaps", "recall", "feedback", "attitudes", "skills", "inbox", "ui"
    }  # fmt: skip

    # What the demo said it built; each command must show it.
    employer = re.search(r"works_at (.+?);", demo.line("recall '")).group(1)  # type: ignore[union-attr]
    last_day = re.search(r"\.\. (\d{4}-\d\d-\d\d)\)", demo.line("daily profile:")).group(1)  # type: ignore[union-attr]
    binding = int(demo.line("preferences:").split()[0])
    skills = [s.split(" L")[0] for s in demo.line("skills:").split(", ")]
    kinds = [k.split()[1] for k in demo.line("discoveries waiting in the inbox:").split(";")[0].split(", ")]  # fmt: skip
    shows = {
        "profile": [last_day, "interest"],
        "diary": [],
        "gaps": ["open"],
        "recall": [employer],
        "feedback": ["recorded verdict correct"],
        "attitudes": [f"{binding} binding"],
        "skills": skills,
        "inbox": kinds,
    }
    assert binding > 0 and skills and kinds
    for step, argv in zip(demo.steps, commands, strict=True):
        if argv[1] == "ui":
            continue
        done = subprocess.run(argv, cwd=demo.root, env=demo.env, capture_output=True, text=True)
        said = done.stdout + done.stderr
        assert done.returncode == 0, f"{step}\n{said}"
        assert done.stdout.strip(), f"{step} printed nothing"
        assert not [e for e in EMPTY if e in said], f"{step} answered from an empty store:\n{said}"
        flat = re.sub(r"\s+", " ", said)
        missing = [want for want in shows[argv[1]] if want not in flat]
        assert not missing, f"{step} does not show {missing}:\n{said}"
    assert _digest(demo.own_store) == demo.own_digest, "the user's own store was touched"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["data"]


def _descendants(pid: int) -> set[int]:
    """Every running process below ``pid`` (read from /proc: children, their children …)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])  # fmt: skip
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, up in parent.items() if up in frontier} - found
        found |= frontier
    return {p for p in found if process_alive(p)}


@dataclass
class UI:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    started: set[int]  # the processes it started, to end them should the test fail

    def said(self) -> str:
        return re.sub(r"\s+", " ", self.log.read_text(errors="replace"))


@pytest.fixture
def ui(demo: Demo) -> Iterator[UI]:
    """The suggested UI command, as printed, on a free port (3000 may be taken here)."""
    port = _free_port()
    argv = [*shlex.split(demo.steps[-1]), "--port", str(port)]
    log = demo.root / "ui.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv, cwd=demo.root, env=demo.env, stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    served = UI(process, port, log, set())
    try:
        yield served
    finally:
        if process.poll() is None:
            served.started |= _descendants(process.pid)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for pid in served.started:  # only what this test started, and only after a failure
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_suggested_ui_serves_the_demo_and_stops_on_ctrl_c(demo: Demo, ui: UI) -> None:
    deadline = time.monotonic() + 180
    while True:
        try:
            runs = _graphql(ui.port, "{ runsOrError { ... on Runs { results { runId } } } }")
            break
        except (OSError, urllib.error.URLError):
            assert ui.process.poll() is None, ui.said()[-3000:]
            assert time.monotonic() < deadline, ui.said()[-3000:]
            time.sleep(1)
    shown = {r["runId"] for r in runs["runsOrError"]["results"]}
    demo_runs = set(re.findall(r"_job\s+([0-9a-f]{8}-[0-9a-f-]{27})", demo.output))
    assert demo_runs and demo_runs <= shown, "the UI shows the demo's runs"
    assert "store duckdb://.memvault/demo.duckdb" in ui.said()

    ui.started |= _descendants(ui.process.pid)
    assert len(ui.started) >= 4, "dg dev, its webserver, daemon and code server"
    os.kill(ui.process.pid, signal.SIGINT)  # Ctrl-C, to memvault's own process only
    assert ui.process.wait(timeout=90) == 130, ui.said()[-3000:]
    left = {pid for pid in ui.started if process_alive(pid)}
    assert not left, f"still running after Ctrl-C: {left}\n{ui.said()[-3000:]}"
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", ui.port)) != 0, "the webserver's port is closed"
    assert "the Dagster UI stopped" in ui.said()


def test_a_store_written_with_four_slashes_is_shown_with_one(tmp_path: Path) -> None:
    """``duckdb:////abs`` (SQLAlchemy's spelling) names /abs: printed so, never ``//abs``."""
    from pipelines.cli.demo import next_steps

    url = f"duckdb:///{tmp_path}/demo.duckdb"
    with memvault.open(url) as store:
        assert store.backend.path == f"{tmp_path}/demo.duckdb"  # type: ignore[attr-defined]
    assert next_steps(url, {}, {}) == [f"memvault ui --store duckdb://{tmp_path}/demo.duckdb"]
