"""The Dagster code location: every asset, check, job, schedule, sensor and resource of memvault."""

from __future__ import annotations

import functools

import dagster as dg

from assets import collector, dream, gardener, layers, lifecycle, lint, profile, recall
from memvault.owners import multi_owner
from pipelines.owners import owner_definitions
from resources import (
    CollectorSourcesResource,
    DreamResource,
    EmbedderResource,
    GardenerResource,
    JudgeResource,
    LayersResource,
    LifecycleResource,
    LintResource,
    ReviewResource,
    StoreResource,
)

#: One module (or folder) per track under ``assets/``: its assets, checks, jobs, schedules,
#: sensors and partitions together.
TRACKS = [collector, dream, gardener, lint, profile, layers, lifecycle, recall]

#: The tracks follow each other by their assets' automation conditions (the gardener after
#: the collector, the lint after the gardener, tiering after the dream, ...), evaluated by this
#: sensor; the UI's Automation page shows why each asset was (or was not) requested.
automation_sensor = dg.AutomationConditionSensorDefinition(
    "default_automation_condition_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Starts each track when the one before it has run: the gardener, the profile and "
    "the layers after the collector, the lint after the gardener, tiering after the dream (or "
    "at 05:00 on a day without one), the knowledge gaps after the dream's communities.",
)


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
        "tiers": LifecycleResource(),
        "layers": LayersResource(),
    }


#: Dagster's default multiprocess executor (one process per step, as the UI and the daemon run
#: it), started from a fork server that has the code location imported once: a step starts in
#: about half the time a fresh interpreter needs.
executor = dg.multiprocess_executor.configured(
    {"start_method": {"forkserver": {"preload_modules": ["pipelines.definitions"]}}},
    name="multiprocess_forkserver",
)


@functools.cache
def single_owner_defs() -> dg.Definitions:
    """The single-owner code location (built once). A function, not a module attribute: a
    module that Dagster loads (``dg dev -m``) may hold only one Definitions object."""
    return dg.Definitions.merge(
        *(track.defs for track in TRACKS),
        dg.Definitions(
            sensors=[automation_sensor],
            resources=build_resources(),
            executor=executor,
        ),
    )


#: Many owners (an owners registry exists, see ``memvault owners``): every nightly asset
#: partitioned by owner; else the single-owner code location, unchanged.
defs = owner_definitions(single_owner_defs()) if multi_owner() else single_owner_defs()
