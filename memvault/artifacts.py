"""Stored documents (table ``artifacts``): the dream's and the gardener's reports.

Each writer inserts its own rows through the audited write path; reading one back, or
the newest of a kind, is here.
"""

from __future__ import annotations

from typing import Any

from memvault.store import Store
from memvault.store.queries.runs import latest_artifact_id


def read_artifact(store: Store, artifact_id: str) -> dict[str, Any] | None:
    """One stored document (id, kind, name, content, run_id, created_at), or None."""
    return store.get_row("artifacts", artifact_id)


def latest_artifact(store: Store, kind: str) -> dict[str, Any] | None:
    """The newest stored document of ``kind`` (e.g. ``garden-report``), or None."""
    found = latest_artifact_id(store, kind)
    return read_artifact(store, found) if found is not None else None
