"""dream_gate_sensor: every branch, from what the Dagster instance records.

The gate state is materialization metadata of ``collected_sessions`` and
``dream_prune``; these tests record such materializations on a test instance
and evaluate the sensor with ``dg.build_sensor_context``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import dagster as dg
import pytest

from assets.dream.sensor import dream_gate_sensor
from memvault import clock
from pipelines.definitions import build_resources
from resources import DreamResource


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        yield test_instance


def collected(instance: dg.DagsterInstance, sessions_total: int) -> None:
    instance.report_runless_asset_event(
        dg.AssetMaterialization("collected_sessions", metadata={"sessions_total": sessions_total})
    )


def dreamed(
    instance: dg.DagsterInstance, hours_ago: float, sessions_total: int, *, dry_run: bool = False
) -> None:
    """A real dream's dream_prune materialization as the asset writes it: it finished
    ``hours_ago``, with ``sessions_total`` sessions in the store."""
    when = clock.now() - dt.timedelta(hours=hours_ago)
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            "dream_prune",
            metadata={
                "last_dream_at": dg.MetadataValue.timestamp(when),
                "sessions_total_at_last_dream": -1 if dry_run else sessions_total,
                "finished_at": dg.MetadataValue.timestamp(when),
                "dry_run": dry_run,
            },
        )
    )


def dry_dreamed(instance: dg.DagsterInstance, hours_ago: float, last_real_hours_ago: float) -> None:
    """A dry run's dream_prune materialization as the asset writes it: it finished
    ``hours_ago`` but carries the last real dream's time forward, and no session mark."""
    now = clock.now()
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            "dream_prune",
            metadata={
                "last_dream_at": dg.MetadataValue.timestamp(
                    now - dt.timedelta(hours=last_real_hours_ago)
                ),
                "sessions_total_at_last_dream": -1,
                "finished_at": dg.MetadataValue.timestamp(now - dt.timedelta(hours=hours_ago)),
                "dry_run": True,
            },
        )
    )


def evaluate(
    instance: dg.DagsterInstance, dream: DreamResource | None = None
) -> dg.SensorResult | dg.SkipReason:
    context = dg.build_sensor_context(
        instance=instance, resources={"dream": dream or DreamResource()}
    )
    return dream_gate_sensor(context)


def test_nothing_collected_yet_skips(instance: dg.DagsterInstance) -> None:
    result = evaluate(instance)
    assert isinstance(result, dg.SkipReason)
    assert "no collected_sessions" in result.skip_message


def test_never_dreamed_but_too_few_sessions(instance: dg.DagsterInstance) -> None:
    collected(instance, 4)
    result = evaluate(instance)
    assert isinstance(result, dg.SkipReason)
    assert "session gate: 4 new session(s)" in result.skip_message
    assert "time gate" not in result.skip_message


def test_never_dreamed_and_enough_sessions_runs(instance: dg.DagsterInstance) -> None:
    collected(instance, 5)
    result = evaluate(instance)
    assert isinstance(result, dg.SensorResult)
    [request] = result.run_requests
    assert "never dreamed" in request.tags["memvault/gate"]
    assert request.run_key.startswith("dream:0:5:")


def test_time_gate_holds(instance: dg.DagsterInstance) -> None:
    collected(instance, 10)
    dreamed(instance, hours_ago=2, sessions_total=3)
    collected(instance, 30)
    result = evaluate(instance)
    assert isinstance(result, dg.SkipReason)
    assert result.skip_message.startswith("time gate: last successful dream 2.0 h ago")
    assert "session gate" not in result.skip_message


def test_session_gate_holds_after_a_day(instance: dg.DagsterInstance) -> None:
    dreamed(instance, hours_ago=30, sessions_total=10)
    collected(instance, 14)
    result = evaluate(instance)
    assert isinstance(result, dg.SkipReason)
    assert "session gate: 4 new session(s) since the last dream" in result.skip_message
    assert "time gate" not in result.skip_message


def test_both_gates_hold_and_both_are_named(instance: dg.DagsterInstance) -> None:
    dreamed(instance, hours_ago=1, sessions_total=10)
    collected(instance, 11)
    result = evaluate(instance)
    assert isinstance(result, dg.SkipReason)
    assert "time gate" in result.skip_message and "session gate" in result.skip_message


