"""Run bookkeeping that never leaves a ``runs`` row open.

Work with a ``runs`` row of its own (an ingest, a decision on a review item, an undo, a
stage of a track) takes it from :func:`tracked_run`: begun (or continued) on entry, finished
``succeeded`` with its figures when the block ends, ``failed`` with the error when it
raises. So ``memvault runs`` shows what happened and ``memvault undo`` takes its id either
way. It lives with the store so the store's own work (undo) can use it too;
:mod:`memvault.stage` gives it to the tracks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
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
def begun_run(
    store: Store,
    kind: str,
    params: Mapping[str, Any] | None = None,
    *,
    run_id: str | None = None,
) -> Iterator[RunRow]:
    """Begin a run (or continue ``run_id``) that later steps carry on and finish (a garden
    run's phases, a dream's stages): ``failed`` with the error when the block that begins it
    raises, left ``running`` for those steps when it ends. So a beginning that stops half-way
    never leaves an open run row behind it."""
    row = RunRow(store.begin_run(kind, params, run_id=run_id))
    try:
        yield row
    except BaseException as exc:
        try:
            # What the run saved on its row by then (a resume point) is kept beside its figures.
            saved = (store.run(row.id) or {}).get("stats") or {}
            stats = {**saved, **row.stats} if isinstance(saved, dict) else row.stats
            store.finish_run(row.id, "failed", stats, error=f"{type(exc).__name__}: {exc}")
        except Exception as bookkeeping:
            # The store itself may be what failed (DuckDB invalidates a database after a fatal
            # error): the work's error is the one to see, the bookkeeping's is noted on it.
            exc.add_note(f"run {row.id} could not be marked failed: {bookkeeping}")
        raise


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
    with begun_run(store, kind, params, run_id=run_id) as row:
        yield row
    store.finish_run(row.id, row.status, row.stats)


@contextmanager
def tracked_run_reopening(
    open_store: Callable[[], Store], kind: str, params: Mapping[str, Any] | None = None
) -> Iterator[RunRow]:
    """A :func:`tracked_run` for work that opens the store itself in between (a DuckDB file
    has one writer at a time, and the jobs a demo runs open it): the run is begun, and
    finished or failed, each on a handle ``open_store()`` gives and that is closed again."""
    with open_store() as store:
        row = RunRow(store.begin_run(kind, params))
    try:
        yield row
    except BaseException as exc:
        with open_store() as store:
            store.finish_run(row.id, "failed", row.stats, error=f"{type(exc).__name__}: {exc}")
        raise
    with open_store() as store:
        store.finish_run(row.id, row.status, row.stats)


def own_or_callers_run(
    store: Store, kind: str, params: Mapping[str, Any] | None, run_id: str | None
) -> AbstractContextManager[RunRow]:
    """The caller's run ``run_id`` when given (the caller begins and finishes it; what the
    block sets on the row is not written), else a :func:`tracked_run` of the work's own."""
    if run_id is not None:
        return nullcontext(RunRow(run_id))
    return tracked_run(store, kind, params)
