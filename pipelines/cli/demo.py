"""`memvault demo`: a generated history, a fresh store, and memvault's jobs run on it.

The jobs of :data:`NIGHT` run one after the other, as a night would run them, each a named
run in the Dagster instance the UI reads. Then every day of the history gets its daily
profile: the partitions start at the history's first day (recorded for the
code location in ``$DAGSTER_HOME/memvault-profile.json``) and ``profile_job``
runs over them in batches of days, so the assets' Partitions tab shows them all.
Last, ``prefetch_job`` fills the read path's cache from the recalls and the profile.
"""

from __future__ import annotations

import datetime as dt
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

import memvault
from memvault import clock
from memvault.config import DEMO_STORE, masked_url
from memvault.errors import MemvaultError
from memvault.normalize import utcnow
from memvault.profile.settings import ProfileSettings, save_settings
from memvault.store import Store
from memvault.store.queries.blocks import active_blocks_by_tier, tiers_of
from memvault.store.queries.inbox import new_discoveries_by_kind
from memvault.store.queries.recall import live_prefetch_count
from memvault.store.queries.runs import has_run_of_kind
from memvault.store.tables import COUNTED_TABLES
from memvault.store.tracked import tracked_run_reopening
from memvault_demo.generator import DemoConfig, GroundTruth, generate, write_jsonl
from pipelines.runner import (
    check_results,
    failures,
    materializations,
    persistent_instance,
    run_job,
)
from resources import CollectorSourcesResource

#: The jobs of one night, in order: every job but the daily profile, which is backfilled. The
#: launch tests run the same list.
NIGHT = (
    "collect_job",
    "dream_job",
    "garden_job",
    "lint_job",
    "gaps_job",
    "layers_job",
    "tiering_job",
    "prefetch_job",
)
#: Jobs of the night the demo runs after its backfill of the daily profile, which they read.
AFTER_PROFILE = ("prefetch_job",)


def _is_demo_store(store: Store) -> bool:
    return has_run_of_kind(store, "demo")


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
        before = handle.counts(COUNTED_TABLES)
        base = Path(getattr(handle.backend, "path", ".memvault/demo.duckdb")).parent
    config = DemoConfig(sessions=sessions, days=days, seed=seed)
    params = {"sessions": sessions, "days": days, "seed": seed}
    # The jobs open the store in between: the demo's run is begun and finished on handles of
    # its own, and a demo that stops half-way leaves it failed.
    with tracked_run_reopening(lambda: memvault.open(url), "demo", params) as run:
        history, truth, written = _history(base, config, console)
        night = _night(url, history.parent, truth, console)
        run.status, run.stats = ("succeeded" if night.success else "failed"), {"records": written}
    with memvault.open(url) as handle:
        after = handle.counts(COUNTED_TABLES)
    lifecycle = night.lifecycle
    changed_preferences = sum(
        1 for versions in truth.preference_versions.values() if len(versions) > 1
    )
    return {
        "store": shown_url(url),
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
        "next_steps": next_steps(url, lifecycle, night.profile),
        "records_generated": written,
        "success": night.success,
        "failures": night.failed,
        "before": before,
        "after": after,
        "assets": night.assets,
        "checks": night.checks,
        "dagster_runs": night.runs,
        "profile": night.profile,
        "lifecycle": lifecycle,
    }


def _history(base: Path, config: DemoConfig, console: Console) -> tuple[Path, GroundTruth, int]:
    """The generated history written to a fresh inbox beside the store (its file, its truth,
    the records written), with a progress bar: the collector reads it from there."""
    inbox = base / "demo-inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    for old in inbox.glob("*.jsonl"):
        old.unlink()
    history = inbox / f"history-seed{config.seed}-{config.sessions}s.jsonl"
    records, truth = generate(config)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console
    ) as bar:
        task = bar.add_task("generating history (records)", total=None)

        def counted() -> Iterator[Any]:
            for record in records:
                bar.advance(task)
                yield record

        written = write_jsonl(counted(), history)
    console.print(
        f"generated {written:,} records over {config.days} days ({config.sessions} sessions) → "
        f"{escape(str(history))}"
    )
    return history, truth, written


@dataclass
class _Night:
    """What the demo's night did: its assets, checks and Dagster runs, the profile's
    backfill, the lifecycle's findings (when it succeeded) and its failures."""

    assets: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, bool] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    profile: dict[str, Any] = field(default_factory=dict)
    lifecycle: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return not self.failed


