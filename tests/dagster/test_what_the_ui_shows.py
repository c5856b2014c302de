"""What Dagster's UI shows of the code location on memvault's instance, read through the
GraphQL API the UI itself queries (the webserver's schema, served in this process).

* The "Auto-materialize on/off" tag on a job or group of automated assets reads the
  instance's automation flag: it must say on, as the automation sensor runs the night.
* The night's one clock (``collector_daily``) and the automation sensor are on from the
  start.
* The dream sensor's page describes the gate the sensor was loaded with.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext, WorkspaceRequestContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.asset_daemon import set_auto_materialize_paused
from dagster_graphql.test.utils import execute_dagster_graphql

from pipelines.owners import owners_gate_description
from pipelines.runner import LOCATION, automation_on, dagster_home, persistent_instance
from tests.dagster.test_what_engineers_see import _definitions


@contextmanager
def ui_api(instance: dg.DagsterInstance) -> Iterator[WorkspaceRequestContext]:
    """The UI's GraphQL context over the code location as ``memvault ui`` names it."""
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name=LOCATION), location_name=LOCATION
    )
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as process:
        yield process.create_request_context()


def _query(context: WorkspaceRequestContext, query: str) -> dict[str, Any]:
    result = execute_dagster_graphql(context, query)
    assert not result.errors, result.errors
    return dict(result.data)


SELECTOR = '{repositoryLocationName: "%s", repositoryName: "__repository__", %s: "%s"}'
STATE = """{
  instance { autoMaterializePaused }
  clock: scheduleOrError(scheduleSelector: %s) { ... on Schedule { scheduleState { status } } }
  automation: sensorOrError(sensorSelector: %s) { ... on Sensor { sensorState { status } } }
  dream: sensorOrError(sensorSelector: %s) {
    ... on Sensor { description sensorState { status } } }
}"""


def _state(context: WorkspaceRequestContext) -> dict[str, Any]:
    return _query(
        context,
        STATE
        % (
            SELECTOR % (LOCATION, "scheduleName", "collector_daily"),
            SELECTOR % (LOCATION, "sensorName", "default_automation_condition_sensor"),
            SELECTOR % (LOCATION, "sensorName", "dream_gate_sensor"),
        ),
    )


@pytest.fixture(params=["sqlite", "postgres"])
def home(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new DAGSTER_HOME as the CLI makes it (SQLite), or one on PostgreSQL."""
    chosen = request.getfixturevalue("pg_dagster_home") if request.param == "postgres" else None
    home = chosen or tmp_path / ".dagster"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return dagster_home()  # with memvault's dagster.yaml when it has none


def test_a_new_instance_shows_the_night_on(home: Path) -> None:
    with dg.DagsterInstance.from_config(str(home)) as untouched, ui_api(untouched) as context:
        assert _state(context)["instance"]["autoMaterializePaused"], "Dagster's own default"
    with persistent_instance() as instance, ui_api(instance) as context:
        shown = _state(context)
    assert shown["instance"]["autoMaterializePaused"] is False, "Auto-materialize on"
    assert shown["clock"]["scheduleState"]["status"] == "RUNNING"
    assert shown["automation"]["sensorState"]["status"] == "RUNNING"
    assert shown["dream"]["sensorState"]["status"] == "RUNNING"


def test_a_pause_chosen_in_the_ui_is_kept(home: Path) -> None:
    with persistent_instance() as instance:
        set_auto_materialize_paused(instance, True)  # the UI's toggle
        automation_on(instance)  # the next CLI command or `memvault ui`
        with ui_api(instance) as context:
            assert _state(context)["instance"]["autoMaterializePaused"] is True


def test_the_dream_sensor_describes_the_gate_in_force(monkeypatch: pytest.MonkeyPatch) -> None:
    with dg.instance_for_test() as instance:
        with ui_api(instance) as context:
            default = _state(context)["dream"]["description"]
        assert "more than 24 h" in default and "at least 5 new sessions" in default
        try:
            _definitions(monkeypatch, MEMVAULT_DREAM_GATE_HOURS="6", MEMVAULT_DREAM_GATE_SESSIONS="1")  # fmt: skip
            with ui_api(instance) as context:
                shown = _state(context)["dream"]["description"]
        finally:  # the code location as the other tests load it
            monkeypatch.undo()
            _definitions(monkeypatch)
    assert "more than 6 h" in shown and "at least 1 new session " in shown, shown
    assert "24" not in shown and "5 new" not in shown
    # Many owners: the same sensor name, each owner's gate, the same settings.
    owners = owners_gate_description(6, 1)
    assert "more than 6 h" in owners and "at least 1 new session " in owners, owners


CLOCK = """{ scheduleOrError(scheduleSelector: %s) {
    ... on Schedule { scheduleState { id status } } } }""" % (
    SELECTOR % (LOCATION, "scheduleName", "collector_daily")
)
#: The schedule's toggle in the UI (Automation page).
STOP = """mutation { stopRunningSchedule(id: "%s") {
    __typename ... on ScheduleStateResult { scheduleState { status } } } }"""


def stop_the_clock(run: Any) -> str:
    """Turn ``collector_daily`` off as its toggle in the UI does, with ``run(query) -> data``
    (in this process, or over HTTP); returns the status it then has."""
    state = run(CLOCK)["scheduleOrError"]["scheduleState"]
    stopped = run(STOP % state["id"])["stopRunningSchedule"]
    assert stopped["__typename"] == "ScheduleStateResult", stopped
    return str(run(CLOCK)["scheduleOrError"]["scheduleState"]["status"])


def test_the_night_clock_can_be_stopped_in_the_ui_and_stays_stopped(home: Path) -> None:
    with persistent_instance() as instance:
        with ui_api(instance) as context:
            assert stop_the_clock(lambda q: _query(context, q)) == "STOPPED"
        with ui_api(instance) as context:  # the code location loaded again: still stopped
            assert _state(context)["clock"]["scheduleState"]["status"] == "STOPPED"
