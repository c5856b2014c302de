"""The memvault store as a Dagster resource: short-lived connections, opened per asset."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from pydantic import Field

import memvault
from memvault.config import masked_url, store_url
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

    @contextmanager
    def open(self) -> Iterator[Store]:
        # DuckDB allows one writer process: hold the file only while an asset runs.
        store = memvault.open(self.url)
        try:
            yield store
        finally:
            store.close()
