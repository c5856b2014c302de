"""Ids: stable ones (the same content gives the same id, so a re-run writes no second row),
and the sortable id of a run."""

from __future__ import annotations

import hashlib
import secrets

from memvault.normalize import utcnow


def stable_id(prefix: str, *parts: str) -> str:
    return f"{prefix}:" + hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:16]


def new_run_id(kind: str) -> str:
    """A sortable, unique run id such as ``ingest-20261130T120301-3f9a2c``."""
    return f"{kind}-{utcnow():%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
