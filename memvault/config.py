"""Configuration read from the environment, with the defaults the README documents."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

#: The embedded default store, relative to the working directory.
DEFAULT_STORE = "duckdb://.memvault/memvault.duckdb"
#: Where the demo writes its store unless told otherwise.
DEMO_STORE = "duckdb://.memvault/demo.duckdb"
#: Where the collector looks for JSONL files dropped for ingestion.
DEFAULT_INBOX = ".memvault/inbox"


def store_url(explicit: str | None = None) -> str:
    """``--store``, else ``MEMVAULT_STORE``, else the embedded default."""
    return explicit or os.environ.get("MEMVAULT_STORE") or DEFAULT_STORE


#: Where a store password lives when the URL shows it masked (``user:***@host``).
PASSWORD_VARIABLE = "MEMVAULT_STORE_PASSWORD"
MASK = "***"


def masked_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, for display and for run configuration.

    The password moves to ``MEMVAULT_STORE_PASSWORD`` in this process's environment (unless
    that is set already), where opening the masked URL finds it again.
    """
    parts = urlsplit(url)
    if not parts.password or parts.password == MASK:
        return url
    os.environ.setdefault(PASSWORD_VARIABLE, parts.password)
    netloc = parts.netloc.replace(f":{parts.password}@", f":{MASK}@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def unmasked_url(url: str) -> str:
    """A masked URL with the password from ``MEMVAULT_STORE_PASSWORD``; without it, the URL
    without a password (PostgreSQL then reads ``PGPASSWORD`` or ``~/.pgpass``)."""
    parts = urlsplit(url)
    if parts.password != MASK:
        return url
    secret = os.environ.get(PASSWORD_VARIABLE)
    netloc = parts.netloc.replace(f":{MASK}@", f":{secret}@" if secret else "@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def dream_gate() -> tuple[float, int]:
    """The dream's dual gate: ``MEMVAULT_DREAM_GATE_HOURS`` and ``MEMVAULT_DREAM_GATE_SESSIONS``,
    else ``DreamConfig``'s defaults (24 hours, 5 sessions)."""
    from memvault.dream.config import DreamConfig

    default = DreamConfig()
    hours = os.environ.get("MEMVAULT_DREAM_GATE_HOURS") or str(default.gate_hours)
    sessions = os.environ.get("MEMVAULT_DREAM_GATE_SESSIONS") or str(default.gate_sessions)
    try:
        return float(hours), int(sessions)
    except ValueError:
        from memvault.errors import MemvaultError

        raise MemvaultError(
            f"MEMVAULT_DREAM_GATE_HOURS={hours!r} / MEMVAULT_DREAM_GATE_SESSIONS={sessions!r}: "
            "give a number of hours and a whole number of sessions"
        ) from None


def inbox_dir() -> Path:
    return Path(os.environ.get("MEMVAULT_INBOX") or DEFAULT_INBOX)


def claude_projects_dir() -> Path | None:
    """``MEMVAULT_CLAUDE_PROJECTS`` (``none`` turns it off), else ``~/.claude/projects`` if present."""
    value = os.environ.get("MEMVAULT_CLAUDE_PROJECTS")
    if value is not None:
        return None if value.strip().lower() in ("", "none", "off") else Path(value).expanduser()
    default = Path.home() / ".claude" / "projects"
    return default if default.is_dir() else None


def env_number(
    name: str,
    default: float,
    *,
    environ: Mapping[str, str] | None = None,
    allow_zero: bool = False,
) -> float:
    """A positive number (or zero, with ``allow_zero``) from the environment variable ``name``
    (unset or empty: ``default``); anything else is a one-line error naming the variable."""
    env = os.environ if environ is None else environ
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0 or (value == 0 and not allow_zero):
        from memvault.errors import MemvaultError

        least = "0 or more" if allow_zero else "a positive number"
        raise MemvaultError(f"{name}={raw!r}: give {least} (default {default:g})")
    return value
