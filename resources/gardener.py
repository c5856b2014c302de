"""The gardener as a Dagster resource: which stores to tend, the mode and the budgets."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import dagster as dg
from pydantic import Field

import memvault
from memvault.gardener.adapter import GardenStore
from memvault.gardener.ledger import Ledger
from memvault.gardener.state import GardenConfig
from resources.settings import setting
from resources.store import StoreResource


class GardenerResource(dg.ConfigurableResource):
    """Stores to tend and how; the ledger is a memvault store. The memvault store is the
    ``store`` resource's (one URL for every asset), tended unless ``tend_store`` is off."""

    tend_store: bool = Field(
        default=True,
        description="Tend the memvault store of the store resource; off, only extra_stores are "
        "tended (the ledger is still kept in a memvault store)",
    )
    extra_stores: list[str] = Field(
        default_factory=list, description="More stores to tend, e.g. mcp+stdio:<command line>"
    )
    ledger_url: str | None = Field(
        default=None,
        description="memvault store for runs and proposals (default: the store resource's)",
    )
    mode: str = setting(GardenConfig, "mode", description="tend-and-propose or autonomous")
    max_mutations: int = setting(
        GardenConfig, "max_mutations", ge=0, description="Mutation budget per run"
    )
    max_judgments: int = setting(
        GardenConfig, "max_judgments", ge=0, description="Judgment budget per run"
    )
    quiet_items: int = setting(
        GardenConfig,
        "quiet_items",
        ge=0,
        description="A store with fewer new or changed memory items than this since the last "
        "garden run is quiet: the nightly run waits for more, or for quiet_days (0: every night)",
    )
    quiet_days: int = setting(
        GardenConfig,
        "quiet_days",
        ge=1,
        description="A quiet store is still gardened once this many days passed since its last run",
    )
    embedder: str | None = Field(default=None, description="Embedder spec for duplicate checks")

    def config(self) -> GardenConfig:
        return GardenConfig(
            mode=self.mode,  # type: ignore[arg-type]
            max_mutations=self.max_mutations,
            max_judgments=self.max_judgments,
            quiet_items=self.quiet_items,
            quiet_days=self.quiet_days,
        )

    def urls(self, store: StoreResource) -> list[str]:
        """The stores tended, in order: the memvault store first (when tended), then the rest."""
        return [*([store.resolved_url] if self.tend_store else []), *self.extra_stores]

    @contextmanager
    def open(self, store: StoreResource) -> Iterator[tuple[Ledger, list[GardenStore]]]:
        """The ledger and the store adapters, closed afterwards (DuckDB: one writer at a time)."""
        from memvault.embed import make_embedder
        from memvault.gardener.adapters import is_mcp_url, open_garden_store
        from memvault.gardener.adapters.memvault_store import MemvaultGardenStore

        with ExitStack() as stack:
            adapters: list[GardenStore] = []
            for url in self.urls(store):
                options = {}
                if not is_mcp_url(url) and self.embedder:
                    options["embedder"] = make_embedder(self.embedder)
                adapter = open_garden_store(url, **options)
                stack.callback(adapter.close)
                adapters.append(adapter)
            own = next((a for a in adapters if isinstance(a, MemvaultGardenStore)), None)
            if own is not None and self.ledger_url is None:
                ledger = Ledger(own.store)
            else:
                handle = memvault.open(self.ledger_url or store.resolved_url)
                stack.callback(handle.close)
                ledger = Ledger(handle)
            yield ledger, adapters