def _night(url: str, inbox: Path, truth: GroundTruth, console: Console) -> _Night:
    """The jobs of :data:`NIGHT` in order, the profile backfilled over the history's days
    before the read path's cache, stopping at the first failure."""
    instance = persistent_instance()
    # The profile's partitions begin on the history's first day, in the owner's timezone
    # (MEMVAULT_PROFILE_START, when set, still wins); the UI reads the same file.
    timezone = ProfileSettings.from_env().timezone
    first_day = truth.start.replace(tzinfo=dt.UTC).astimezone(ZoneInfo(timezone)).date()
    save_settings(first_day, timezone)
    sources = CollectorSourcesResource(inbox=str(inbox), claude_projects=None)
    night = _Night()

    def run_one(job: str) -> bool:
        with console.status(f"running {job} ..."):
            result = run_job(
                job,
                url,
                instance=instance,
                sources=sources,
                say=lambda m: console.print(f"note: {m}", markup=False),
            )
        night.assets.update(materializations(result))
        night.checks.update(check_results(result))
        night.runs[job] = result.run_id
        if not result.success:
            night.failed.extend(
                [f"{job}: {line}" for line in failures(result)] or [f"{job}: failed"]
            )
        return result.success

    for job in NIGHT:
        if job not in AFTER_PROFILE and not run_one(job):
            break
    if not night.failed:
        from pipelines.cli.profile import backfill_range

        last_day = clock.now(ZoneInfo(timezone)).date() - dt.timedelta(days=1)
        with console.status("backfilling the daily profile (profile_job) ..."):
            night.profile = backfill_range(
                url, first_day, last_day, say=lambda m: console.print(f"note: {m}", markup=False)
            )
        night.failed += [f"profile_job: {line}" for line in night.profile["failures"]]
        night.assets |= night.profile.pop("assets")
    for job in AFTER_PROFILE:  # the read path's cache last: it reads the recalls and the profile
        if night.failed or not run_one(job):
            break
    if night.success:
        night.lifecycle = lifecycle_findings(url, truth)
    return night


def lifecycle_findings(url: str, truth: GroundTruth) -> dict[str, Any]:
    """What the memory's lifecycle made of the history, for the demo's closing summary: one live
    recall of the owner's employer (with the verdict the history's truth gives it), the tiers,
    the early memory kept close by use against its untouched twin, preferences that stopped
    binding, skills by level, the discoveries waiting in the inbox and the prefetched queries."""
    from memvault.layers.attitudes import binding
    from memvault.layers.skills import skill_table

    with memvault.open(url) as store:
        asked = memvault.recall(store, f"where does {truth.owner_name.split()[0]} work")
        employer = truth.employer_timeline[-1].value
        said = " ".join(
            [h.text for h in asked.results] + [f"{f.predicate} {f.object}" for f in asked.facts]
        )
        verdict = "correct" if employer.casefold() in said.casefold() else "incorrect"
        memvault.feedback(store, asked.recall_id, verdict)
        tiers = active_blocks_by_tier(store)
        watched = [b for b in (truth.reinforced_block, truth.untouched_twin) if b]
        tier_of = tiers_of(store, watched)
        preferences = binding(store)
        skills = skill_table(store)
        inbox = new_discoveries_by_kind(store)
        prefetched = live_prefetch_count(store, utcnow())
    return {
        "recall": {
            "query": asked.query,
            "recall_id": asked.recall_id,
            "top": asked.results[0].text[:120] if asked.results else None,
            "facts": [f"{f.predicate} {f.object}" for f in asked.facts[:3]],
            "verdict": verdict,
            "latency_ms": round(asked.latency_ms, 1),
        },
        "tiers": {t: int(tiers.get(t, 0)) for t in ("hot", "warm", "cold", "frozen")},
        "reinforced_block": [truth.reinforced_block, tier_of.get(truth.reinforced_block or "")],
        "untouched_twin": [truth.untouched_twin, tier_of.get(truth.untouched_twin or "")],
        "preferences_binding": int(preferences["binding"].sum()),
        "preferences_stale": int((~preferences["binding"]).sum()),
        "skills": {
            row["name"]: f"{row['level']} {row['label']}" for row in skills.iter_rows(named=True)
        },
        "inbox": {k: int(v) for k, v in inbox.items()},
        "prefetched_queries": int(prefetched),
    }


def shown_url(url: str) -> str:
    """The store URL as a person writes it: ``duckdb:////tmp/x`` is ``duckdb:///tmp/x``, a
    password is masked (``MEMVAULT_STORE_PASSWORD`` holds it)."""
    if url.startswith("duckdb:////"):
        url = "duckdb:///" + url[len("duckdb://") :].lstrip("/")
    return masked_url(url)


def next_steps(url: str, found: dict[str, Any], profile: dict[str, Any]) -> list[str]:
    """The commands the demo suggests, each carrying the demo's store: typed as printed, from
    the directory the demo ran in, each answers from the demo's memory (a user's own default
    store stays untouched). The UI comes last (it keeps running)."""
    me, store = invoked_as(), shlex.quote(shown_url(url))
    steps = []
    if profile.get("days"):
        steps += [f"{me} {command} --store {store}" for command in ("profile", "diary", "gaps")]
    if found:
        asked = found["recall"]
        steps += [
            f"{me} recall --store {store} {shlex.quote(asked['query'])}",
            f"{me} feedback --store {store} {shlex.quote(asked['recall_id'])} correct",
        ]
        steps += [f"{me} {command} --store {store}" for command in ("attitudes", "skills", "inbox")]
    return [*steps, f"{me} ui --store {store}"]


def invoked_as() -> str:
    """How to type ``memvault`` again from here: the bare name when that is the command on
    PATH, else the path this one was started by (``.venv/bin/memvault``, as the README has
    it, before the venv is activated)."""
    given = Path(sys.argv[0])
    if given.name != "memvault":  # python -m …, a test runner
        return "memvault"
    on_path = shutil.which("memvault")
    if on_path and Path(on_path).resolve() == given.resolve():
        return "memvault"
    if given.is_absolute() and given.is_relative_to(Path.cwd()):
        given = given.relative_to(Path.cwd())
    typed = given.as_posix()
    return shlex.quote(typed if "/" in typed else f"./{typed}")
