"""The layers group materialized as the daily schedule runs it: counts in the metadata, audited
runs, and a second run for the same time that writes nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import dagster as dg

import memvault
from assets import layers
from memvault.layers import attitudes, skills
from resources import LayersResource, StoreResource

T0 = dt.datetime(2026, 2, 1, 8, 0)


def _materialize(url: str, as_of: dt.datetime) -> dict[str, dict[str, Any]]:
    config = {"config": {"as_of": as_of.isoformat()}}
    result = dg.materialize(
        [layers.attitude_decay, layers.skill_levels],
        resources={
            "store": StoreResource(url=url),
            "layers": LayersResource(
                attitude_decay_per_day=0.008, attitude_binding=0.5, skill_half_life_days=90.0
            ),
        },
        run_config={"ops": {"attitude_decay": config, "skill_levels": config}},
    )
    assert result.success
    return {
        m.asset_key.to_user_string(): {k: v.value for k, v in m.metadata.items()}
        for node in ("attitude_decay", "skill_levels")
        for m in result.asset_materializations_for_node(node)
    }


def test_layers_age_with_time(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    with memvault.open(url) as store:
        attitudes.upsert(store, "pace", "ships small changes", 0.9, ["s1"], now=T0)
        attitudes.upsert(store, "tooling", "uses neovim", 0.9, ["s1"], now=T0 + dt.timedelta(60))
        attitudes.upsert(store, "pace", "batches changes weekly", 0.8, now=T0 + dt.timedelta(1))
        for i in range(7):
            skills.record_use(store, "Rust", 1.0, now=T0 + dt.timedelta(i), half_life=90.0)
        skills.record_use(store, "SQL", 0.5, now=T0, half_life=90.0)

    later = T0 + dt.timedelta(days=96)
    meta = _materialize(url, later)
    decay = meta["attitude_decay"]
    assert (decay["decayed"], decay["still_binding"], decay["no_longer_binding"]) == (2, 1, 1)
    assert decay["stopped_binding_now"] == 1 and decay["waiting_for_review"] == 1
    assert "ships small changes" in decay["stopped_binding"]
    assert decay["duration_s"] >= 0
    levels = meta["skill_levels"]
    assert (levels["level_down"], levels["level_up"], levels["written"]) == (1, 0, 2)
    assert (levels["skills_L3"], levels["skills_L2"], levels["skills_L1"]) == (0, 1, 1)
    assert "Rust" in levels["level_changes"]

    again = _materialize(url, later)
    assert again["attitude_decay"]["decayed"] == 0 and again["skill_levels"]["written"] == 0
    with memvault.open(url) as store:
        runs = store.fetch(
            "SELECT r.kind, count(a.id) FROM runs r LEFT JOIN audit_log a ON a.run_id = r.id "
            "WHERE r.kind IN ('attitude_decay', 'skill_levels') GROUP BY r.id, r.kind "
            "ORDER BY r.kind, count(a.id) DESC"
        )
    assert runs == [("attitude_decay", 2), ("attitude_decay", 0),
                    ("skill_levels", 2), ("skill_levels", 0)]  # fmt: skip
