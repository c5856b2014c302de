"""Run bookkeeping that never leaves a ``runs`` row open.

Work with a ``runs`` row of its own (an ingest, a decision on a review item, an undo, a
stage of a track) takes it from :func:`tracked_run`: begun (or continued) on entry, finished
``succeeded`` with its figures when the block ends, ``failed`` with the error when it
raises. So ``memvault runs`` shows what happened and ``memvault undo`` takes its id either
way. It lives with the store so the store's own work (undo) can use it too;
:mod:`memvault.stage` gives it to the tracks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from memvault.store.store import Store


@dataclass
class RunRow:
    """The ``runs`` row a piece of work writes under: its id, and the figures and status it
    is finished with (set them inside the block)."""

    id: str
    stats: dict[str, Any] = field(default_factory=dict)
    status: str = "succeeded"


@contextmanager
def tracked_run(
    store: Store,
    kind: str,
    params: Mapping[str, Any] | None = None,
    *,
    run_id: str | None = None,
) -> Iterator[RunRow]:
    """Begin a run (or continue ``run_id``), yield it, and finish it: with its ``status``
    and ``stats`` when the block ends, ``failed`` with the error when it raises. So no run
    row is left ``running`` by work that stopped (``memvault runs`` shows what happened,
    ``memvault undo`` takes its id either way)."""
    row = RunRow(store.begin_run(kind, params, run_id=run_id))
    try:
        yield row
    except BaseException as exc:
        store.finish_run(row.id, "failed", row.stats, error=f"{type(exc).__name__}: {exc}")
        raise
    store.finish_run(row.id, row.status, row.stats)


def own_or_callers_run(
    store: Store, kind: str, params: Mapping[str, Any] | None, run_id: str | None
) -> AbstractContextManager[RunRow]:
    """The caller's run ``run_id`` when given (the caller begins and finishes it; what the
    block sets on the row is not written), else a :func:`tracked_run` of the work's own."""
    if run_id is not None:
        return nullcontext(RunRow(run_id))
    return tracked_run(store, kind, params)
