"""The Dagster code location: every asset, check, job, schedule and resource of memvault."""

from __future__ import annotations

import dagster as dg

from assets import collector
from resources import CollectorSourcesResource, EmbedderResource, JudgeResource, StoreResource

all_assets = dg.load_assets_from_modules([collector])
all_checks = dg.load_asset_checks_from_modules([collector])

collect_job = dg.define_asset_job(
    "collect_job",
    selection=dg.AssetSelection.groups("collector"),
    description="Collect new sessions and embed what came in.",
)

collector_schedule = dg.ScheduleDefinition(
    name="collector_daily",
    job=collect_job,
    cron_schedule="15 2 * * *",
    description="The collector runs daily; the nightly tracks run after it (O6, GD10).",
)


def build_resources() -> dict[str, dg.ConfigurableResource]:
    """Resources with their defaults from the environment (see README: Configuration)."""
    return {
        "store": StoreResource(),
        "sources": CollectorSourcesResource(),
        "llm": JudgeResource(),
        "embedder": EmbedderResource(),
    }


defs = dg.Definitions(
    assets=all_assets,
    asset_checks=all_checks,
    jobs=[collect_job],
    schedules=[collector_schedule],
    resources=build_resources(),
)
