"""`memvault ui`: a real webserver and daemon, driven over GraphQL as the UI drives them.

The collector and the gardener are launched from the "launchpad" (the
webserver's GraphQL API, the queued run coordinator, the daemon, a run worker,
the multiprocess executor); the dream is started by the daemon from
``dream_gate_sensor`` once the collector has reported enough sessions, and the
rest of the night by the daemon's automation sensor, track after track; the
daily profile is backfilled as the Partitions tab does it (the daemon's
backfill loop).
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
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster_graphql import DagsterGraphQLClient

from pipelines.definitions import defs
from tests.dagster.dream_support import seed_demo_store
from tests.dagster.run_checks import check_run
from tests.dagster.test_what_the_ui_shows import stop_the_clock

pytestmark = pytest.mark.integration
LOCATION = "pipelines.definitions"


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
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)["data"]
    except urllib.error.HTTPError as error:  # the server's own words, not just "500"
        raise AssertionError(f"GraphQL {error.code}: {error.read()[:2000]!r}") from None


class UI:
    def __init__(
        self, port: int, home: Path, process: subprocess.Popen[bytes], env: dict[str, str]
    ) -> None:
        self.port, self.home, self.process, self.env = port, home, process, env
        self.client = DagsterGraphQLClient("127.0.0.1", port_number=port)

    def wait(self, run_id: str, timeout: float = 300) -> dg.DagsterRunStatus:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.client.get_run_status(run_id)
            if status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE):
                return status
            time.sleep(2)
        raise AssertionError(f"run {run_id} still {status} after {timeout} s")

    def launch(self, job: str) -> str:
        return self.client.submit_job_execution(
            job, repository_location_name=LOCATION, repository_name="__repository__"
        )


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[UI]:
    port = _free_port()
    store = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(store, tmp_path, sessions=24)
    env = os.environ | {
        "MEMVAULT_STORE": store,
        "MEMVAULT_EMBEDDER": "hashing",
        "MEMVAULT_CLAUDE_PROJECTS": "none",
        "MEMVAULT_INBOX": str(tmp_path / "inbox"),
        "MEMVAULT_DREAM_SENSOR_INTERVAL": "5",
        "MEMVAULT_PROFILE_BATCH_DAYS": "8",
    }
    for name in ("DAGSTER_HOME", "MEMVAULT_LLM_BASE_URL"):
        env.pop(name, None)
    cli = Path(sys.executable).with_name("memvault")
    log = (tmp_path / "ui.log").open("wb")
    process = subprocess.Popen(
        [str(cli), "ui", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240  # the webserver, daemon and code server on 2 cores
        while True:
            try:
                _graphql(port, "{ version }")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError((tmp_path / "ui.log").read_text()[-3000:]) from None
                time.sleep(1)
        # This test starts the collector itself: a 02:15 tick of the night's clock (on by
        # default) while it runs would start a second night among the runs it counts.
        assert stop_the_clock(lambda query: _graphql(port, query)) == "STOPPED"
        yield UI(port, tmp_path / ".dagster", process, env)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


GARDEN_PHASES = (
    "survey",
    "dedup",
    "decay",
    "split",
    "invalidate",
    "reconnect",
    "journal",
    "report",
)
#: The tracks the automation sensor starts after the collector and the dream, each whole in
#: one run (the daemon may put two tracks requested on one tick in one run, e.g. the gardener
#: and the layers): yesterday's profile, the lint once the gardener finished, tiering and the
#: knowledge gaps once the dream finished.
TRACKS = [
    {f"garden_{p}" for p in GARDEN_PHASES},
    {"attitude_decay", "skill_levels"},
    {"daily_snapshot", "interest_7d", "interest_30d", "interest_90d", "diary_page"},
    {"lint_structure", "lint_grounding", "lint_semantic", "lint_confirm", "review_queue"},
    {"usage_weights", "tiering"},
    {"knowledge_gaps"},
]
AUTOMATED: set[str] = set().union(*TRACKS)


def _automated(instance: dg.DagsterInstance) -> dict[frozenset[str], dg.DagsterRun]:
    runs = instance.get_runs(
        dg.RunsFilter(tags={"dagster/sensor_name": "default_automation_condition_sensor"})
    )
    return {frozenset(k.to_user_string() for k in r.asset_selection or ()): r for r in runs}


@pytest.mark.timeout(2400)
def test_the_ui_serves_the_asset_graph_runs_a_night_and_backfills_the_profile(
    ui: UI, tmp_path: Path
) -> None:
    nodes = _graphql(ui.port, "{ assetNodes { assetKey { path } } }")["assetNodes"]
    keys = sorted("/".join(n["assetKey"]["path"]) for n in nodes)
    graph = defs.resolve_asset_graph()
    assert keys == sorted(k.to_user_string() for k in graph.get_all_asset_keys())
    assert (ui.home / "dagster.yaml").exists()
    output = (tmp_path / "ui.log").read_text()
    assert "is not set" not in output, "no warning about where the instance lives"
    assert "superseded" not in output, "the current dev command"

    collect = ui.launch("collect_job")
    assert ui.wait(collect) == dg.DagsterRunStatus.SUCCESS

    # The daemon's sensor sees 24 collected sessions and no dream yet: it starts dream_job.
    # Its automation sensor starts the rest of the night, each track once the one before it
    # has run.
    deadline = time.monotonic() + 1800
    with dg.DagsterInstance.from_config(str(ui.home)) as instance:
        while True:
            dreams = instance.get_runs(dg.RunsFilter(job_name="dream_job"))
            automated = _automated(instance)
            finished = [r for r in [*dreams, *automated.values()] if r.status in FINISHED]
            started = [name for assets in automated for name in assets]
            if dreams and set(started) >= AUTOMATED and len(finished) == 1 + len(automated):
                break
            assert time.monotonic() < deadline, (sorted(map(sorted, automated)), dreams)
            time.sleep(5)
        [dream] = dreams
        assert dream.tags.get("dagster/sensor_name") == "dream_gate_sensor"
        check_run(instance, dream.run_id, "dream_job")
        # Each asset once, each track whole in one run.
        assert sorted(started) == sorted(AUTOMATED), sorted(map(sorted, automated))
        assert all(any(track <= assets for assets in automated) for track in TRACKS), automated
        for run in automated.values():
            check_run(instance, run.run_id, None)
        by_asset = {name: run for assets, run in automated.items() for name in assets}

        def span(run: dg.DagsterRun) -> tuple[float, float]:
            record = instance.get_run_record_by_id(run.run_id)
            assert record is not None and record.start_time and record.end_time
            return record.start_time, record.end_time

        # The lint started after the gardener had finished, tiering after the dream.
        assert span(by_asset["lint_structure"])[0] >= span(by_asset["garden_report"])[1]
        assert span(by_asset["tiering"])[0] >= span(dream)[1]
        report = instance.get_latest_materialization_event(dg.AssetKey("garden_report"))
        assert report is not None
        assert report.asset_materialization.metadata["outcome"].value == "succeeded"  # type: ignore[union-attr]

    prefetch = ui.launch("prefetch_job")  # hourly on its schedule; from the launchpad here
    assert ui.wait(prefetch) == dg.DagsterRunStatus.SUCCESS
    with dg.DagsterInstance.from_config(str(ui.home)) as instance:
        check_run(instance, prefetch, "prefetch_job")
    _backfill_the_profile(ui)
    _a_cli_run_reexecutes_from_the_ui(ui, tmp_path)


REEXECUTE = """
mutation {
  launchPipelineReexecution(reexecutionParams: {parentRunId: "%s", strategy: ALL_STEPS}) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}
