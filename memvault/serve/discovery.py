"""Where a running ``memvault serve`` tells the shell how to reach it: the discovery file.

A DuckDB file has one writer process, so while ``memvault serve`` holds a store the
shell's ``memvault recall`` cannot open it; instead it reads the server's discovery file
and asks the server. The file is ``<store file>.serve.json`` beside a DuckDB store, and
``memvault-serve-<hash of the URL>.json`` in a private directory of this user
(``$XDG_RUNTIME_DIR/memvault``, else ``<temp dir>/memvault-<uid>``) for PostgreSQL. It
holds the server's URL, its PID and its token (when one was set), and is readable by
this user only (mode 0600). A file whose PID is no longer running is stale and ignored.

Standard library only: the shell's fast path imports this and nothing heavier.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from memvault.processes import process_alive

#: What a discovery file's name ends with beside a DuckDB store.
SUFFIX = ".serve.json"


@dataclass(frozen=True)
class ServerInfo:
    """How to reach a running server: its HTTP base URL, PID, store and token."""

    url: str
    pid: int
    store: str
    token: str | None = None

    @property
    def alive(self) -> bool:
        return process_alive(self.pid)


def duckdb_path(store_url: str) -> Path | None:
    """The file of a ``duckdb:`` URL, absolute (None for another backend or ``:memory:``)."""
    if not store_url.lower().startswith("duckdb:"):
        return None
    path = store_url[len("duckdb://") :] if store_url.startswith("duckdb://") else store_url[7:]
    if path in ("", "/:memory:", ":memory:"):
        return None
    return Path(path).expanduser().absolute()


def _private_dir() -> Path:
    """This user's directory for discovery files of stores that are not files (0700)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = (
        Path(base) / "memvault" if base else Path(tempfile.gettempdir()) / f"memvault-{os.getuid()}"
    )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def discovery_path(store_url: str) -> Path | None:
    """Where the discovery file of ``store_url`` lives (None for an in-memory store)."""
    file = duckdb_path(store_url)
    if file is not None:
        return file.with_name(file.name + SUFFIX)
    if store_url.lower().startswith("duckdb:"):
        return None
    key = hashlib.sha256(store_url.encode("utf-8")).hexdigest()[:20]
    return _private_dir() / f"memvault-serve-{key}.json"


def write(store_url: str, info: ServerInfo) -> Path | None:
    """Write the discovery file (mode 0600, replaced atomically); returns its path."""
    path = discovery_path(store_url)
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(asdict(info), fh)
    os.replace(tmp, path)
    return path


def read(store_url: str) -> ServerInfo | None:
    """The live server of ``store_url``, if its discovery file names one.

    A file that is not this user's, is readable by others, does not parse, or names a PID
    that no longer runs is ignored (a stale one is removed)."""
    path = discovery_path(store_url)
    if path is None:
        return None
    try:
        status = path.stat()
        if status.st_uid != os.getuid() or status.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        info = ServerInfo(
            url=str(data["url"]),
            pid=int(data["pid"]),
            store=str(data.get("store", "")),
            token=data.get("token") or None,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not info.alive:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return info


def remove(store_url: str, pid: int | None = None) -> None:
    """Remove the discovery file, when it is this process's (``pid``) or anyone's."""
    path = discovery_path(store_url)
    if path is None:
        return
    pid = os.getpid() if pid is None else pid
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if int(data.get("pid", -1)) == pid:
            path.unlink()
    except (OSError, ValueError, TypeError, AttributeError):
        return
