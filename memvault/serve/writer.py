"""The server's recall log writer: the answer first, its audited write just after.

A recall through ``memvault serve`` is answered as soon as it is ranked; what it leaves
in the store (its recall_log row, the returned blocks' access, the prefetched entry's
hit, each with its audit row and before-image, under the recall's own run id) is queued
here and written by one background thread on its own connection, all the recalls queued
meanwhile in one transaction (one commit). So the caller does not wait for the write,
and recalls that come faster than a commit share one.

What it guarantees: a recall's write is in the store before ``feedback`` on that recall
reads it (:meth:`RecallWriter.wait_for`), before any other write of the server
(``remember``, ``feedback``: :meth:`RecallWriter.flush` and the write lock they share)
and before the server stops (:meth:`RecallWriter.close`). A crash of the process (power
cut, ``kill -9``) loses the recall logs not yet written (those answered in the last
moments), never a memory: ``remember`` and ``feedback`` are written before they answer.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
from collections.abc import Callable

from memvault.recall.log import PendingRecall, write_recalls
from memvault.recall.result import RecallResult
from memvault.store import Store
from memvault.testing_hooks import pause_point

#: The most recalls written in one transaction.
MAX_BATCH = 256


class RecallWriter:
    """A queue of answered recalls and the thread that writes them, in order."""

    def __init__(
        self,
        store: Store,
        *,
        write: Callable[[Store, list[PendingRecall]], None] = write_recalls,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        #: Its own connection: the writes never wait for a search, nor a search for them.
        self.store = store
        #: Held while a batch is written: the server's other writes take it too, so no two
        #: transactions change the same rows at once.
        self.write_lock = threading.Lock()
        self._write = write
        self._warn = warn or (lambda line: print(line, file=sys.stderr, flush=True))
        self._changed = threading.Condition()
        self._queue: list[PendingRecall] = []
        self._unwritten: set[str] = set()  # queued or being written
        self._closing = False
        self.written = 0
        self.batches = 0
        self._thread = threading.Thread(target=self._run, name="memvault-recall-log", daemon=True)
        self._thread.start()

    def submit(self, result: RecallResult, session_id: str | None, now: dt.datetime) -> bool:
        """Queue one answered recall (written shortly, in the order submitted); False when
        the writer is closing: the caller writes it itself."""
        with self._changed:
            if self._closing:
                return False
            self._queue.append((result, session_id, now))
            self._unwritten.add(result.recall_id)
            self._changed.notify_all()
            return True

    def pending(self) -> int:
        """Recalls answered and not written yet."""
        with self._changed:
            return len(self._unwritten)

    def wait_for(self, recall_id: str) -> None:
        """Return once ``recall_id`` is written (at once when it is not waiting)."""
        with self._changed:
            self._changed.wait_for(lambda: recall_id not in self._unwritten)

    def flush(self) -> None:
        """Return once every recall submitted so far is written."""
        with self._changed:
            self._changed.wait_for(lambda: not self._unwritten)

    def close(self) -> None:
        """Write what is queued, stop the thread and close its connection."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()
        self.store.close()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._queue) or self._closing)
                if not self._queue:
                    return  # closing, nothing left
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            try:
                pause_point("recall-log-write")
                with self.write_lock:
                    self._write_batch(batch)
            finally:
                with self._changed:
                    self._unwritten.difference_update(r.recall_id for r, _, _ in batch)
                    self._changed.notify_all()

    def _write_batch(self, batch: list[PendingRecall]) -> None:
        """One transaction for the batch; when it fails, each recall on its own, so one bad
        recall costs its own log only (and says so)."""
        try:
            self._write(self.store, batch)
        except Exception as exc:  # the thread must go on; each recall is tried alone
            if len(batch) == 1:
                self._warn(f"memvault serve: recall {batch[0][0].recall_id} not logged: {exc}")
                return
            for one in batch:
                self._write_batch([one])
            return
        self.written += len(batch)
        self.batches += 1
