"""The memvault store as a Dagster resource: short-lived connections, opened per asset."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from pydantic import Field

import memvault
from memvault.config import store_url
from memvault.store import Store


class StoreResource(dg.ConfigurableResource):
    """Where the memory lives: ``duckdb:///path`` (default) or ``postgresql://...``."""

    url: str = Field(default_factory=store_url, description="Store URL (MEMVAULT_STORE)")

    @contextmanager
    def open(self) -> Iterator[Store]:
        # DuckDB allows one writer process: hold the file only while an asset runs.
        store = memvault.open(self.url)
        try:
            yield store
        finally:
            store.close()
