"""A dream is all or nothing: one that fails leaves the store as it was.

Every write of a dream is audited under its run id, stage after stage. A blocking check that
fails stops the stages after it, but what the checked stage wrote is already there; a stage
that raises leaves what it committed before. So a dream that ends without succeeding is
reverted here, by memvault itself: every row it changed gets its before-image back, and the
tables it rewrites whole get the copy it kept (:mod:`memvault.store.revert`). The dream is
marked ``reverted`` with the reason, and the run that put things back is audited like any
other. A dream whose process died is reverted by the next run that begins
(:meth:`memvault.store.Store.fail_abandoned_runs`).

A reverted dream does not go on: a re-execution of it stops with a message, and the next
dream starts from the store as it was.
"""

from __future__ import annotations

from memvault.errors import MemvaultError
from memvault.store import Store
from memvault.store.revert import RevertReport, revert_run

#: Statuses of a dream that has ended: nothing of it is reverted any more.
ENDED = ("succeeded", "dry-run", "reverted", "undone")


class DreamReverted(MemvaultError):
    """A stage of a dream that already failed and was reverted."""


def fail_dream(store: Store, run_id: str, why: str) -> RevertReport | None:
    """End dream ``run_id`` as failed: revert what it wrote (a dry run wrote nothing, it is
    marked failed). None when there is no such dream or it has already ended."""
    run = store.run(run_id)
    if run is None or run["status"] in ENDED:
        return None
    if run["kind"] != "dream":
        store.finish_run(run_id, "failed", run["stats"], error=why)
        return None
    return revert_run(store, run_id, why)


def ensure_going_on(store: Store, run_id: str) -> None:
    """Stop a stage of a dream that was reverted (a re-execution of a failed dream)."""
    run = store.run(run_id)
    if run is not None and run["status"] == "reverted":
        raise DreamReverted(
            f"dream {run_id} failed and was reverted ({run['error']}); it cannot be continued: "
            "start a new dream (`memvault dream`, or launch dream_job)"
        )
