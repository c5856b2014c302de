"""A fresh `memvault ui`, as a data engineer first opens it, and stopped as a service stops it.

In a new directory (its own ``.dagster``, store and inbox), ``memvault collect`` runs first
from the command line; then ``memvault ui`` serves the webserver and the daemon on a free
port. Through the GraphQL API the UI queries: the automation is on (the tag on automated
jobs, the night's clock, the sensors), the dream sensor describes the gate set in the
environment, the CLI's run is listed under its job and placed on the timeline (which draws
only runs with a repository origin), and "Re-execute all" re-runs it. Then ``kill -INT`` to
``memvault`` alone stops it, the webserver, the daemon and the code server with it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memvault.processes import process_alive
from tests.cli.test_demo_next_steps import _descendants
from tests.integration.test_ui import JOB_RUNS, LOCATION, REEXECUTE, _free_port, _graphql

pytestmark = pytest.mark.integration
CLI = Path(sys.executable).with_name("memvault")

STATE = """{
  instance { autoMaterializePaused }
  clock: scheduleOrError(scheduleSelector: {repositoryLocationName: "%(location)s",
      repositoryName: "__repository__", scheduleName: "collector_daily"}) {
    ... on Schedule { scheduleState { status } } }
  dream: sensorOrError(sensorSelector: {repositoryLocationName: "%(location)s",
      repositoryName: "__repository__", sensorName: "dream_gate_sensor"}) {
    ... on Sensor { description sensorState { status } } }
  run: runOrError(runId: "%(run)s") {
    ... on Run { pipelineName repositoryOrigin { repositoryName repositoryLocationName } } }
}"""
STATUS = '{ runOrError(runId: "%s") { ... on Run { status parentRunId } } }'


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    cli_run: str  # the run `memvault collect` started before the UI
    started: set[int]  # what it started, to end should the test fail

    def said(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    env = os.environ | {
        "MEMVAULT_STORE": f"duckdb://{tmp_path / 'store.duckdb'}",
        "MEMVAULT_EMBEDDER": "hashing",
        "MEMVAULT_CLAUDE_PROJECTS": "none",
        "MEMVAULT_INBOX": str(tmp_path / "inbox"),
        "MEMVAULT_DREAM_GATE_HOURS": "12",
        "MEMVAULT_DREAM_GATE_SESSIONS": "3",
    }
    for name in ("DAGSTER_HOME", "MEMVAULT_LLM_BASE_URL"):
        env.pop(name, None)
    done = subprocess.run([str(CLI), "collect", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    cli_run = json.loads(done.stdout)["dagster_run_id"]
    port, log = _free_port(), tmp_path / "ui.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([str(CLI), "ui", "--port", str(port)], cwd=tmp_path, env=env,
                                   stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    ui = Served(process, port, log, cli_run, set())
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                _graphql(port, "{ version }")
                break
            except (OSError, urllib.error.URLError):
                assert process.poll() is None and time.monotonic() < deadline, ui.said()
                time.sleep(1)
        yield ui
    finally:
        if process.poll() is None:
            ui.started |= _descendants(process.pid)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for pid in ui.started:  # only what this test started, and only after a failure
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(900)
def test_a_fresh_ui_runs_the_night_lists_cli_runs_and_stops_on_sigint(served: Served) -> None:
    shown = _graphql(served.port, STATE % {"location": LOCATION, "run": served.cli_run})
    assert shown["instance"]["autoMaterializePaused"] is False, "Auto-materialize on"
    assert shown["clock"]["scheduleState"]["status"] == "RUNNING", "the night's clock is on"
    assert shown["dream"]["sensorState"]["status"] == "RUNNING"
    description = shown["dream"]["description"]
    assert "more than 12 h" in description and "at least 3 new sessions" in description
    # The timeline draws a run under its code location's job only with a repository origin.
    assert shown["run"] == {
        "pipelineName": "collect_job",
        "repositoryOrigin": {
            "repositoryName": "__repository__",
            "repositoryLocationName": LOCATION,
        },
    }
    listed = _graphql(served.port, JOB_RUNS % ("collect_job", f"__repository__@{LOCATION}"))
    assert served.cli_run in [r["runId"] for r in listed["runsOrError"]["results"]]
    launched = _graphql(served.port, REEXECUTE % served.cli_run)["launchPipelineReexecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    child = launched["run"]["runId"]
    deadline = time.monotonic() + 400
    while True:
        run = _graphql(served.port, STATUS % child)["runOrError"]
        if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        assert time.monotonic() < deadline, f"re-execution still {run['status']}"
        time.sleep(2)
    assert run == {"status": "SUCCESS", "parentRunId": served.cli_run}, served.said()

    served.started |= _descendants(served.process.pid)
    assert len(served.started) >= 3, "dg dev, its webserver, daemon and code server"
    signalled = time.monotonic()
    os.kill(served.process.pid, signal.SIGINT)  # `kill -INT`, to memvault's own process only
    assert served.process.wait(timeout=90) == 130, served.said()
    print(f"stopped {time.monotonic() - signalled:.1f} s after SIGINT")
    left = {pid for pid in served.started if process_alive(pid)}
    assert not left, f"still running after SIGINT: {left}\n{served.said()}"
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", served.port)) != 0, "the webserver's port is closed"
