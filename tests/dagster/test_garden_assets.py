"""The gardener assets: one per phase, the state passed through the store, the report last."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg
import pytest

import memvault
from assets.gardener import garden, garden_job
from memvault.gardener.ledger import Ledger
from memvault.gardener.report import parse_report
from memvault.normalize import utcnow
from resources import JudgeResource, StoreResource
from resources.gardener import GardenerResource
from tests.garden_support import a_new_session, demo_file, drop_backup_schemas, seed
from tests.helpers import asset_metadata, internal_codes

ASSETS = [garden]  # the survey, the six phases, the report and the two checks: one step
PHASE_ASSETS = [
    "garden_survey",
    "garden_dedup",
    "garden_decay",
    "garden_split",
    "garden_invalidate",
    "garden_reconnect",
    "garden_journal",
    "garden_report",
]


@pytest.fixture
def small_store(store_url: str, tmp_path: Path) -> str:
    path, _ = demo_file(tmp_path, sessions=30, days=90)
    with memvault.open(store_url) as store:
        seed(store, path)
    yield store_url
    drop_backup_schemas(store_url)


def test_the_ceremony_as_assets(small_store: str) -> None:
    resources = {
        "gardener": GardenerResource(embedder="hashing", max_mutations=40),
        "store": StoreResource(url=small_store),
        "llm": JudgeResource(),
    }
    result = dg.materialize(ASSETS, resources=resources)
    assert result.success
    assert [e.passed for e in result.get_asset_check_evaluations()] == [True, True]
    survey = asset_metadata(result, "garden_survey")
    run_id = survey["garden_run_id"]
    assert "kg_invalidate" in str(survey["capabilities"])
    for key in ("garden_dedup", "garden_decay", "garden_split", "garden_journal"):
        meta = asset_metadata(result, key)
        assert meta["garden_run_id"] == run_id  # one garden run across the assets
        assert meta["judge"] == "heuristic" and meta["llm_calls"] == 0
        assert meta["mutations_used"] <= meta["mutations_max"] == 40
    report_meta = asset_metadata(result, "garden_report")
    assert report_meta["outcome"] == "succeeded", report_meta["outcome_summary"]
    with memvault.open(small_store) as store:
        run = store.run(run_id)
        assert run is not None and run["status"] == "succeeded"
        saved = store.get_row("artifacts", report_meta["report_id"])
        assert saved is not None
        report = parse_report(saved["content"])
        assert report.mutations_used == asset_metadata(result, "garden_journal")["mutations_used"]
        assert Ledger(store).audit_rows(run_id) > 0

    again = dg.materialize(ASSETS, resources=resources)
    assert asset_metadata(again, "garden_survey")["garden_run_id"] != run_id


def test_a_phase_without_its_survey_fails_clearly(small_store: str) -> None:
    resources = {
        "gardener": GardenerResource(),
        "store": StoreResource(url=small_store),
        "llm": JudgeResource(),
    }
    result = dg.materialize(
        ASSETS, selection=["garden_decay"], resources=resources, raise_on_error=False
    )
    assert not result.success


def test_job_and_automation_cover_the_group() -> None:
    defs = dg.Definitions(
        assets=ASSETS,
        jobs=[garden_job],
        resources={
            "gardener": GardenerResource(),
            "store": StoreResource(),
            "llm": JudgeResource(),
        },
    )
    job = defs.resolve_job_def("garden_job")
    assert {k.to_user_string() for k in job.asset_layer.executable_asset_keys} == set(PHASE_ASSETS)
    # The survey follows the collector; every later phase runs in the survey's run.
    specs = {spec.key.to_user_string(): spec for spec in garden.specs}
    conditions = {name: spec.automation_condition for name, spec in specs.items()}
    assert conditions.pop("garden_survey").label == "after the collector"  # type: ignore[union-attr]
    assert {c.label for c in conditions.values() if c} == {"with the gardener's survey"}
    assert len(conditions) == len(PHASE_ASSETS) - 1 and all(conditions.values())
    assert {spec.group_name for spec in specs.values()} == {"gardener"}
    assert garden.op.pool == "memvault_store"


def _materialized(result: dg.ExecuteInProcessResult) -> set[str]:
    return {
        e.event_specific_data.materialization.asset_key.to_user_string()  # type: ignore[union-attr]
        for e in result.get_asset_materialization_events()
    }


def test_a_failing_phase_fails_its_asset_and_its_retry_continues(
    small_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.gardener import run as garden_run

    calls = {"n": 0}
    real = garden_run.PHASE_FUNCTIONS["decay"]

    def flaky(ctx):  # type: ignore[no-untyped-def]
        if ctx.run.run_id.startswith("garden-rehearsal-"):
            return real(ctx)  # the idempotency check's rehearsal, not the run
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("the store went away for a moment")
        real(ctx)

    monkeypatch.setitem(garden_run.PHASE_FUNCTIONS, "decay", flaky)
    resources = {
        "gardener": GardenerResource(),
        "store": StoreResource(url=small_store),
        "llm": JudgeResource(),
    }
    result = dg.materialize(ASSETS, resources=resources)
    assert result.success and calls["n"] == 2
    failures = [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    assert [e.step_key for e in failures] == ["garden"]  # the ceremony's one step
    assert asset_metadata(result, "garden_report")["outcome"] == "succeeded"

    calls["n"] = -100  # now it fails every time: the asset fails, nothing after it runs
    monkeypatch.setitem(garden_run.PHASE_FUNCTIONS, "decay", lambda ctx: 1 / 0)
    broken = dg.materialize(ASSETS, resources=resources, raise_on_error=False)
    assert not broken.success
    assert _materialized(broken) == {"garden_survey", "garden_dedup"}
    with memvault.open(small_store) as store:
        ledger = Ledger(store)
        run_id = ledger.run_for_dagster(broken.run_id)
        assert run_id is not None
        state = ledger.load_state(run_id)
    [stop] = [s["stop"] for s in state["stores"].values()]
    assert stop["phase"] == "decay" and stop["reason"].startswith("error")
    assert any("ZeroDivisionError" in e for e in state["errors"])


def test_a_failed_outcome_fails_the_report(
    small_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.gardener.adapters.memvault_store import MemvaultGardenStore

    def no_room(self, label):  # type: ignore[no-untyped-def]
        raise OSError("no space left on device")

    monkeypatch.setattr(MemvaultGardenStore, "backup", no_room)
    resources = {
        "gardener": GardenerResource(mode="autonomous"),
        "store": StoreResource(url=small_store),
        "llm": JudgeResource(),
    }
    result = dg.materialize(ASSETS, resources=resources, raise_on_error=False)
    assert not result.success
    assert "garden_report" not in _materialized(result)
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "garden"
    assert "mandatory backup" in str(failure.step_failure_data.user_failure_data.description)  # type: ignore[union-attr]
    with memvault.open(small_store) as store:  # a blocked store got no mutation at all
        assert not store.fetch(
            "SELECT 1 FROM audit_log WHERE target_table = 'blocks' AND phase <> 'ingest'"
        )


def _written(url: str) -> tuple[int, int, int]:
    with memvault.open(url) as store:
        return (
            store.fetch("SELECT count(*) FROM audit_log")[0][0],
            store.fetch("SELECT count(*) FROM runs")[0][0],
            store.fetch("SELECT count(*) FROM blocks WHERE status = 'active'")[0][0],
        )


def test_a_second_run_right_after_a_clean_one_acts_on_nothing(small_store: str) -> None:
    """The idempotency check rehearses the next run (writing nothing) and finds nothing to do;
    a memory that became stale since is found, and still not written."""
    from memvault.gardener.rehearse import rehearse

    gardener = GardenerResource(embedder="hashing", max_mutations=500)
    target = StoreResource(url=small_store)
    resources = {"gardener": gardener, "store": target, "llm": JudgeResource()}
    result = dg.materialize(ASSETS, resources=resources)
    assert result.success
    [check] = [
        c for c in result.get_asset_check_evaluations() if c.check_name == "garden_idempotent"
    ]
    shown = {k: v.value for k, v in check.metadata.items()}
    assert check.passed and shown["would_act"] == 0 and shown["phases_rehearsed"] == 5, shown
    assert asset_metadata(result, "garden_report")["mutations_used"] > 0  # it did act

    with memvault.open(small_store) as store:  # one memory left untouched for 60 days
        candidates = [
            row[0]
            for row in store.fetch(
                "SELECT id FROM blocks WHERE status = 'active' AND NOT pinned "
                "AND importance >= 0.5 AND kind = 'memory' AND id NOT IN (SELECT target_id "
                "FROM audit_log WHERE action IN ('decay', 'expire')) ORDER BY id"
            )
        ]
        with gardener.open(target) as (_, stores):  # and not one the owner's recalls keep
            used = stores[0].kept_by_use(candidates, utcnow())  # type: ignore[attr-defined]
        stale = next(c for c in candidates if c not in used)
        store.backend.execute(
            "UPDATE blocks SET updated_at = :t, last_accessed_at = NULL WHERE id = :id",
            {"t": utcnow() - dt.timedelta(days=60), "id": stale},
        )
    before = _written(small_store)
    with gardener.open(target) as (ledger, stores):
        found = rehearse(ledger, stores, JudgeResource().build(), gardener.config())
    assert not found.idle
    assert any(a.startswith("decay on ") and stale in a for a in found.acts), found.acts
    assert _written(small_store) == before, "a rehearsal writes nothing"


#: What Dagster's automation puts on the runs it starts (the nightly chain after the collector).
NIGHTLY = {"dagster/from_automation_condition": "true"}


def _garden_runs(url: str) -> int:
    with memvault.open(url) as store:
        return int(store.fetch("SELECT count(*) FROM runs WHERE kind = 'garden'")[0][0])


def test_a_quiet_night_is_skipped_with_its_reason_and_a_busy_one_gardens(
    store_url: str, tmp_path: Path
) -> None:
    with memvault.open(store_url) as store:
        a_new_session(store, tmp_path, 6, topic="billing")
    resources = {
        "gardener": GardenerResource(embedder="hashing"),
        "store": StoreResource(url=store_url),
        "llm": JudgeResource(),
    }
    try:
        first = dg.materialize(ASSETS, resources=resources, tags=NIGHTLY)
        assert first.success and _materialized(first) == set(PHASE_ASSETS)
        survey = asset_metadata(first, "garden_survey")
        assert survey["garden_due"] is True and "never gardened" in survey["cadence"]

        # Nothing came in since: the night's step gardens nothing and says why.
        quiet = dg.materialize(ASSETS, resources=resources, tags=NIGHTLY)
        assert quiet.success and _materialized(quiet) == set()
        assert not quiet.get_asset_check_evaluations()
        [seen] = [
            e.event_specific_data.asset_observation  # type: ignore[union-attr]
            for e in quiet.all_events
            if e.event_type_value == "ASSET_OBSERVATION"
        ]
        assert seen.asset_key == dg.AssetKey("garden_survey")
        shown = {k: v.value for k, v in seen.metadata.items()}
        assert shown["garden_due"] is False and shown["quiet"] is True
        assert "is quiet: 0 new or changed memory item(s)" in str(shown["cadence"])
        assert "at the latest" in str(seen.description)
        assert not internal_codes(str(seen.description) + str(shown))
        assert _garden_runs(store_url) == 1, "a skipped night starts no garden run"

        # Somebody asks for a run on the quiet store: it gardens, and says the store was quiet.
        asked = dg.materialize(ASSETS, resources=resources)
        assert asked.success and _materialized(asked) == set(PHASE_ASSETS)
        assert asset_metadata(asked, "garden_survey")["quiet"] is True
        summary = asset_metadata(asked, "garden_report")["outcome_summary"]
        assert "Run on request although not due" in summary and "is quiet" in summary

        # The collector brought a busy day: the next night gardens.
        with memvault.open(store_url) as store:
            a_new_session(store, tmp_path, 5, topic="search")
        busy = dg.materialize(ASSETS, resources=resources, tags=NIGHTLY)
        assert busy.success and _materialized(busy) == set(PHASE_ASSETS)
        assert [e.passed for e in busy.get_asset_check_evaluations()] == [True, True]
        survey = asset_metadata(busy, "garden_survey")
        assert survey["garden_due"] is True and "is active" in survey["cadence"]
        assert _garden_runs(store_url) == 3
    finally:
        drop_backup_schemas(store_url)
