"""The Dagster code location: every asset, check, job, schedule, sensor and resource of memvault."""

from __future__ import annotations

import dagster as dg

from assets import collector, dream, dream_checks
from pipelines.jobs import collect_job, collector_schedule, dream_job
from pipelines.sensors import dream_gate_sensor
from resources import (
    CollectorSourcesResource,
    DreamResource,
    EmbedderResource,
    JudgeResource,
    StoreResource,
)

ASSET_MODULES = [collector, dream, dream_checks]
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
    }


defs = dg.Definitions(
    assets=all_assets,
    asset_checks=all_checks,
    jobs=[collect_job, dream_job],
    schedules=[collector_schedule],
    sensors=[dream_gate_sensor],
    resources=build_resources(),
)
