"""What a data engineer sees in Dagster's UI: words, owners, kinds, masked secrets, plottable metadata.

These read the definitions (as the UI's catalog does) and the events a real run
records (as the asset pages do).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import dagster as dg
import pytest

import memvault
from tests.dagster.test_definitions import JOBS
from tests.helpers import CLAUSE, FIXTURES, internal_codes


def _definitions(monkeypatch: pytest.MonkeyPatch, **env: str) -> dg.Definitions:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    import assets.collector
    import assets.common
    import assets.dream
    import assets.dream.checks
    import assets.dream.graph
    import assets.dream.jobs
    import assets.dream.sensor
    import assets.dream.stages
    import assets.gardener
    import assets.layers
    import assets.lifecycle
    import assets.lint
    import assets.profile
    import assets.recall
    import pipelines.definitions

    for module in (
        assets.common,
        assets.collector,
        assets.dream.stages,
        assets.dream.graph,
        assets.dream.checks,
        assets.dream.jobs,
        assets.dream.sensor,
        assets.dream,
        assets.gardener,
        assets.lint,
        assets.profile,
        assets.lifecycle,
        assets.layers,
        assets.recall,
    ):
        importlib.reload(module)
    return importlib.reload(pipelines.definitions).defs


@pytest.fixture(autouse=True)
def _restore_definitions(monkeypatch: pytest.MonkeyPatch):
    yield
    monkeypatch.undo()
    _definitions(monkeypatch)


def test_descriptions_owners_and_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    defs = _definitions(monkeypatch, MEMVAULT_LLM_BASE_URL="")
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        text = node.description or ""
        assert len(text) > 40 and not CLAUSE.search(text), (key, text)
        assert node.owners == ["team:memvault"], key
        assert "openai" not in node.kinds, f"{key}: no LLM is configured"
        assert "duckdb" in node.kinds, key
    for check in graph.asset_check_keys:
        text = graph.get_check_spec(check).description or ""
        assert len(text) > 30 and not CLAUSE.search(text), (check, text)
    jobs = [j for j in defs.resolve_all_job_defs() if not j.name.startswith("__")]
    assert {j.name for j in jobs} == set(JOBS)
    for job in jobs:
        assert not CLAUSE.search(job.description or ""), job.name
    sensor = defs.resolve_sensor_def("dream_gate_sensor")
    assert not CLAUSE.search(sensor.description or "")
    for schedule in defs.schedules or ():
        assert not CLAUSE.search(schedule.description or ""), schedule.name


def test_kinds_follow_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    defs = _definitions(
        monkeypatch,
        MEMVAULT_LLM_BASE_URL="http://127.0.0.1:9/v1",
        MEMVAULT_STORE="postgresql://memvault@db.example:5432/memory",
    )
    graph = defs.resolve_asset_graph()
    kinds = {k.to_user_string(): graph.get(k).kinds for k in graph.get_all_asset_keys()}
    assert "openai" in kinds["dream_consolidate"] and "openai" in kinds["dream_reflect"]
    assert "openai" not in kinds["dream_edges"] and "openai" not in kinds["garden_decay"]
    assert "openai" in kinds["diary_page"] and "openai" not in kinds["daily_snapshot"]
    assert "openai" in kinds["tiering"] and "openai" not in kinds["usage_weights"]
    assert all("postgres" in k and "duckdb" not in k for k in kinds.values())


def test_the_store_password_is_masked_on_the_resource_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MEMVAULT_STORE_PASSWORD", raising=False)
    defs = _definitions(
        monkeypatch, MEMVAULT_STORE="postgresql://memvault:s3cret-pw@db.example:5432/memory"
    )
    shown = {
        key: resource.model_dump()  # type: ignore[union-attr]
        for key, resource in defs.resources.items()
        if key in ("store", "gardener")
    }
    assert shown["store"]["url"] == "postgresql://memvault:***@db.example:5432/memory"
    # One place holds the URL: the gardener tends the store resource's store.
    assert not any("url" in k and k != "ledger_url" for k in shown["gardener"])
    assert "s3cret" not in repr(shown)
    import os

    assert os.environ["MEMVAULT_STORE_PASSWORD"] == "s3cret-pw"  # where opening finds it


def test_the_collector_has_a_daily_freshness_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _definitions(monkeypatch).resolve_asset_graph()
    for name in ("collected_sessions", "memory_embeddings"):
        policy = graph.get(dg.AssetKey(name)).freshness_policy
        assert policy is not None and policy.fail_window.to_timedelta().total_seconds() == 26 * 3600


def test_recorded_metadata_is_flat_and_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A demo night's events: numbers the UI can plot, times as timestamps, no raw dicts."""
    from tests.dagster.dream_support import seed_demo_store

    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    monkeypatch.setenv("MEMVAULT_INBOX", str(FIXTURES / "no-such-inbox"))
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(url, tmp_path, sessions=24)
    from pipelines.runner import run_job

    with dg.instance_for_test() as instance:
        for job in ("collect_job", "dream_job", "garden_job", "lint_job"):
            assert run_job(job, url, instance=instance).success, job
        records = instance.get_event_records(
            dg.EventRecordsFilter(event_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
        )
    with memvault.open(url) as store:  # the owner's own names (a tool called "S3") are no codes
        names = [str(name) for (name,) in store.fetch("SELECT name FROM entities")]
    assert len(records) == 23  # the dream graph is four assets: edges .. discoveries
    numbers = 0
    coded: list[str] = []  # internal codes in what the asset pages show
    for record in records:
        metadata = record.asset_materialization.metadata  # type: ignore[union-attr]
        key = record.asset_key.to_user_string()  # type: ignore[union-attr]
        for name, value in metadata.items():
            if internal_codes(f"{name} {_shown(value)}", names):
                coded.append(f"{key}.{name} = {_shown(value)!r}")
            assert not isinstance(value, dg.JsonMetadataValue), f"{key}.{name} is a raw dict"
            if name.endswith("_at"):
                assert isinstance(value, dg.TimestampMetadataValue | dg.TextMetadataValue), name
            numbers += isinstance(value, dg.IntMetadataValue | dg.FloatMetadataValue)
    assert numbers > 100
    assert not coded, coded


def _shown(value: dg.MetadataValue) -> str:
    """The words a metadata entry shows on an asset page (numbers and timestamps have none)."""
    if isinstance(value, dg.TextMetadataValue | dg.MarkdownMetadataValue):
        return str(value.value)
    return ""
