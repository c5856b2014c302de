"""The memvault store as a Dagster resource: short-lived connections, opened per asset."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from pydantic import Field, PrivateAttr

import memvault
from memvault.config import masked_url, store_url
from memvault.errors import StoreError
from memvault.owners import Registry, run_owner
from memvault.store import Store


class StoreResource(dg.ConfigurableResource):
    """Where the memory lives: ``duckdb:///path`` (default) or ``postgresql://...``.

    A password in the URL is shown masked (``user:***@host``); it is read from
    ``MEMVAULT_STORE_PASSWORD`` (or PostgreSQL's own ``PGPASSWORD`` / ``~/.pgpass``).
    """

    url: str = Field(
        default_factory=lambda: masked_url(store_url()),
        description="Store URL (MEMVAULT_STORE); a password shows as *** and is read from "
        "MEMVAULT_STORE_PASSWORD",
    )
    by_owner: bool = Field(
        default=False,
        description="Many owners: open the store of the run's owner (its partition), as the "
        "owners registry has it, instead of url",
    )
    _owner: str | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        if self.by_owner:
            run = context.run
            self._owner = run_owner(run.tags if run is not None else {})

    @property
    def owner(self) -> str | None:
        """The owner whose store this run tends (None: a single-owner installation)."""
        return self._owner

    @property
    def resolved_url(self) -> str:
        """The store this run opens: its owner's (``by_owner``), else ``url``."""
        if not self.by_owner:
            return self.url
        if self._owner is None:
            raise StoreError(
                "this run names no owner: launch it for an owner's partition (many owners are "
                "registered, each with a store of their own)"
            )
        return masked_url(Registry().get(self._owner).store)

    @contextmanager
    def open(self) -> Iterator[Store]:
        # DuckDB allows one writer process: hold the file only while an asset runs.
        store = memvault.open(self.resolved_url)
        try:
            yield store
        finally:
            store.close()
