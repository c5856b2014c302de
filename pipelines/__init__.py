"""The Dagster code location (definitions, jobs, schedules) and the `memvault` command (`pipelines.cli`)."""
