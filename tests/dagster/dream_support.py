"""Shared by the dream asset tests: a demo store, resources, and failure injection."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg

import memvault
from assets import dream
from assets.dream import checks as dream_checks
from memvault.ingest import ingest_file
from memvault.store import Store
from memvault_demo.generator import DemoConfig, GroundTruth, generate, write_jsonl
from resources import DreamResource, JudgeResource, ReviewResource, StoreResource
from tests.helpers import TEST_NOW

DREAM_ASSETS = dg.load_assets_from_modules([dream])
DREAM_CHECKS = dg.load_asset_checks_from_modules([dream_checks])


def seed_demo_store(url: str, folder: Path, sessions: int = 40, seed: int = 7) -> GroundTruth:
    """Ingest a generated history (through the real ingest path) into ``url``."""
    records, truth = generate(DemoConfig(sessions=sessions, days=90, seed=seed, end=TEST_NOW))
    path = folder / f"history-{seed}-{sessions}.jsonl"
    write_jsonl(records, path)
    with memvault.open(url) as store:
        ingest_file(store, path)
    return truth


def resources(url: str, **overrides: Any) -> dict[str, Any]:
    return {
        "store": StoreResource(url=url),
        "llm": JudgeResource(),
        "dream": DreamResource(),
        "review": ReviewResource(),
    } | overrides


def run_dream(url: str, log_level: str = "WARNING", **overrides: Any) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*DREAM_ASSETS, *DREAM_CHECKS],
        resources=resources(url, **overrides),
        raise_on_error=False,
        run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
    )


class CrashingStoreResource(StoreResource):
    """A store that crashes once, after ``crash_after`` committed consolidate batches.

    The crash happens between two transactions, as a killed process would leave
    it; the marker file makes it happen only once (the re-execution succeeds).
    """

    crash_after: int = 1
    marker: str = ""

    @contextmanager
    def open(self) -> Iterator[Store]:
        with super().open() as store:
            original = store.mutation
            done = {"batches": 0}

            @contextmanager
            def mutation(run_id: str, phase: str) -> Iterator[Any]:
                if phase == "dream_consolidate":
                    if done["batches"] >= self.crash_after and not Path(self.marker).exists():
                        Path(self.marker).write_text("crashed")
                        raise RuntimeError("simulated crash in the middle of consolidate")
                    done["batches"] += 1
                with original(run_id, phase) as m:
                    yield m

            store.mutation = mutation  # type: ignore[method-assign]
            yield store


def resume_job() -> dg.JobDefinition:
    """The dream job on a crashing store (reconstructable, so it can be re-executed)."""
    url = os.environ["MEMVAULT_RESUME_STORE"]
    marker = os.environ["MEMVAULT_RESUME_MARKER"]
    defs = dg.Definitions(
        assets=DREAM_ASSETS,
        asset_checks=DREAM_CHECKS,
        jobs=[
            dg.define_asset_job(
                "dream_resume",
                selection=dg.AssetSelection.groups("dream"),
                executor_def=dg.in_process_executor,
            )
        ],
        resources=resources(
            url,
            store=CrashingStoreResource(url=url, crash_after=1, marker=marker),
            dream=DreamResource(conflict_batch_size=2, conflict_apply_batch_size=2),
        ),
    )
    return defs.resolve_job_def("dream_resume")
