"""Jobs and schedules: the collector daily, the dream behind its sensor (O2, O6)."""

from __future__ import annotations

import dagster as dg

collect_job = dg.define_asset_job(
    "collect_job",
    selection=dg.AssetSelection.groups("collector"),
    description="Collect new sessions and embed what came in.",
)

dream_job = dg.define_asset_job(
    "dream_job",
    selection=dg.AssetSelection.groups("dream"),
    description="The five-stage dream (orient, signal, reflect, consolidate, prune) with its checks.",
)

collector_schedule = dg.ScheduleDefinition(
    name="collector_daily",
    job=collect_job,
    cron_schedule="15 2 * * *",
    description="The collector runs daily; the nightly tracks run after it (O6, GD10).",
)
