"""How the shell finds the ``memvault serve`` that holds a store, and knows it is that one.

Per store (keyed by a hash of its file's real path, or of its URL), this user's private
runtime directory (:func:`memvault.private.runtime_dir`) holds:

* ``serve-<key>.lock``: held (``flock``) by the live server for as long as it runs. The
  lock, not a PID, says whether a server lives: the kernel drops it when the process
  dies, however it dies, and another user cannot take it (the directory is ours alone).
* ``serve-<key>.json`` (0600): what identifies the server beyond its PID, its process
  start time and command line, so a PID reused by another process is not taken for it;
  a random token only it knows; the path of its Unix socket.
* ``serve-<key>.sock``: the server's Unix socket (owner-only, in the 0700 directory).

:func:`read` returns the server only when the lock is held and the process with that
PID started when the file says and runs the command it says; a file left by a dead
server is ignored and removed. The client then asks the server to prove it knows the
token before it sends anything (:mod:`memvault.serve.client`).

Standard library only: the shell's fast path imports this and nothing heavier.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from memvault import private
from memvault.private import NotPrivate


@dataclass(frozen=True)
class ServerInfo:
    """A running server: who it is (PID, start time, command line), its token, its socket."""

    pid: int
    started: int
    cmdline: list[str]
    token: str
    socket: str
    store: str
    #: Its TCP base URL (``--transport http`` or ``--port``), for people; the shell uses the socket.
    url: str | None = None
    #: When it started serving (Unix seconds), for people.
    since: float = field(default=0.0)

    def describe(self) -> str:
        """``PID 123 (memvault serve --store …)``: how a message names the process."""
        return f"PID {self.pid} ({' '.join(self.cmdline)[:200]})"


@dataclass(frozen=True)
class Paths:
    """The three files of one store's server in the private runtime directory."""

    lock: Path
    info: Path
    socket: Path


def duckdb_path(store_url: str) -> Path | None:
    """The file of a ``duckdb:`` URL, absolute (None for another backend or ``:memory:``)."""
    if not store_url.lower().startswith("duckdb:"):
        return None
    path = store_url[len("duckdb://") :] if store_url.startswith("duckdb://") else store_url[7:]
    if path in ("", "/:memory:", ":memory:"):
        return None
    if path.startswith("//"):  # the same file as /abs (POSIX keeps a leading "//" apart)
        path = "/" + path.lstrip("/")
    return Path(path).expanduser().absolute()


def store_key(store_url: str) -> str | None:
    """What names a store across spellings of its URL (None: an in-memory store, which
    no other process can reach)."""
    file = duckdb_path(store_url)
    if file is not None:
        name = "duckdb:" + os.path.realpath(file)
    elif store_url.lower().startswith("duckdb:"):
        return None
    else:
        name = _without_password(store_url)
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:24]


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def paths(store_url: str) -> Paths | None:
    """Where the lock, discovery file and socket of ``store_url``'s server live."""
    key = store_key(store_url)
    if key is None:
        return None
    folder = private.runtime_dir()
    return Paths(
        lock=folder / f"serve-{key}.lock",
        info=folder / f"serve-{key}.json",
        socket=folder / f"serve-{key}.sock",
    )


# -- the process behind a PID ------------------------------------------------------------------


def process_identity(pid: int) -> tuple[int, list[str]] | None:
    """(start time in clock ticks since boot, command line) of a running process, None when
    no process has this PID (or it is a zombie)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    fields = stat_line.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
    if len(fields) < 20 or fields[0] == "Z":
        return None
    cmdline = [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]]
    return int(fields[19]), cmdline  # field 22 of the line; the 20th after the name


def process_state(pid: int) -> str | None:
    """The one-letter state of a process (``T``: stopped, as by Ctrl-Z), None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def is_same_process(info: ServerInfo) -> bool:
    """Whether the process with ``info.pid`` is the one that wrote ``info``: same start
    time and command line (a PID on its own can have been reused)."""
    identity = process_identity(info.pid)
    return identity is not None and identity == (info.started, info.cmdline)


