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
    "dream_edges": {"group": "dream", "deps": {"dream_orient"}},
    "dream_communities": {"group": "dream", "deps": {"dream_edges"}},
    "dream_centrality": {"group": "dream", "deps": {"dream_edges"}},
    "dream_discoveries": {
        "group": "dream",
        "deps": {"dream_edges", "dream_communities", "dream_centrality"},
    },
    "dream_reflect": {"group": "dream", "deps": {"dream_discoveries"}},
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
    "lint_structure": {"group": "lint", "deps": {"dream_prune", "garden_report"}},
    "lint_grounding": {"group": "lint", "deps": {"lint_structure"}},
    "lint_semantic": {"group": "lint", "deps": {"lint_grounding"}},
    "lint_confirm": {"group": "lint", "deps": {"lint_semantic"}},
    "review_queue": {"group": "review", "deps": {"lint_confirm"}},
    "daily_snapshot": {"group": "profile", "deps": {"collected_sessions", "daily_snapshot"}},
    "interest_7d": {"group": "profile", "deps": {"daily_snapshot"}},
    "interest_30d": {"group": "profile", "deps": {"daily_snapshot"}},
    "interest_90d": {"group": "profile", "deps": {"daily_snapshot"}},
    "diary_page": {"group": "profile", "deps": {"daily_snapshot", "interest_7d"}},
    "knowledge_gaps": {"group": "profile", "deps": {"dream_communities"}},
    "usage_weights": {"group": "lifecycle", "deps": {"collected_sessions", "dream_prune"}},
    "tiering": {"group": "lifecycle", "deps": {"usage_weights"}},
    "attitude_decay": {"group": "layers", "deps": {"collected_sessions"}},
    "skill_levels": {"group": "layers", "deps": {"collected_sessions"}},
    "prefetch_cache": {"group": "recall", "deps": {"memory_embeddings"}},
}


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)


def test_the_module_loads_as_memvault_ui_loads_it() -> None:
    """``dg dev -m pipelines.definitions`` (``memvault ui``) takes the module's one Definitions
    object; a second one at module scope makes the code location fail to load."""
    from dagster._core.workspace.autodiscovery import loadable_targets_from_python_module

    [target] = loadable_targets_from_python_module("pipelines.definitions", None)
    assert target.attribute == "defs" and isinstance(target.target_definition, dg.Definitions)


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
        "garden_idempotent": "garden_report",
        "judged_changes_confirmed": "lint_confirm",
        "digests_keep_the_original": "tiering",
        "demoted_blocks_stay_findable": "tiering",
        "edges_expectations": "dream_edges",
        "blocks_expectations": "tiering",
        "profile_daily_expectations": "daily_snapshot",
    }
    graph = defs.resolve_asset_graph()
    blocking = {key.name for key in graph.asset_check_keys if graph.get_check_spec(key).blocking}
    assert blocking == {
        "references_resolve",
        "grounding",
        "no_data_loss",
        "bitemporal_consistency",
        "idempotency",
        "garden_run_audited",
        "garden_idempotent",
        "judged_changes_confirmed",
    }
    assert defs.resolve_sensor_def("dream_gate_sensor").job_name == "dream_job"
    schedule = defs.resolve_schedule_def("collector_daily")
    assert schedule.cron_schedule == "15 2 * * *"
    assert schedule.job_name == "collect_job"
    prefetch = defs.resolve_schedule_def("prefetch_hourly")
    assert prefetch.job_name == "prefetch_job" and prefetch.cron_schedule == "5 * * * *"
    # The collector is the night's one clock; the other tracks follow by automation.
    assert {s.name for s in defs.schedules or ()} == {"collector_daily", "prefetch_hourly"}


#: Why each track's first asset runs (the label the UI shows); the rest of a track runs with it.
TRACK_STARTS = {
    "garden_survey": "after the collector",
    "lint_structure": "after the gardener",
    "usage_weights": "after the dream, or at 05:00 on a day without one",
    "daily_snapshot": "after the collector: yesterday",
    "attitude_decay": "after the collector",
    "skill_levels": "after the collector",
    "knowledge_gaps": "after the dream's communities",
}
#: Started by a schedule or by the dream's gate sensor, never by automation.
NOT_AUTOMATED = {"collected_sessions", "memory_embeddings", "prefetch_cache"} | {
    key for key in EXPECTED_GRAPH if key.startswith("dream_")
}


def test_tracks_chain_by_automation() -> None:
    graph = defs.resolve_asset_graph()
    labels = {
        key.to_user_string(): (c.label if (c := graph.get(key).automation_condition) else None)
        for key in graph.get_all_asset_keys()
    }
    for name, label in labels.items():
        if name in NOT_AUTOMATED:
            assert label is None, name
        elif name in TRACK_STARTS:
            assert label == TRACK_STARTS[name], name
        else:
            assert label and label.startswith("with "), (name, label)
    sensor = defs.resolve_sensor_def("default_automation_condition_sensor")
    assert isinstance(sensor, dg.AutomationConditionSensorDefinition)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING


def test_every_asset_that_calls_an_llm_retries() -> None:
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        definition = graph.assets_def_for_key(key)
        if "openai" in graph.get(key).kinds or key.to_user_string() in LLM_ASSETS:
            policy = definition.op.retry_policy
            assert policy is not None and policy.max_retries >= 1, key


#: Assets that ask the judge (an LLM when one is configured).
LLM_ASSETS = {
    "collected_sessions",
    "dream_reflect",
    "dream_consolidate",
    "lint_semantic",
    "lint_confirm",
    "tiering",
    "diary_page",
    "garden_dedup",
    "garden_split",
}
