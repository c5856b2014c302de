"""The lint and review assets with ``dg.materialize``: figures in metadata, a re-run that
costs nothing, the guarantee check, low-confidence intake and deadlines."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import dagster as dg

import memvault
from assets import lint as lint_assets
from memvault.dream.report import stage_figures
from memvault.judge import ScriptedJudge
from resources import EmbedderResource, JudgeResource, LintResource, ReviewResource, StoreResource
from tests.dagster.dream_support import seed_demo_store
from tests.helpers import asset_metadata as metadata
from tests.store.temporal_history import History

ASSETS = [lint_assets.lint]  # the four layers, the review queue and the check: one step


def _contradicts(request: Any) -> dict[str, Any]:
    return {"contradicts": True, "confidence": 0.9, "reason": "both cannot hold",
            "resolution": "SUPERSEDE", "newer": "a"}  # fmt: skip


class Scripted(JudgeResource):
    def build(self, cache=None):  # type: ignore[override]
        return ScriptedJudge(
            {
                "detect_contradiction": _contradicts,
                "confirm_change": lambda r: {"agree": False, "confidence": 0.9, "reason": "no"},
            }
        )


def _lint(url: str, **overrides: Any) -> dg.ExecuteInProcessResult:
    resources: dict[str, Any] = {
        "store": StoreResource(url=url),
        "llm": Scripted(),
        "review": ReviewResource(),
        "lint": LintResource(),
        "embedder": EmbedderResource(spec="hashing"),
    }
    return dg.materialize(ASSETS, resources=resources | overrides, raise_on_error=False)


def test_a_lint_reports_each_layer_and_a_second_one_costs_nothing(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(url, tmp_path, sessions=24)
    first = _lint(url)
    assert first.success
    structure, semantic = metadata(first, "lint_structure"), metadata(first, "lint_semantic")
    confirm, queue = metadata(first, "lint_confirm"), metadata(first, "review_queue")
    assert structure["new_facts_since"] == "the first lint: every fact"
    assert semantic["mode"] == "llm" and semantic["new_facts"] > 100
    assert 0 < semantic["pairs_asked"] <= math.ceil(semantic["new_facts"] * 5 / 100)
    assert semantic["llm_calls"] == semantic["pairs_asked"]
    # Every proposal waits: its "newer" contradicts the dates, or the predicate (one that may
    # hold several values) forbids a supersede without a strictly later valid_at; only what
    # passes that check is asked again. Nothing applied; at most 10 calls per 100.
    assert confirm["proposed"] == confirm["queued_for_review"] == semantic["proposed_changes"]
    assert confirm["auto_applied"] == 0 and confirm["refused_by_definitions"] > 0
    assert confirm["invalid_verdicts"] + confirm["llm_calls"] == confirm["proposed"]
    assert semantic["llm_calls"] + confirm["llm_calls"] <= 10 * semantic["new_facts"] / 100
    assert queue["waiting"] >= confirm["queued_for_review"]
    [check] = first.get_asset_check_evaluations()
    assert check.check_name == "judged_changes_confirmed" and check.passed

    second = _lint(url)
    assert second.success
    semantic = metadata(second, "lint_semantic")
    assert semantic["new_facts"] == semantic["llm_calls"] == 0
    assert metadata(second, "lint_confirm")["llm_calls"] == 0
    assert metadata(second, "lint_structure")["new_findings"] == 0


def test_low_confidence_memories_are_queued_and_expire_past_their_deadline(
    tmp_path: Path,
) -> None:
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    seed_demo_store(url, tmp_path, sessions=8)
    with memvault.open(url) as store:
        [(doubtful,)] = store.fetch("SELECT id FROM triples ORDER BY id LIMIT 1")
        store.backend.execute("UPDATE triples SET confidence = 0.1 WHERE id = :i", {"i": doubtful})
        before = store.get_row("triples", doubtful)
    first = _lint(url, review=ReviewResource(low_confidence=0.2))
    assert first.success and metadata(first, "review_queue")["low_confidence_queued"] == 1
    with memvault.open(url) as store:
        store.backend.execute(
            "UPDATE review_queue SET deadline = created_at - INTERVAL '1 day' WHERE id = :i",
            {"i": f"memory:{doubtful}"},
        )
    second = _lint(url, review=ReviewResource(low_confidence=0.2))
    queue = metadata(second, "review_queue")
    assert (queue["expired_this_run"], queue["low_confidence_queued"]) == (1, 0)
    with memvault.open(url) as store:
        assert store.get_row("triples", doubtful) == before, "an expired item commits nothing"
        item = store.get_row("review_queue", f"memory:{doubtful}")
    assert item is not None and item["status"] == "expired"


class Unreachable(JudgeResource):
    def build(self, cache=None):  # type: ignore[override]
        raise RuntimeError("no LLM endpoint")


def test_a_lint_whose_layer_raises_fails_its_run_with_the_error(
    store_url: str, tmp_path: Path
) -> None:
    with memvault.open(store_url) as store:
        h = History()
        h.entity("ada", "Ada")
        h.fact("f1", "ada", "uses", "Vim", created="2025-01-02", text="Ada uses Vim.")
        h.ingest(store, tmp_path)
    result = _lint(store_url, llm=Unreachable())
    assert not result.success
    done = {
        e.event_specific_data.materialization.asset_key.to_user_string()
        for e in result.get_asset_materialization_events()
    }
    assert done == {"lint_structure", "lint_grounding"}
    with memvault.open(store_url) as store:
        [(run_id,)] = store.fetch("SELECT id FROM runs WHERE kind = 'lint'")
        row = store.run(run_id)
        assert row is not None and row["status"] == "failed"
        assert row["error"] == "RuntimeError: no LLM endpoint"
        assert set(stage_figures(store, run_id)) == {"L1", "L2"}, "the layers that ran kept"