def test_both_gates_open_runs_once_per_state(instance: dg.DagsterInstance) -> None:
    dreamed(instance, hours_ago=25, sessions_total=10)
    collected(instance, 15)
    first = evaluate(instance)
    second = evaluate(instance)
    assert isinstance(first, dg.SensorResult) and isinstance(second, dg.SensorResult)
    # Same inputs within the hour: the same run key, which Dagster runs only once.
    assert first.run_requests[0].run_key == second.run_requests[0].run_key
    assert ":15:" in first.run_requests[0].run_key


def test_a_real_dream_an_hour_ago_holds_the_time_gate(instance: dg.DagsterInstance) -> None:
    # The counterpart of the dry-run case below: with the same sessions, a real dream 1 h ago
    # holds the gate, so a gate that ignored the hours would fail here.
    dreamed(instance, hours_ago=30, sessions_total=10)
    collected(instance, 20)
    dreamed(instance, hours_ago=1, sessions_total=20)
    collected(instance, 30)
    result = evaluate(instance)
    assert isinstance(result, dg.SkipReason)
    assert result.skip_message == ("time gate: last successful dream 1.0 h ago (needs > 24 h)"), (
        result.skip_message
    )


def test_a_dry_run_does_not_count_as_a_dream(instance: dg.DagsterInstance) -> None:
    dreamed(instance, hours_ago=30, sessions_total=10)
    collected(instance, 20)
    # A dry run 1 h ago writes the previous real dream's time (30 h ago) and no session mark.
    dry_dreamed(instance, hours_ago=1, last_real_hours_ago=30)
    result = evaluate(instance)
    assert isinstance(result, dg.SensorResult)
    # Measured from the real dream: 30 h and the 10 sessions since it (not the dry run's 1 h).
    assert (
        result.run_requests[0].tags["memvault/gate"]
        == "30.0 h since the last dream, 10 new sessions"
    )


def test_a_dry_run_keeps_the_session_mark_of_the_last_real_dream(
    instance: dg.DagsterInstance,
) -> None:
    dreamed(instance, hours_ago=30, sessions_total=10)
    dry_dreamed(instance, hours_ago=1, last_real_hours_ago=30)
    collected(instance, 12)  # 2 new sessions since the real dream: the session gate holds
    result = evaluate(instance)
    assert isinstance(result, dg.SkipReason)
    assert result.skip_message == (
        "session gate: 2 new session(s) since the last dream (needs >= 5)"
    ), result.skip_message


def test_busy_when_a_dream_is_running(instance: dg.DagsterInstance) -> None:
    collected(instance, 50)
    instance.add_run(
        dg.DagsterRun(
            job_name="dream_job", run_id="0" * 8 + "-busy", status=dg.DagsterRunStatus.STARTED
        )
    )
    result = evaluate(instance)
    assert isinstance(result, dg.SkipReason)
    assert result.skip_message.startswith("busy: dream run")


def test_the_configured_gate_is_honoured(instance: dg.DagsterInstance) -> None:
    dreamed(instance, hours_ago=3, sessions_total=10)
    collected(instance, 12)
    default = evaluate(instance)  # 24 h and 5 sessions: both hold
    assert isinstance(default, dg.SkipReason) and "needs > 24 h" in default.skip_message
    opened = evaluate(instance, DreamResource(gate_hours=2, gate_sessions=2))
    assert isinstance(opened, dg.SensorResult)
    held = evaluate(instance, DreamResource(gate_hours=2, gate_sessions=3))
    assert isinstance(held, dg.SkipReason)
    assert held.skip_message == "session gate: 2 new session(s) since the last dream (needs >= 3)"


def test_the_code_location_reads_the_gate_from_the_environment(
    instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_DREAM_GATE_HOURS", "1.5")
    monkeypatch.setenv("MEMVAULT_DREAM_GATE_SESSIONS", "1")
    dreamed(instance, hours_ago=2, sessions_total=10)
    collected(instance, 11)
    result = evaluate(instance, build_resources()["dream"])  # type: ignore[arg-type]
    assert isinstance(result, dg.SensorResult)
    assert (
        "2.0 h since the last dream, 1 new sessions" in result.run_requests[0].tags["memvault/gate"]
    )
