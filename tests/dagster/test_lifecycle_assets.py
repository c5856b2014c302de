"""The lifecycle assets under dg.materialize: usage weights, then tiering with a scripted judge
whose calls are counted; a second materialization makes no call and writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

import memvault
from assets import lifecycle
from memvault.judge import ScriptedJudge
from memvault.normalize import utcnow
from resources import EmbedderResource, JudgeResource, LifecycleResource, StoreResource
from tests.lifecycle_support import add_blocks, add_boost, add_recalls

LIFECYCLE_ASSETS = [lifecycle.usage_weights, lifecycle.tiering]


class ScriptedJudgeResource(JudgeResource):
    """The scripted judge, one instance per test (so its calls can be counted)."""

    def build(self, cache: Any = None) -> Any:
        return JUDGE["judge"]


JUDGE: dict[str, ScriptedJudge] = {}


def _judge() -> ScriptedJudge:
    return ScriptedJudge(
        {
            "tier_digest": lambda request: {
                "digests": [
                    {
                        "id": b.id,
                        "summary": "Sam walked through the billing service migration.",
                        "headline": "The billing service migration",
                    }
                    for b in request.blocks
                ]
            }
        }
    )


def _materialize(url: str) -> dict[str, dict[str, Any]]:
    result = dg.materialize(
        LIFECYCLE_ASSETS,  # tiering's checks run in its step
        resources={
            "store": StoreResource(url=url),
            "llm": ScriptedJudgeResource(),
            "tiers": LifecycleResource(hot_days=7, warm_days=30, cold_days=90),
            "embedder": EmbedderResource(spec="hashing"),
        },
    )
    assert result.success
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    digests, findable = checks["digests_keep_the_original"], checks["demoted_blocks_stay_findable"]
    assert digests.passed and digests.metadata["violations"].value == 0
    # Every block the run demoted is found by the rarest words of its original text.
    assert findable.passed, findable.metadata
    assert findable.metadata["found"].value == findable.metadata["sampled"].value > 0
    assert findable.metadata["originals_missing"].value == 0
    return {
        mat.asset_key.to_user_string(): {k: v.value for k, v in mat.metadata.items()}
        for node in ("usage_weights", "tiering")
        for mat in result.asset_materializations_for_node(node)
    }


def test_usage_weights_then_tiering_then_a_rerun_without_calls(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    now = utcnow()
    with memvault.open(url) as store:
        ages = {f"old-{i:02d}": 45.0 for i in range(10)} | {"ancient": 200.0, "fresh": 1.0}
        add_blocks(store, now, ages)
        add_recalls(store, now, "old-00", [1.0, 1.0, 1.0, 1.0, 1.0])
        add_boost(store, now, "old-01", -1.0, days_ago=2)
    JUDGE["judge"] = _judge()
    first = _materialize(url)
    weights, tiers = first["usage_weights"], first["tiering"]
    assert weights["blocks"] == 12 and weights["reinforced"] == 1 and weights["penalized"] == 1
    assert tiers["hot_before"] == 12 and tiers["hot_after"] == 1  # fresh
    assert tiers["warm_after"] == 1  # old-00: recalled five times yesterday
    # old-01: the owner's − doubles its age to 90 days: frozen, with ancient
    assert tiers["cold_after"] == 8 and tiers["frozen_after"] == 2
    assert tiers["demotions"] == 11 and tiers["kept_by_use"] == 1
    assert tiers["digests_llm"] == 10 and tiers["headlines"] == 2
    # ten blocks to digest, eight per call: two calls
    assert tiers["llm_calls"] == 2 == JUDGE["judge"].stats.calls
    JUDGE["judge"] = _judge()
    again = _materialize(url)["tiering"]
    assert again["llm_calls"] == 0 and again["rows_written"] == 0 and again["demotions"] == 0
    assert again["tiering_run_id"] == "nothing to change"
