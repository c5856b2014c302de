"""One dream at a time per store, and no dream left "running" by a process that died.

Two dreams on one store (from two Dagster instances, or a CLI run beside the
daemon's) would plan the same changes and the second would die on a duplicate
key half-way. Beginning a dream is therefore one exclusive step: dreams whose
process is gone are marked failed, and a dream still alive makes the new one
stop before it changes anything, with a message that names it. A dream that died is
reverted here (a dream is all or nothing, see :mod:`memvault.dream.atomic`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memvault.errors import MemvaultError
from memvault.store import Store
from memvault.store.queries.runs import other_running_runs

DREAM_KINDS = ("dream", "dream-dry-run")


class DreamInProgress(MemvaultError):
    """Another dream is running on the same store."""


def begin_dream(store: Store, run_id: str, kind: str, params: Mapping[str, Any]) -> list[str]:
    """Begin (or resume) dream ``run_id``; returns one line per abandoned dream marked failed."""
    from memvault.dream.atomic import ensure_going_on

    with store.exclusive(f"memvault-dream:{store.url}"):
        notes = store.fail_abandoned_runs(DREAM_KINDS)
        ensure_going_on(store, run_id)
        others = other_running_runs(store, DREAM_KINDS, run_id)
        if others:
            other, host, pid, started = others[0]
            raise DreamInProgress(
                f"another dream is running on this store: {other} (process {pid} on {host}, "
                f"started {started:%Y-%m-%d %H:%M} UTC); this dream stopped before changing "
                "anything — run it again when that one has finished"
            )
        store.begin_run(kind, params, run_id=run_id)
    return notes
