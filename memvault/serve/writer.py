"""The server's one writer: every write through the durable queue, then into the store.

``remember``, ``feedback`` and each answered recall's log are appended to the queue
(:mod:`memvault.serve.queue`, fsync'd) and then applied to the store
(:mod:`memvault.serve.apply`), in the order they were made, on the writer's own
connection. ``remember`` and ``feedback`` are applied before they answer (a refusal comes
back to the caller and writes nothing); a recall's log is applied just after the answer by
the writer's thread, the recalls that came meanwhile in one transaction.

On a DuckDB file the writer also decides when the server holds the file
(:mod:`memvault.store.attached`). Another process that needs the file asks the server to
let go (:meth:`ServeWriter.release`); the server copies what it answers from into memory
and detaches at once, after the call under way. Writes made meanwhile are applied to the
copy (a recall finds them at once) and stay in the queue; the thread takes the file back
when it is free, but not before ``MEMVAULT_SERVE_HOLD_OFF_S`` seconds (default 60) from
when it let go, so that the steps of a nightly run, each a process that opens the store
in turn, go one after another without the server in between; then it applies what waited.

Guarantees: an entry is applied once (its run is looked for in the same transaction),
in order; what the store refuses when it is finally applied is set aside in the queue's
``.refused`` file and counted; a recall's log is in the store (or the copy) before a
``feedback`` on that recall reads it (:meth:`ServeWriter.wait_for`); :meth:`close`
applies what is left, waiting a while for the file, and what still cannot be applied stays
in the queue for the next server of the store.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from memvault.config import env_number
from memvault.embed import Embedder
from memvault.errors import MemvaultError
from memvault.recall.result import RecallResult
from memvault.serve.apply import (
    Refused,
    apply_feedback,
    apply_recalls,
    apply_remember,
    recall_args,
)
from memvault.serve.queue import Entry, WriteQueue
from memvault.store import Store
from memvault.store.attached import detachable
from memvault.store.backends import lock_timeout
from memvault.testing_hooks import pause_point

#: The most recall logs written in one transaction.
MAX_BATCH = 256
#: Failed attempts (errors that are no refusal) before an entry is set aside.
MAX_FAILURES = 3
#: Seconds between two looks of the thread when nothing wakes it (taking the file back,
#: trying a failed entry again).
TICK = 1.0
#: Seconds from letting go of the file until the server takes it back (when it is free).
HOLD_OFF_VARIABLE = "MEMVAULT_SERVE_HOLD_OFF_S"
HOLD_OFF_SECONDS = 60.0


def hold_off_seconds(environ: dict[str, str] | None = None) -> float:
    """``MEMVAULT_SERVE_HOLD_OFF_S``: how long after letting go of the DuckDB file the
    server waits before it takes the file back (default 60; 0 takes it back when free)."""
    return env_number(HOLD_OFF_VARIABLE, HOLD_OFF_SECONDS, environ=environ, allow_zero=True)


class ServeWriter:
    """The queue, the thread that applies it, and the server's hold on a DuckDB file."""

    def __init__(
        self,
        store: Store,
        queue: WriteQueue,
        *,
        read_lock: threading.Lock | None = None,
        embedder: Callable[[], Embedder | None] | None = None,
        on_change: Callable[[], None] | None = None,
        hold_off: float | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        #: Its own connection: the writes never wait for a search, nor a search for them.
        self.store = store
        self.queue = queue
        #: The server's lock on its reading connection: held to switch between the file and
        #: the copy (no search may run meanwhile).
        self.read_lock = read_lock or threading.Lock()
        #: Held while anything is applied: one transaction at a time, in queue order. Taken
        #: before ``read_lock`` when both are (never the other way round).
        self.write_lock = threading.RLock()
        self.holder = detachable(store.backend)
        self.hold_off = hold_off_seconds() if hold_off is None else hold_off
        self._embedder = embedder or (lambda: None)
        self._on_change = on_change or (lambda: None)
        self._warn = warn or (lambda line: print(line, file=sys.stderr, flush=True))
        self._changed = threading.Condition()
        #: Entries applied to the in-memory copy, not yet to the file.
        self._shown: set[int] = set()
        #: Recalls answered whose log is not applied yet (recall id -> queue seq).
        self._unwritten: dict[str, int] = {}
        self._closing = False
        self._closed = False
        #: When the server last let go of the file (time.monotonic), None while it holds it.
        self.released_at: float | None = None
        #: Recall logs written, in how many transactions; times the file was let go of.
        self.written = 0
        self.batches = 0
        self.releases = 0
        self.copy_seconds: list[float] = []
        with self.write_lock:
            self._drain()  # what a stopped or killed server left
        self._thread = threading.Thread(target=self._run, name="memvault-writer", daemon=True)
        self._thread.start()

    # -- the calls ----------------------------------------------------------------------------

    @property
    def holds_file(self) -> bool:
        """Whether the store is the file itself (always, but for a DuckDB file let go of)."""
        return self.holder is None or self.holder.attached

    def submit_recall(self, result: RecallResult, session_id: str | None, now: dt.datetime) -> None:  # fmt: skip
        """Queue an answered recall's log (durable before this returns; applied shortly)."""
        if self._closed:
            raise MemvaultError("the server is stopping: the recall was answered, not recorded")
        entry = self.queue.append("recall", result.recall_id, recall_args(result, session_id, now))
        with self._changed:
            self._unwritten[result.recall_id] = entry.seq
            self._changed.notify_all()

    def write(self, kind: str, run_id: str, args: dict[str, Any]) -> dict[str, Any]:
        """Queue a ``remember`` or ``feedback`` and apply it (with everything queued before
        it); returns its result, or raises :class:`Refused` (then nothing was written)."""
        if self._closed:
            raise MemvaultError("the server is stopping: nothing was written")
        with self.write_lock:  # appended under the lock: no other drain applies it first
            entry = self.queue.append(kind, run_id, args)
            return self._drain(own=entry) or {}

    def pending(self) -> int:
        """Recall logs answered and not applied yet."""
        with self._changed:
            return len(self._unwritten)

    def waiting(self) -> int:
        """Entries not in the store's file yet (applied to the copy, or not at all)."""
        return len(self.queue)

    def wait_for(self, recall_id: str) -> None:
        """Return once ``recall_id``'s log is applied (at once when it is not waiting)."""
        with self._changed:
            self._changed.wait_for(lambda: recall_id not in self._unwritten)

    def flush(self) -> None:
        """Apply everything queued so far (to the file, or to the copy while it is away)."""
        with self.write_lock:
            self._drain()

    # -- holding the file ---------------------------------------------------------------------

    def release(self) -> dict[str, Any]:
        """Let go of the DuckDB file now (after the call under way): the server answers from
        its in-memory copy until it takes the file back. Nothing to do on another store."""
        if self.holder is None:
            return {"held": True, "detachable": False}
        copied = 0.0
        with self.write_lock:
            if self.holder.attached:
                copied = self.holder.copy_and_detach(switch_lock=self.read_lock)
                self.copy_seconds.append(copied)
                self.releases += 1
                self.released_at = time.monotonic()
                self._shown.clear()
                self._drain()  # what waits goes into the copy: a recall sees it
                self._on_change()
        with self._changed:
            self._changed.notify_all()
        return {"held": False, "detachable": True, "copy_seconds": round(copied, 3)}

    def take_back(self, *, force: bool = False) -> bool:
        """Take the file back when it is free and the hold-off has passed (``force``: at
        once), then apply what waited; returns whether the server holds it."""
        if self.holder is None or self.holder.attached:
            return True
        if not force and (
            self.released_at is not None and time.monotonic() - self.released_at < self.hold_off
        ):
            return False
        with self.write_lock, self.read_lock:
            if not self.holder.try_attach():
                return False
            self.released_at = None
            self._shown.clear()
            self._drain()
            self._on_change()
        return True

    # -- the thread ---------------------------------------------------------------------------

    def close(self) -> None:
        """Apply what is left (waiting up to ``MEMVAULT_LOCK_TIMEOUT`` seconds for a file
        another process holds), stop the thread, close the connection and the queue."""
        if self._closed:
            return
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()
        self._closed = True
        try:
            with self.write_lock:
                self._drain()
            if not self.holds_file:
                deadline = time.monotonic() + lock_timeout()
                while not self.take_back(force=True) and time.monotonic() < deadline:
                    time.sleep(0.1)
            left = self.waiting()
            if left:
                self._warn(
                    f"memvault serve: {left} write(s) wait in {self.queue.path} (the store is "
                    "held by another process); the next `memvault serve` of this store "
                    "applies them"
                )
        finally:
            self.queue.close()
            self.store.close()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._unwritten) or self._closing, TICK)
                closing = self._closing
            if closing:
                return
            try:
                if self._unwritten or self._retry_due():
                    pause_point("recall-log-write")
                    with self.write_lock:
                        self._drain()
                if self.holder is not None and not self.holder.attached:
                    self.take_back()
            except Exception as exc:  # the thread goes on; the entries wait in the queue
                self._warn(f"memvault serve: writing failed, tried again shortly: {exc}")
                time.sleep(TICK)

    def _retry_due(self) -> bool:
        return any(e.failures for e in self.queue.pending())

    # -- applying -----------------------------------------------------------------------------

    def _drain(self, own: Entry | None = None) -> dict[str, Any] | None:
        """Apply every entry not applied to the current database yet, in order (the write
        lock held); returns ``own``'s result, or raises its refusal."""
        todo = [e for e in self.queue.pending() if e.seq not in self._shown]
        result: dict[str, Any] | None = None
        k = 0
        while k < len(todo):
            entry = todo[k]
            if entry.kind == "recall":
                batch = [entry]
                while k + len(batch) < len(todo) and len(batch) < MAX_BATCH and todo[k + len(batch)].kind == "recall":  # fmt: skip
                    batch.append(todo[k + len(batch)])
                self._apply_recalls(batch)
                k += len(batch)
                continue
            k += 1
            try:
                answer = self._apply(entry)
            except Refused as exc:
                if entry is own:
                    self.queue.done([entry])  # the caller hears why; nothing was written
                    raise
                self._set_aside(entry, str(exc))
                continue
            except Exception as exc:
                if entry is own:
                    self.queue.done([entry])
                    raise
                entry.failures += 1
                if entry.failures >= MAX_FAILURES:
                    self._set_aside(entry, f"{type(exc).__name__}: {exc}")
                    continue
                self._warn(f"memvault serve: {entry.kind} {entry.run_id} not applied yet: {exc}")
                break  # in order: what follows waits for it
            self._applied([entry])
            if entry is own:
                result = answer
        return result

    def _apply(self, entry: Entry) -> dict[str, Any]:
        if entry.kind == "remember":
            return apply_remember(self.store, entry, self._embedder_or_none())
        if entry.kind == "feedback":
            return apply_feedback(self.store, entry)
        raise Refused(f"unknown kind of write {entry.kind!r}")

    def _embedder_or_none(self) -> Embedder | None:
        try:
            return self._embedder()
        except Exception as exc:  # no vector now: the night's embedding makes it
            self._warn(f"memvault serve: no embedder ({exc}); the night embeds the memory")
            return None

    def _apply_recalls(self, batch: list[Entry]) -> None:
        """One transaction for the batch; when it fails, each recall on its own, so one bad
        recall costs its own log only (set aside, and said)."""
        try:
            apply_recalls(self.store, batch)
        except Exception as exc:
            if len(batch) > 1:
                for entry in batch:
                    self._apply_recalls([entry])
                return
            self._set_aside(batch[0], f"{type(exc).__name__}: {exc}")
            self._warn(f"memvault serve: recall {batch[0].run_id} not logged: {exc}")
            return
        self.written += len(batch)
        self.batches += 1
        self._applied(batch)

    def _applied(self, entries: list[Entry]) -> None:
        if self.holds_file:
            self.queue.done(entries)
        else:
            self._shown.update(e.seq for e in entries)
        self._forget(entries)

    def _set_aside(self, entry: Entry, reason: str) -> None:
        self.queue.set_aside(entry, reason)
        self._shown.discard(entry.seq)
        self._warn(
            f"memvault serve: the store refused {entry.kind} {entry.run_id} ({reason}); "
            f"kept in {self.queue.refused_path}"
        )
        self._forget([entry])

    def _forget(self, entries: list[Entry]) -> None:
        """Recalls whose log is applied (or set aside): a feedback waiting for one goes on."""
        recalls = [e.run_id for e in entries if e.kind == "recall"]
        if recalls:
            with self._changed:
                for rid in recalls:
                    self._unwritten.pop(rid, None)
                self._changed.notify_all()


def apply_left(store: Store) -> int:
    """Apply the writes a ``memvault serve`` of this store left in its queue when no server
    runs to apply them (it stopped while a nightly job held the file, or was killed and not
    started again); returns how many. The collector calls it first, so what an agent
    remembered is in the store before the night reads it. Its vectors are the night's to
    make (no embedder is loaded here). A queue a live server holds is that server's: 0."""
    from memvault.serve.queue import QueueError, queue_path

    try:
        path = queue_path(store.url)
        if not path.exists() or path.stat().st_size == 0:
            return 0
        queue = WriteQueue(path)
    except (QueueError, MemvaultError, OSError):
        return 0  # held by a live server (it applies them), or no private state dir
    waiting = len(queue)
    writer = ServeWriter(store.twin(), queue, hold_off=0)
    left = writer.waiting()
    writer.close()
    return waiting - left
