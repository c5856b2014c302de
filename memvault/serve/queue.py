"""The server's durable write queue: what an agent wrote, safe on disk before the call returns.

Every write of ``memvault serve`` (a ``remember``, a ``feedback``, a recall's log) is
first appended here, one JSON line, and fsync'd; only then is it applied to the store and
the call answered. So a write made while a nightly job holds the DuckDB file waits here
(the server answers from its in-memory copy meanwhile), and a write of a server that was
killed (SIGKILL, power cut) before it reached the store is applied by the next server of
the same store. Each entry carries the run id it is applied under: applying checks that
run first, in the same transaction as the write, so an entry is applied once however many
times a crash makes it be tried (see :mod:`memvault.serve.writer`).

The file lives in this user's private state directory (``$XDG_STATE_HOME/memvault``, else
``~/.local/state/memvault``; mode 0700, created without following links), one per store,
and is locked (``flock``) by the one server that uses it. Lines: an entry
``{"seq", "run_id", "kind", "args"}``, or ``{"done": [seq, ...]}`` once entries are in the
store; a torn last line (a crash mid-write: its call never returned) is ignored. When every
entry is done the file is emptied. An entry the store refuses when it is finally applied is
set aside in ``<queue>.refused`` (with the reason) and counted, never dropped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault import private
from memvault.errors import MemvaultError

#: Empty the file once this many bytes of it are done entries, even while some wait.
COMPACT_BYTES = 1 << 20


class QueueError(MemvaultError):
    """The queue file cannot be used (not this user's, or another server holds it)."""


@dataclass
class Entry:
    """One write waiting for the store."""

    seq: int
    run_id: str
    kind: str
    args: dict[str, Any]
    #: Failed attempts to apply it (an error that was no refusal; tried again later).
    failures: int = field(default=0, compare=False)

    def line(self) -> bytes:
        data = {"seq": self.seq, "run_id": self.run_id, "kind": self.kind, "args": self.args}
        return (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def queue_path(store_url: str, directory: Path | None = None) -> Path:
    """The queue file of a store (one per DuckDB file or PostgreSQL URL, named as the
    server's lock is: :func:`memvault.serve.discovery.store_key`)."""
    from memvault.serve.discovery import store_key

    name = f"serve-queue-{store_key(store_url)}.jsonl"
    return (directory or private.state_dir()) / name


def _in_memory(store_url: str) -> bool:
    from memvault.serve.discovery import duckdb_path

    return store_url.lower().startswith("duckdb:") and duckdb_path(store_url) is None


def _open_private(path: Path) -> int:
    """Append descriptor of a file of ours (0600, created if missing, no link followed)."""
    return private.open_file(path, append=True)


class WriteQueue:
    """The entries of one store's queue not yet in the store, in order, and the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.refused_path = path.with_name(path.name + ".refused")
        self._lock = threading.Lock()
        self._fd = _open_private(path)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise QueueError(
                f"{path} is in use by another `memvault serve` of this store"
            ) from None
        self._pending: dict[int, Entry] = {}
        self._done_bytes = 0
        #: Entries set aside since this queue was opened (the store refused them).
        self.refused = 0
        self._next = 1 + self._load()

    @classmethod
    def for_store(cls, store_url: str, directory: Path | None = None) -> WriteQueue:
        """The queue of a store; an in-memory store (which ends with its process) gets one in
        a temporary directory of its own."""
        if _in_memory(store_url) and directory is None:
            directory = Path(tempfile.mkdtemp(prefix="memvault-queue-"))
        return cls(queue_path(store_url, directory))

    def _load(self) -> int:
        """Read the entries a previous server left; returns the last sequence number."""
        with open(self._fd, "rb", closefd=False) as fh:
            fh.seek(0)
            raw = fh.read()
        last = 0
        for line in raw.splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a torn last line: its call never returned
            if not isinstance(data, dict):
                continue
            if "done" in data:
                for seq in data["done"]:
                    self._pending.pop(int(seq), None)
                continue
            entry = Entry(int(data["seq"]), str(data["run_id"]), str(data["kind"]), data["args"])
            self._pending[entry.seq] = entry
            last = max(last, entry.seq)
        if not self._pending:
            self._truncate()
        return last

    # -- writing ------------------------------------------------------------------------------

    def append(self, kind: str, run_id: str, args: dict[str, Any]) -> Entry:
        """Add an entry and make it durable (fsync) before returning it."""
        with self._lock:
            entry = Entry(self._next, run_id, kind, args)
            self._next += 1
            _write_all(self._fd, entry.line())
            os.fdatasync(self._fd)
            self._pending[entry.seq] = entry
            return entry

    def done(self, entries: list[Entry]) -> None:
        """Mark entries as in the store (or dropped as refused at the call); the file is
        emptied once nothing waits. Not fsync'd: a done mark lost to a crash only makes the
        next server try the entry again, and applying checks its run first."""
        if not entries:
            return
        with self._lock:
            for entry in entries:
                self._pending.pop(entry.seq, None)
            if not self._pending:
                self._truncate()
                return
            line = (json.dumps({"done": [e.seq for e in entries]}) + "\n").encode()
            _write_all(self._fd, line)
            self._done_bytes += sum(len(e.line()) for e in entries) + len(line)
            if self._done_bytes > COMPACT_BYTES:
                self._compact()

    def set_aside(self, entry: Entry, reason: str) -> None:
        """Keep an entry the store refused in ``<queue>.refused`` (fsync'd), then mark it done."""
        record = json.loads(entry.line()) | {"refused": reason}
        fd = _open_private(self.refused_path)
        try:
            _write_all(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        self.refused += 1
        self.done([entry])

    def pending(self) -> list[Entry]:
        """The entries not in the store yet, oldest first."""
        with self._lock:
            return [self._pending[k] for k in sorted(self._pending)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    # -- keeping the file small ---------------------------------------------------------------

    def _truncate(self) -> None:
        os.ftruncate(self._fd, 0)
        os.fsync(self._fd)
        self._done_bytes = 0

    def _compact(self) -> None:
        """Rewrite the file with the waiting entries only: written to a new file (fsync'd)
        and renamed over it, so a crash leaves one or the other, never a mix."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o600)
        try:
            _write_all(fd, b"".join(self._pending[k].line() for k in sorted(self._pending)))
            os.fsync(fd)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.replace(tmp, self.path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _sync_dir(self.path.parent)
        os.close(self._fd)
        os.lseek(fd, 0, os.SEEK_END)
        self._fd = _reopen_append(fd)
        self._done_bytes = 0


def _reopen_append(fd: int) -> int:
    """``fd`` with O_APPEND set (it was created write-only for the rewrite)."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_APPEND)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