# -- the lock ------------------------------------------------------------------------------------


def _lock_held(lock: Path) -> bool:
    """Whether a live process holds the store's lock (taking it shared for a moment)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        private.check_file(lock, os.fstat(fd))
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


class Claim:
    """This process holds the store's server lock: it is the one server of the store.

    The lock is held until :meth:`release` or the process ends (however it ends)."""

    def __init__(self, store_url: str, where: Paths, fd: int) -> None:
        self.store_url = store_url
        self.paths = where
        self._fd: int | None = fd
        self.token = secrets.token_urlsafe(32)

    def publish(self, *, store: str, url: str | None = None) -> ServerInfo:
        """Write the discovery file naming this process (once its socket listens)."""
        identity = process_identity(os.getpid())
        if identity is None:
            raise NotPrivate("/proc/self cannot be read: the server cannot say who it is")
        info = ServerInfo(
            pid=os.getpid(),
            started=identity[0],
            cmdline=identity[1],
            token=self.token,
            socket=str(self.paths.socket),
            store=_without_password(store),
            url=url,
            since=time.time(),  # wall clock: shown to people, never compared
        )
        private.write_file(self.paths.info, json.dumps(asdict(info)).encode("utf-8"))
        return info

    def release(self) -> None:
        """Remove the discovery file and the socket, then let the lock go."""
        if self._fd is None:
            return
        try:
            private.remove(self.paths.info)
            private.remove(self.paths.socket)
        finally:
            os.close(self._fd)  # closing the only descriptor drops the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


def claim(store_url: str, *, wait: float = 0.0) -> Claim | None:
    """Take the store's server lock (waiting up to ``wait`` seconds for it): the claim, or
    None when a live server holds it. Leftovers of a dead server are removed."""
    where = paths(store_url)
    if where is None:
        return None
    fd = private.open_file(where.lock)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            # Held by a live server, or for a moment by a reader checking it.
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)
    private.remove(where.info)  # a dead server's, if any: nobody else writes it now
    private.remove(where.socket)
    return Claim(store_url, where, fd)


# -- reading --------------------------------------------------------------------------------------


def _parse(data: bytes) -> ServerInfo | None:
    try:
        raw = json.loads(data)
        return ServerInfo(
            pid=int(raw["pid"]),
            started=int(raw["started"]),
            cmdline=[str(part) for part in raw["cmdline"]],
            token=str(raw["token"]),
            socket=str(raw["socket"]),
            store=str(raw.get("store", "")),
            url=raw.get("url") or None,
            since=float(raw.get("since") or 0.0),
        )
    except (ValueError, KeyError, TypeError):
        return None


def read(store_url: str) -> ServerInfo | None:
    """The live server of ``store_url``, or None.

    None when no process holds the store's lock (a file left by a dead server is then
    removed), when the file is not this user's private file or does not parse, or when the
    process with its PID did not start when the file says or runs another command (a PID
    reused by an unrelated process)."""
    try:
        where = paths(store_url)
        if where is None:
            return None
        if not _lock_held(where.lock):
            _clean(where)
            return None
        data = private.read_file(where.info)
    except NotPrivate:
        return None
    info = _parse(data) if data is not None else None
    if info is None or info.socket != str(where.socket) or not is_same_process(info):
        return None
    return info


def _clean(where: Paths) -> None:
    """Remove what a dead server left, holding its lock so no new server is mid-start."""
    if not (os.path.lexists(where.info) or os.path.lexists(where.socket)):
        return
    try:
        fd = private.open_file(where.lock)
    except NotPrivate:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return  # a server took it meanwhile: what is there is its own
    try:
        private.remove(where.info)
        private.remove(where.socket)
    finally:
        os.close(fd)


def held(store_url: str) -> bool:
    """Whether a live ``memvault serve`` holds ``store_url`` (its lock is taken)."""
    with contextlib.suppress(NotPrivate):
        where = paths(store_url)
        return where is not None and _lock_held(where.lock)
    return False
