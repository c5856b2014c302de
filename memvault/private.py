"""This user's private directories and the files in them, safe from other local users.

Another local user is an attacker: they can create ``/tmp/memvault-<uid>`` before we do,
plant a symlink where we are about to write, or take a PID we left behind. So a
directory memvault keeps secrets or sockets in is used only when it is this user's own,
mode 0700 and no symlink (else :class:`NotPrivate`, naming the path and what is wrong),
and the files in it are created with ``O_EXCL | O_NOFOLLOW`` under a temporary name and
renamed into place, and read with ``O_NOFOLLOW`` and an owner and mode check.

* :func:`runtime_dir`: sockets, locks and discovery files of running processes
  (``$XDG_RUNTIME_DIR/memvault``, else ``<temp dir>/memvault-<uid>``).
* :func:`state_dir`: what must outlive a reboot (``$XDG_STATE_HOME/memvault``, else
  ``~/.local/state/memvault``).

Standard library only: the shell's fast path to a running server imports this.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from pathlib import Path

from memvault.errors import MemvaultError

#: The most a private file may hold when read back (discovery files, tokens).
MAX_READ = 1 << 20


class NotPrivate(MemvaultError):
    """A directory or file that should be this user's alone is not (or is a symlink)."""


def runtime_dir() -> Path:
    """This user's directory for running processes' sockets, locks and discovery files."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_absolute():
        return private_dir(Path(base) / "memvault")
    return private_dir(Path(tempfile.gettempdir()) / f"memvault-{os.getuid()}")


def state_dir() -> Path:
    """This user's directory for state that outlives a process and a reboot."""
    base = os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return private_dir(root / "memvault")


def private_dir(path: Path) -> Path:
    """``path`` created (mode 0700) if missing, and checked to be this user's alone."""
    path = Path(os.path.abspath(path))
    _make_dirs(path)
    check_dir(path)
    return path


def _make_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents, each 0700 (XDG asks that of a state home)."""
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue  # made meanwhile (another process of ours, or not: checked next)
        os.chmod(folder, 0o700, follow_symlinks=False)  # whatever the umask took away


def check_dir(path: Path) -> None:
    """Refuse ``path`` unless it is a directory (no symlink) owned by this user, mode 0700,
    in a parent nobody else can rename it out of."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise NotPrivate(f"{path} does not exist") from None
    uid = os.getuid()
    if stat.S_ISLNK(info.st_mode):
        raise NotPrivate(f"{path} is a symlink, not a directory of yours; remove it")
    if not stat.S_ISDIR(info.st_mode):
        raise NotPrivate(f"{path} is not a directory; remove it")
    if info.st_uid != uid:
        raise NotPrivate(
            f"{path} belongs to uid {info.st_uid}, not to you (uid {uid}): another user may "
            "have made it to read or plant files; remove it (or set XDG_RUNTIME_DIR)"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        raise NotPrivate(
            f"{path} has mode {stat.S_IMODE(info.st_mode):04o}, not 0700: others may read or "
            f"change what is in it; `chmod 700 {path}` once you have checked it"
        )
    parent = os.stat(path.parent)
    open_to_others = parent.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if parent.st_uid not in (0, uid) or (open_to_others and not parent.st_mode & stat.S_ISVTX):
        raise NotPrivate(
            f"{path.parent} (holding {path.name}) can be changed by another user, who could "
            "swap the directory; use a parent only you (or root) can write to"
        )


def write_file(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write ``path`` (mode 0600) in a private directory, replacing it atomically: a
    temporary file created with ``O_EXCL | O_NOFOLLOW`` (never a file someone planted),
    then renamed over ``path`` (which replaces a symlink, never follows it). ``durable``:
    fsync the file and the directory, so it survives a power cut."""
    check_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        sync_dir(path.parent)


def sync_dir(path: Path) -> None:
    """fsync a directory, so a file created or renamed in it survives a power cut."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_file(path: Path, *, limit: int = MAX_READ) -> bytes | None:
    """The bytes of a private file, None if it does not exist. Refused (:class:`NotPrivate`)
    when it is a symlink, not a regular file, not this user's, or readable by others."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise NotPrivate(f"{path} is a symlink; remove it") from None
        raise NotPrivate(f"{path} cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        check_file(path, os.fstat(fd))
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise NotPrivate(f"{path} is larger than {limit:,} bytes")
    return data


def check_file(path: Path | str, info: os.stat_result) -> None:
    """Refuse a file (its ``fstat``) that is not a regular file of this user, mode 0600 or
    stricter."""
    if not stat.S_ISREG(info.st_mode):
        raise NotPrivate(f"{path} is not a regular file")
    if info.st_uid != os.getuid():
        raise NotPrivate(f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()})")
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise NotPrivate(
            f"{path} has mode {stat.S_IMODE(info.st_mode):04o}: others may read it; "
            f"`chmod 600 {path}`"
        )


def open_file(path: Path, *, append: bool = False) -> int:
    """A descriptor (read-write; ``append``: writes go to the end) of a private file,
    created 0600 if missing: for lock files and logs, which stay where they are. Never
    follows a symlink; refuses a foreign file."""
    check_dir(path.parent)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_APPEND if append else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise NotPrivate(f"{path} is a symlink; remove it") from None
        raise NotPrivate(f"{path} cannot be opened: {exc.strerror or exc}") from None
    try:
        check_file(path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove(path: Path) -> None:
    """Remove a file of a private directory if it is there (a symlink is removed, not
    followed)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
