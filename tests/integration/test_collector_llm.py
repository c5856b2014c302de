"""The collector with a real OpenAI-compatible server: transcripts enriched by the LLM, re-runs free."""

from __future__ import annotations

from pathlib import Path

import pytest

import memvault
from memvault.collector import collect
from memvault.judge import JudgeSettings, make_judge
from memvault.judge.store_cache import StoreJudgeCache
from tests.helpers import FIXTURES
from tests.integration.conftest import LlamaServer

pytestmark = pytest.mark.integration
PROJECT = FIXTURES / "claude_code" / "-home-ada-src-shop"


def test_transcripts_are_enriched_and_a_rerun_costs_no_call(
    llm_server: LlamaServer, tmp_path: Path
) -> None:
    settings = JudgeSettings(
        base_url=llm_server.base_url, model=llm_server.model, timeout=120, max_tokens=384
    )
    with memvault.open(f"duckdb://{tmp_path / 's.duckdb'}") as store:
        judge = make_judge(settings, cache=StoreJudgeCache(store))
        report = collect(store, inbox=None, claude_projects=PROJECT, judge=judge)
        assert report.failures == []
        assert judge.stats.calls >= 1
        assert store.counts()["sessions"] == 1
        cached = store.fetch("SELECT count(*) FROM judge_cache")[0][0]
        # The 135M model may fail the schema; then the transcript is still imported, with a warning.
        assert cached >= 1 or report.warnings

        # Forget which files were read, as after a reset: the same questions are asked again
        # and every answer the model gave before comes from the store's reply cache.
        store.backend.execute("DELETE FROM ingested_sources")
        again = make_judge(settings, cache=StoreJudgeCache(store))
        rerun = collect(store, inbox=None, claude_projects=PROJECT, judge=again)
        assert again.stats.cache_hits == cached
        if not report.warnings:
            assert again.stats.calls == 0
        assert sum(rerun.inserted.values()) == 0
