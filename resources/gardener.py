"""The gardener as a Dagster resource: which stores to tend, the mode and the budgets."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import dagster as dg
from pydantic import Field

import memvault
from memvault.config import masked_url, store_url
from memvault.gardener.adapter import GardenStore
from memvault.gardener.ledger import Ledger
from memvault.gardener.state import GardenConfig


class GardenerResource(dg.ConfigurableResource):
    """Stores to tend (default: the memvault store) and how; the ledger is a memvault store."""

    store_url: str = Field(
        default_factory=lambda: masked_url(store_url()),
        description="Store to tend (MEMVAULT_STORE; a password shows as ***)",
    )
    extra_stores: list[str] = Field(
        default_factory=list, description="More stores to tend, e.g. mcp+stdio:<command line>"
    )
    ledger_url: str | None = Field(
        default=None,
        description="memvault store for runs and proposals (default: the tended memvault store)",
    )
    mode: str = Field(default="tend-and-propose", description="tend-and-propose or autonomous")
    max_mutations: int = Field(default=25, ge=0, description="Mutation budget per run")
    max_judgments: int = Field(default=50, ge=0, description="Judgment budget per run")
    embedder: str | None = Field(default=None, description="Embedder spec for duplicate checks")

    def config(self) -> GardenConfig:
        return GardenConfig(
            mode=self.mode,  # type: ignore[arg-type]
            max_mutations=self.max_mutations,
            max_judgments=self.max_judgments,
        )

    @contextmanager
    def open(self) -> Iterator[tuple[Ledger, list[GardenStore]]]:
        """The ledger and the store adapters, closed afterwards (DuckDB: one writer at a time)."""
        from memvault.embed import make_embedder
        from memvault.gardener.adapters import is_mcp_url, open_garden_store
        from memvault.gardener.adapters.memvault_store import MemvaultGardenStore

        with ExitStack() as stack:
            adapters: list[GardenStore] = []
            for url in [self.store_url, *self.extra_stores]:
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
                handle = memvault.open(self.ledger_url or store_url())
                stack.callback(handle.close)
                ledger = Ledger(handle)
            yield ledger, adapters
