"""Store adapters: memvault's own store, and MCP memory servers over stdio.

``open_garden_store(url)`` picks one by URL: ``duckdb://`` / ``postgresql://``
→ :class:`~memvault.gardener.adapters.memvault_store.MemvaultGardenStore`;
``mcp+stdio:<command line>`` → an MCP memory adapter (imported lazily), chosen by the
server's tools: context items (``mcp-memory-keeper``) or a knowledge graph.
"""

from __future__ import annotations

import importlib
import shlex
from typing import Any

from memvault.errors import MemvaultError
from memvault.gardener.adapter import GardenStore

MCP_PREFIX = "mcp+stdio:"


def is_mcp_url(url: str) -> bool:
    return url.startswith(MCP_PREFIX)


def open_garden_store(url: str, **options: Any) -> GardenStore:
    """The adapter for ``url``; ``options`` go to the adapter's constructor."""
    if is_mcp_url(url):
        command = shlex.split(url[len(MCP_PREFIX) :])
        if not command:
            raise MemvaultError(
                f"{url!r} names no command: use mcp+stdio:<command line>, e.g. "
                "'mcp+stdio:npx -y @modelcontextprotocol/server-memory'"
            )
        try:
            module = importlib.import_module("memvault.gardener.adapters.mcp_memory")
        except ModuleNotFoundError as exc:
            if exc.name != "memvault.gardener.adapters.mcp_memory":
                raise
            raise MemvaultError(
                "the MCP store adapter (memvault.gardener.adapters.mcp_memory) is not installed "
                "in this build; tend a duckdb:// or postgresql:// store instead"
            ) from exc
        opener = getattr(module, "open_mcp_store", None)
        if opener is None:
            raise MemvaultError(
                "memvault.gardener.adapters.mcp_memory has no open_mcp_store(command, **options)"
            )
        store: GardenStore = opener(command, **options)
        return store
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("duckdb", "postgresql", "postgres"):
        from memvault.gardener.adapters.memvault_store import MemvaultGardenStore

        return MemvaultGardenStore.open(url, **options)
    raise MemvaultError(
        f"cannot garden {url!r}: use duckdb:///path, postgresql://... or mcp+stdio:<command line>"
    )
