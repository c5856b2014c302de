"""The Dagster code location: every asset, check, job, schedule, sensor and resource of memvault."""

from __future__ import annotations

import dagster as dg

from assets import (
    collector,
    dream,
    dream_checks,
    gardener,
    layers,
    lifecycle,
    lint,
    profile,
    read_path,
)
from assets.gardener import garden_job, garden_nightly_schedule
from assets.layers import layers_daily_schedule, layers_job
from assets.lifecycle import tiering_daily_schedule, tiering_job
from assets.lint import lint_job, lint_nightly_schedule
from assets.profile import gaps_job, profile_job, profile_nightly_schedule
from assets.read_path import prefetch_hourly_schedule, prefetch_job
from pipelines.jobs import collect_job, collector_schedule, dream_job
from pipelines.sensors import dream_gate_sensor
from resources import (
    CollectorSourcesResource,
    DreamResource,
    EmbedderResource,
    GardenerResource,
    JudgeResource,
    LayersResource,
    LintResource,
    ReviewResource,
    StoreResource,
    TieringResource,
)

ASSET_MODULES = [
    collector,
    dream,
    dream_checks,
    gardener,
    lint,
    profile,
    layers,
    lifecycle,
    read_path,
]
all_assets = dg.load_assets_from_modules(ASSET_MODULES)
all_checks = dg.load_asset_checks_from_modules(ASSET_MODULES)


def build_resources() -> dict[str, dg.ConfigurableResource]:
    """Resources with their defaults from the environment (see README: Configuration)."""
    return {
        "store": StoreResource(),
        "sources": CollectorSourcesResource(),
        "llm": JudgeResource(),
        "embedder": EmbedderResource(),
        "dream": DreamResource(),
        "gardener": GardenerResource(),
        "review": ReviewResource(),
        "lint": LintResource(),
        "tiers": TieringResource(),
        "layers": LayersResource(),
    }


#: Dagster's default multiprocess executor (one process per step, as the UI and the daemon run
#: it), started from a fork server that has the code location imported once: a step starts in
#: about half the time a fresh interpreter needs.
executor = dg.multiprocess_executor.configured(
    {"start_method": {"forkserver": {"preload_modules": ["pipelines.definitions"]}}},
    name="multiprocess_forkserver",
)

defs = dg.Definitions(
    assets=all_assets,
    asset_checks=all_checks,
    jobs=[
        collect_job,
        dream_job,
        garden_job,
        lint_job,
        profile_job,
        gaps_job,
        layers_job,
        tiering_job,
        prefetch_job,
    ],
    schedules=[
        collector_schedule,
        garden_nightly_schedule,
        lint_nightly_schedule,
        profile_nightly_schedule,
        layers_daily_schedule,
        tiering_daily_schedule,
        prefetch_hourly_schedule,
    ],
    sensors=[dream_gate_sensor],
    resources=build_resources(),
    executor=executor,
)
