"""Run a long-lived command (``dg dev`` for ``memvault ui``) so that Ctrl-C stops all of it.

``dg dev`` starts a webserver, a daemon and a code server. Left to itself, a signal to the
``memvault`` process alone (a ``kill -INT``, a service manager, a process started in the
background with SIGINT ignored) never reached them, and killing ``dg`` orphaned them. Here
the child runs in its own process group; SIGINT, SIGTERM and SIGHUP to this process are
passed on to that whole group; when the group has not stopped after a grace period it gets
SIGTERM, then SIGKILL. Nothing of the group is left running when :func:`run_supervised`
returns.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from types import FrameType

from memvault.processes import process_alive

#: Signals passed on to the child's process group.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies waiting for a reaper count as
    gone: they hold no port and no file)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and process_alive(int(entry.name)):
            return True
    return False


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def _wait_group(pgid: int, child: subprocess.Popen[bytes], seconds: float) -> bool:
    """Wait up to ``seconds`` for the whole group to stop; True when it did."""
    deadline = time.monotonic() + seconds
    while True:
        child.poll()  # reap our own child, so it does not linger as a zombie
        if not _group_alive(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def stop_group(
    pgid: int, child: subprocess.Popen[bytes], *, grace: float, say: Callable[[str], None]
) -> None:
    """Let the group finish what a forwarded signal started, then SIGTERM, then SIGKILL."""
    if _wait_group(pgid, child, grace):
        return
    say(f"still running after {grace:.0f} s: sending SIGTERM to process group {pgid}")
    _signal_group(pgid, signal.SIGTERM)
    if _wait_group(pgid, child, 10):
        return
    say(f"still running: sending SIGKILL to process group {pgid}")
    _signal_group(pgid, signal.SIGKILL)
    _wait_group(pgid, child, 10)


def run_supervised(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    grace: float = 20.0,
    say: Callable[[str], None] = lambda _: None,
) -> int:
    """Run ``argv`` in its own process group until it exits or this process is signalled.

    Returns the child's exit code, or 128 + the signal's number when a signal stopped it
    (130 for Ctrl-C, as a shell reports it). A second signal skips the grace period.
    """
    received: list[int] = []
    group: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        if group:
            _signal_group(group[0], signum if len(received) == 1 else signal.SIGKILL)

    # Handlers first: the child then starts with default dispositions (exec resets handled
    # signals), even when this process was started with SIGINT ignored.
    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        child = subprocess.Popen(list(argv), env=dict(env) if env is not None else None,
                                 start_new_session=True)  # fmt: skip
        group.append(child.pid)  # a new session's leader: its pid is the group id
        if received:  # a signal that came while it started
            _signal_group(child.pid, received[0])
        while child.poll() is None and not received:
            time.sleep(0.2)
        if received:
            say(f"stopping (signal {signal.Signals(received[0]).name}) ...")
        stop_group(child.pid, child, grace=grace if received else 5.0, say=say)
        if received:
            return 128 + received[0]
        return int(child.returncode if child.returncode is not None else child.wait())
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
