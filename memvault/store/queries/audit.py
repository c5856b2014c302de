"""The ``audit_log`` family: what the audited write path recorded, read back."""

from __future__ import annotations

from memvault.store.store import Store


def changes_by_run(store: Store) -> dict[str, int]:
    """How many audited changes each run made (run id → count; runs without changes absent)."""
    return {
        str(run_id): int(n)
        for run_id, n in store.fetch("SELECT run_id, count(*) FROM audit_log GROUP BY run_id")
    }
