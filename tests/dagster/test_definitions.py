"""The code location loads, and its asset graph is what we mean it to be."""

from __future__ import annotations

import dagster as dg

from pipelines.definitions import defs

# A snapshot of the graph: an accidental change (a renamed asset, a lost dependency,
# a check that stopped blocking) shows up here in review.
EXPECTED_GRAPH = {
    "collected_sessions": {"group": "collector", "deps": set()},
    "memory_embeddings": {"group": "collector", "deps": {"collected_sessions"}},
    "dream_orient": {"group": "dream", "deps": {"memory_embeddings"}},
    "dream_signal": {"group": "dream", "deps": {"dream_orient"}},
    "dream_reflect": {"group": "dream", "deps": {"dream_signal"}},
    "dream_consolidate": {"group": "dream", "deps": {"dream_reflect"}},
    "dream_prune": {"group": "dream", "deps": {"dream_consolidate"}},
    "garden_survey": {"group": "gardener", "deps": {"memory_embeddings"}},
    "garden_dedup": {"group": "gardener", "deps": {"garden_survey"}},
    "garden_decay": {"group": "gardener", "deps": {"garden_dedup"}},
    "garden_split": {"group": "gardener", "deps": {"garden_decay"}},
    "garden_invalidate": {"group": "gardener", "deps": {"garden_split"}},
    "garden_reconnect": {"group": "gardener", "deps": {"garden_invalidate"}},
    "garden_journal": {"group": "gardener", "deps": {"garden_reconnect"}},
    "garden_report": {"group": "gardener", "deps": {"garden_journal"}},
    "lint_structure": {"group": "lint", "deps": {"dream_prune"}},
    "lint_grounding": {"group": "lint", "deps": {"lint_structure"}},
    "lint_semantic": {"group": "lint", "deps": {"lint_grounding"}},
    "lint_confirm": {"group": "lint", "deps": {"lint_semantic"}},
    "review_queue": {"group": "review", "deps": {"lint_confirm"}},
    "daily_snapshot": {"group": "profile", "deps": {"collected_sessions", "daily_snapshot"}},
    "interest_7d": {"group": "profile", "deps": {"daily_snapshot"}},
    "interest_30d": {"group": "profile", "deps": {"daily_snapshot"}},
    "interest_90d": {"group": "profile", "deps": {"daily_snapshot"}},
    "diary_page": {"group": "profile", "deps": {"daily_snapshot", "interest_7d"}},
    "knowledge_gaps": {"group": "profile", "deps": {"dream_signal"}},
    "usage_weights": {"group": "lifecycle", "deps": {"collected_sessions"}},
    "tiering": {"group": "lifecycle", "deps": {"usage_weights"}},
    "attitude_decay": {"group": "layers", "deps": {"collected_sessions"}},
    "skill_levels": {"group": "layers", "deps": {"collected_sessions"}},
    "prefetch_cache": {"group": "read_path", "deps": {"memory_embeddings"}},
}


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)


def test_asset_graph_snapshot() -> None:
    graph = defs.resolve_asset_graph()
    actual = {
        key.to_user_string(): {
            "group": graph.get(key).group_name,
            "deps": {p.to_user_string() for p in graph.get(key).parent_keys},
        }
        for key in graph.get_all_asset_keys()
    }
    assert actual == EXPECTED_GRAPH


JOBS = (
    "collect_job",
    "dream_job",
    "garden_job",
    "lint_job",
    "profile_job",
    "gaps_job",
    "tiering_job",
    "layers_job",
    "prefetch_job",
)


def test_every_step_that_opens_the_store_shares_one_pool() -> None:
    """Assets and checks alike: under the multiprocess executor a check runs beside the next
    asset unless the pool (limit 1 in dagster.yaml) keeps them apart on a DuckDB file."""
    for name in JOBS:
        ops = defs.resolve_job_def(name).graph.node_defs
        assert ops and {op.name: op.pool for op in ops} == dict.fromkeys(
            (op.name for op in ops), "memvault_store"
        ), name


def test_checks_and_schedules() -> None:
    checks = {
        key.name: key.asset_key.to_user_string()
        for key in defs.resolve_asset_graph().asset_check_keys
    }
    assert checks == {
        "references_resolve": "collected_sessions",
        "grounding": "dream_consolidate",
        "no_data_loss": "dream_consolidate",
        "bitemporal_consistency": "dream_consolidate",
        "idempotency": "dream_consolidate",
        "triples_expectations": "dream_consolidate",
        "garden_run_audited": "garden_report",
        "judged_changes_confirmed": "lint_confirm",
        "digests_keep_the_original": "tiering",
        "demoted_blocks_stay_findable": "tiering",
    }
    graph = defs.resolve_asset_graph()
    blocking = {key.name for key in graph.asset_check_keys if graph.get_check_spec(key).blocking}
    assert blocking == {
        "references_resolve",
        "no_data_loss",
        "bitemporal_consistency",
        "idempotency",
        "garden_run_audited",
        "judged_changes_confirmed",
    }
    assert defs.resolve_sensor_def("dream_gate_sensor").job_name == "dream_job"
    schedule = defs.resolve_schedule_def("collector_daily")
    assert schedule.cron_schedule == "15 2 * * *"
    assert schedule.job_name == "collect_job"
    nightly = defs.resolve_schedule_def("garden_nightly")
    assert nightly.job_name == "garden_job" and nightly.cron_schedule == "45 3 * * *"
    lint = defs.resolve_schedule_def("lint_nightly")
    assert lint.job_name == "lint_job" and lint.cron_schedule == "15 4 * * *"
    profile = defs.resolve_schedule_def("profile_nightly")
    assert profile.job_name == "profile_job" and profile.cron_schedule == "30 4 * * *"
    tiering = defs.resolve_schedule_def("tiering_daily")
    assert tiering.job_name == "tiering_job" and tiering.cron_schedule == "0 5 * * *"
    layers = defs.resolve_schedule_def("layers_daily")
    assert layers.job_name == "layers_job" and layers.cron_schedule == "45 4 * * *"
    prefetch = defs.resolve_schedule_def("prefetch_hourly")
    assert prefetch.job_name == "prefetch_job" and prefetch.cron_schedule == "5 * * * *"
