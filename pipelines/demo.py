"""`memvault demo`: a generated history, a fresh store, and memvault's jobs run on it.

The jobs run one after the other, as a night would run them (``collect_job``,
``dream_job``, ``garden_job``, ``lint_job``, then ``gaps_job``), each a named run in the
Dagster instance the UI reads. Then every day of the history gets its daily
profile: the partitions start at the history's first day (recorded for the
code location in ``$DAGSTER_HOME/memvault-profile.json``) and ``profile_job``
runs over them in batches of days, so the assets' Partitions tab shows them all.
Last, ``prefetch_job`` fills the read path's cache from the recalls and the profile.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

import memvault
from memvault.config import DEMO_STORE
from memvault.demo.generator import DemoConfig, generate, write_jsonl
from memvault.errors import MemvaultError
from memvault.profile.settings import ProfileSettings, save_settings
from memvault.store import Store
from memvault.store.tables import COUNTED_TABLES
from pipelines.runner import (
    check_results,
    failures,
    materializations,
    persistent_instance,
    run_job,
)
from resources import CollectorSourcesResource

#: The jobs of one night, in order.
NIGHT = ("collect_job", "dream_job", "garden_job", "lint_job", "gaps_job")


def _is_demo_store(store: Store) -> bool:
    return bool(store.fetch("SELECT 1 FROM runs WHERE kind = 'demo' LIMIT 1"))


def fresh_store(url: str) -> None:
    """Make ``url`` an empty store: a previous demo's DuckDB file is replaced; anything else must be empty."""
    with memvault.open(url) as store:
        empty = sum(store.counts(COUNTED_TABLES).values()) == 0
        replaceable = store.kind == "duckdb" and _is_demo_store(store)
        path = getattr(store.backend, "path", None)
    if empty:
        return
    if not replaceable or path is None:
        raise MemvaultError(
            f"{url} already holds data; the demo needs an empty store (choose another --store)"
        )
    for leftover in (Path(path), Path(f"{path}.wal")):
        leftover.unlink(missing_ok=True)


def run_demo(
    store: str | None, *, sessions: int, days: int, seed: int, console: Console
) -> dict[str, Any]:
    url = store or DEMO_STORE
    fresh_store(url)
    with memvault.open(url) as handle:
        run_id = handle.begin_run("demo", {"sessions": sessions, "days": days, "seed": seed})
        before = handle.counts(COUNTED_TABLES)
        base = Path(getattr(handle.backend, "path", ".memvault/demo.duckdb")).parent
    inbox = base / "demo-inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    for old in inbox.glob("*.jsonl"):
        old.unlink()
    history = inbox / f"history-seed{seed}-{sessions}s.jsonl"

    config = DemoConfig(sessions=sessions, days=days, seed=seed)
    records, truth = generate(config)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console
    ) as bar:
        task = bar.add_task("generating history (records)", total=None)

        def counted():
            for record in records:
                bar.advance(task)
                yield record

        written = write_jsonl(counted(), history)
    console.print(
        f"generated {written:,} records over {days} days ({sessions} sessions) → {history}"
    )

    instance = persistent_instance()
    # The profile's partitions begin on the history's first day, in the owner's timezone
    # (MEMVAULT_PROFILE_START, when set, still wins); the UI reads the same file.
    timezone = ProfileSettings.from_env().timezone
    first_day = truth.start.replace(tzinfo=dt.UTC).astimezone(ZoneInfo(timezone)).date()
    save_settings(first_day, timezone)
    sources = CollectorSourcesResource(inbox=str(inbox), claude_projects=None)
    assets: dict[str, Any] = {}
    checks: dict[str, bool] = {}
    runs: dict[str, str] = {}
    failed: list[str] = []
    for job in NIGHT:
        with console.status(f"running {job} ..."):
            result = run_job(
                job,
                url,
                instance=instance,
                sources=sources,
                say=lambda m: console.print(f"note: {m}", markup=False),
            )
        assets |= materializations(result)
        checks |= check_results(result)
        runs[job] = result.run_id
        if not result.success:
            failed += [f"{job}: {line}" for line in failures(result)] or [f"{job}: failed"]
            break
    profile: dict[str, Any] = {}
    if not failed:
        from pipelines.cli_profile import backfill_range

        last_day = dt.datetime.now(ZoneInfo(timezone)).date() - dt.timedelta(days=1)
        with console.status("backfilling the daily profile (profile_job) ..."):
            profile = backfill_range(
                url, first_day, last_day, say=lambda m: console.print(f"note: {m}", markup=False)
            )
        failed += [f"profile_job: {line}" for line in profile["failures"]]
        assets |= profile.pop("assets")
    if not failed:  # the read path's cache last: it reads the recalls and the profile
        with console.status("running prefetch_job ..."):
            result = run_job(
                "prefetch_job",
                url,
                instance=instance,
                say=lambda m: console.print(f"note: {m}", markup=False),
            )
        assets |= materializations(result)
        runs["prefetch_job"] = result.run_id
        if not result.success:
            failed += [f"prefetch_job: {line}" for line in failures(result)] or [
                "prefetch_job: failed"
            ]
    success = not failed
    with memvault.open(url) as handle:
        after = handle.counts(COUNTED_TABLES)
        handle.finish_run(run_id, "succeeded" if success else "failed", {"records": written})
    changed_preferences = sum(
        1 for versions in truth.preference_versions.values() if len(versions) > 1
    )
    return {
        "store": url,
        "history": {
            "employers": [span.value for span in truth.employer_timeline],
            "cities": [span.value for span in truth.city_timeline],
            "project_status": [span.value for span in truth.project_status_timeline],
            "near_duplicate_groups": len(truth.near_duplicate_groups),
            "bloated_blocks": len(truth.bloated_blocks),
            "recall_gaps": len(truth.recall_gaps),
            "changed_preferences": changed_preferences,
        },
        "history_file": str(history),
        "records_generated": written,
        "success": success,
        "failures": failed,
        "before": before,
        "after": after,
        "assets": assets,
        "checks": checks,
        "dagster_runs": runs,
        "profile": profile,
    }
