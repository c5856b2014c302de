"""Configuration read from the environment, with the defaults the README documents."""

from __future__ import annotations

import os
from pathlib import Path

#: The embedded default store, relative to the working directory.
DEFAULT_STORE = "duckdb://.memvault/memvault.duckdb"
#: Where the demo writes its store unless told otherwise.
DEMO_STORE = "duckdb://.memvault/demo.duckdb"
#: Where the collector looks for JSONL files dropped for ingestion.
DEFAULT_INBOX = ".memvault/inbox"


def store_url(explicit: str | None = None) -> str:
    """``--store``, else ``MEMVAULT_STORE``, else the embedded default."""
    return explicit or os.environ.get("MEMVAULT_STORE") or DEFAULT_STORE


def inbox_dir() -> Path:
    return Path(os.environ.get("MEMVAULT_INBOX") or DEFAULT_INBOX)


def claude_projects_dir() -> Path | None:
    """``MEMVAULT_CLAUDE_PROJECTS`` (``none`` turns it off), else ``~/.claude/projects`` if present."""
    value = os.environ.get("MEMVAULT_CLAUDE_PROJECTS")
    if value is not None:
        return None if value.strip().lower() in ("", "none", "off") else Path(value).expanduser()
    default = Path.home() / ".claude" / "projects"
    return default if default.is_dir() else None