"""
JOB_RUNS = """
{ runsOrError(filter: {pipelineName: "%s", tags: [{key: ".dagster/repository", value: "%s"}]}) {
    ... on Runs { results { runId } } } }
"""


def _a_cli_run_reexecutes_from_the_ui(ui: UI, tmp_path: Path) -> None:
    """A run the CLI started is a run of the code location's job: listed under the job (the
    Runs tab filters by the repository tag) and re-executed by the UI's "Re-execute all"."""
    env = {k: v for k, v in ui.env.items() if k != "DAGSTER_HOME"}
    cli = Path(sys.executable).with_name("memvault")
    done = subprocess.run(
        [str(cli), "collect", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    parent = json.loads(done.stdout)["dagster_run_id"]
    listed = _graphql(ui.port, JOB_RUNS % ("collect_job", f"__repository__@{LOCATION}"))
    assert parent in [r["runId"] for r in listed["runsOrError"]["results"]]
    launched = _graphql(ui.port, REEXECUTE % parent)["launchPipelineReexecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    child = launched["run"]["runId"]
    ui.wait(child)
    with dg.DagsterInstance.from_config(str(ui.home)) as instance:
        run = instance.get_run_by_id(child)
        assert run is not None and run.parent_run_id == parent
        check_run(instance, child, "collect_job")


FINISHED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


DAILY = ("daily_snapshot", "interest_7d", "interest_30d", "interest_90d", "diary_page")

LAUNCH_BACKFILL = """
mutation {
  launchPartitionBackfill(backfillParams: {
    partitionNames: [%s], assetSelection: [%s], title: "profile backfill"
  }) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
  }
}
"""


def _backfill_the_profile(ui: UI) -> None:
    """The Partitions tab's "Materialize" over the last eight days: GraphQL, the daemon's
    backfill loop, one run per batch of days (MEMVAULT_PROFILE_BATCH_DAYS=8) for each step of
    the chain, every step in the store pool: no lock failure on the DuckDB file."""
    from dagster._core.execution.backfill import BulkActionStatus

    from assets.profile import DAILY_PARTITIONS

    days = DAILY_PARTITIONS.get_partition_keys()[-8:]  # the newest: no later window to refresh
    query = LAUNCH_BACKFILL % (
        ", ".join(json.dumps(d) for d in days),
        ", ".join(f'{{path: ["{name}"]}}' for name in DAILY),
    )
    launched = _graphql(ui.port, query)["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]
    deadline = time.monotonic() + 500
    with dg.DagsterInstance.from_config(str(ui.home)) as instance:
        while True:
            backfill = instance.get_backfill(backfill_id)
            assert backfill is not None
            if backfill.status != BulkActionStatus.REQUESTED:
                break
            assert time.monotonic() < deadline, "the backfill did not finish"
            time.sleep(3)
        assert backfill.status == BulkActionStatus.COMPLETED_SUCCESS, backfill.status
        runs = instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        assert runs and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        # Each run covers the whole batch of days, not one day.
        ranges = {
            (
                r.tags["dagster/asset_partition_range_start"],
                r.tags["dagster/asset_partition_range_end"],
            )
            for r in runs
        }
        assert ranges == {(days[0], days[-1])}, ranges
        assert len(runs) <= 3  # the snapshot, then the windows, then the diary
        for name in DAILY:
            assert set(instance.get_materialized_partitions(dg.AssetKey(name))) == set(days), name
