"""Run memvault's assets in-process, the way the CLI does (same assets as the UI runs)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from memvault.paths import data_file
from pipelines.definitions import all_assets, all_checks, build_resources
from resources import GardenerResource, StoreResource


def dagster_home() -> Path:
    """``DAGSTER_HOME``, else ``.dagster/`` in the working directory, with a dagster.yaml in it."""
    home = Path(os.environ.get("DAGSTER_HOME") or Path.cwd() / ".dagster").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() and not config.is_symlink():
        config.write_text(data_file("dagster.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    return home


def persistent_instance() -> dg.DagsterInstance:
    """The instance the UI reads, so runs started from the CLI show up there."""
    os.environ["DAGSTER_HOME"] = str(dagster_home())
    return dg.DagsterInstance.get()


def resources_for(store_url: str, **overrides: Any) -> dict[str, Any]:
    """The code location's resources, on the given store (the one the gardener tends too),
    with any of them replaced."""
    on_store = {
        "store": StoreResource(url=store_url),
        "gardener": GardenerResource(store_url=store_url),
    }
    return build_resources() | on_store | overrides


def run_assets(
    store_url: str,
    *,
    groups: Sequence[str] | None = None,
    instance: dg.DagsterInstance | None = None,
    log_level: str = "WARNING",
    **resource_overrides: Any,
) -> dg.ExecuteInProcessResult:
    """Materialize the assets (and their checks) of the given groups, or all of them."""
    selection = dg.AssetSelection.groups(*groups) if groups else dg.AssetSelection.all()
    return dg.materialize(
        [*all_assets, *all_checks],
        selection=selection,
        resources=resources_for(store_url, **resource_overrides),
        instance=instance,
        raise_on_error=False,
        run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
    )


def materializations(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    """Asset key → metadata (plain values) of every materialization in a result."""
    out: dict[str, dict[str, Any]] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization  # type: ignore[union-attr]
        out[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    return out


def check_results(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    """Check name → passed, for every check evaluated in a result."""
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
