"""The collector assets, materialized with dg.materialize against a real store."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

import memvault
from assets.collector import collected_sessions, memory_embeddings
from resources import CollectorSourcesResource, EmbedderResource, JudgeResource, StoreResource
from tests.helpers import FIXTURES, asset_metadata

ASSETS = [collected_sessions, memory_embeddings]  # the reference check runs in the first step


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    shutil.copy(FIXTURES / "small_history.jsonl", folder)
    return folder


def _resources(url: str, inbox: Path, claude: Path | None) -> dict:
    return {
        "store": StoreResource(url=url),
        "sources": CollectorSourcesResource(
            inbox=str(inbox), claude_projects=str(claude) if claude else None
        ),
        "llm": JudgeResource(),
        "embedder": EmbedderResource(spec="hashing"),
    }


def test_collect_and_embed(store_url: str, inbox: Path) -> None:
    resources = _resources(store_url, inbox, FIXTURES / "claude_code")
    result = dg.materialize(ASSETS, resources=resources)
    assert result.success
    collected = asset_metadata(result, "collected_sessions")
    assert collected["files_ingested"] == 4 and collected["files_failed"] == 0
    assert collected["sessions_added"] == 4 == collected["sessions_total"]
    assert collected["judge"] == "heuristic" and collected["llm_calls"] == 0
    embedded = asset_metadata(result, "memory_embeddings")
    with memvault.open(store_url) as store:
        counts = store.counts()
    assert embedded["vectors_blocks"] == counts["blocks"] == 18
    assert embedded["model"] == "hashing-256"
    assert all(e.passed for e in result.get_asset_check_evaluations())

    again = dg.materialize(ASSETS, resources=resources)
    assert asset_metadata(again, "collected_sessions")["files_unchanged"] == 4
    assert asset_metadata(again, "collected_sessions")["records_added"] == 0
    assert asset_metadata(again, "memory_embeddings")["embedded_blocks"] == 0


def test_a_bad_inbox_file_is_reported_and_the_rest_collected(tmp_path: Path, inbox: Path) -> None:
    (inbox / "broken.jsonl").write_text('{"type": "session", "id": "x"\n')
    url = f"duckdb://{tmp_path / 's.duckdb'}"
    result = dg.materialize(ASSETS, resources=_resources(url, inbox, None))
    meta = asset_metadata(result, "collected_sessions")
    assert meta["files_failed"] == 1 and meta["files_ingested"] == 1


def test_reference_check_fails_on_dangling_rows(tmp_path: Path, inbox: Path) -> None:
    url = f"duckdb://{tmp_path / 's.duckdb'}"
    with memvault.open(url) as store:
        store.backend.execute(
            "INSERT INTO mentions (id, entity_id, block_id, mentioned_at) "
            "VALUES ('m-bad', 'no-such-entity', NULL, TIMESTAMP '2026-01-01 00:00:00')"
        )
    result = dg.materialize(ASSETS, resources=_resources(url, inbox, None), raise_on_error=False)
    evaluation = result.get_asset_check_evaluations()[0]
    assert not evaluation.passed
    assert evaluation.metadata["dangling_total"].value == 1
    assert "| mention.entity_id | 1 |" in evaluation.metadata["dangling"].value
    assert not any(
        e.event_specific_data.materialization.asset_key.to_user_string() == "memory_embeddings"
        for e in result.get_asset_materialization_events()
    ), "a failed blocking check stops what depends on it"
