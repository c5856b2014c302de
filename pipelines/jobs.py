"""Jobs and the collector's schedule: the collector daily, the dream behind its sensor."""

from __future__ import annotations

import dagster as dg

collect_job = dg.define_asset_job(
    "collect_job",
    selection=dg.AssetSelection.groups("collector"),
    description="Collect new sessions (JSONL inbox, Claude Code transcripts) and embed what came "
    "in.",
)

dream_job = dg.define_asset_job(
    "dream_job",
    selection=dg.AssetSelection.groups("dream"),
    description="The five-stage dream: orient, signal, reflect, consolidate, prune, with its "
    "checks. Started by dream_gate_sensor when both gates open, or from the launchpad.",
)

collector_schedule = dg.ScheduleDefinition(
    name="collector_daily",
    job=collect_job,
    cron_schedule="15 2 * * *",
    description="The collector runs daily at 02:15; the gardener follows at 03:45.",
)
