"""Which process runs a run, and whether it is still there.

A run records its host, process id and a heartbeat (``runs.host``, ``pid``,
``heartbeat_at``). A run left ``running`` by a process that is gone — killed,
out of memory, a stopped container — is recognised on the next start and
marked failed, instead of blocking or confusing what comes after it.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import socket

from memvault.processes import process_alive

#: This machine, as runs record it.
HOST = socket.gethostname()


def carrier_pid() -> int:
    """The process whose life is the run's: for a step that Dagster's multiprocess executor
    runs in a worker process, the run worker that started it; else this process."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getpid()


def stale_after() -> dt.timedelta:
    """A run with no sign of life for this long is abandoned (``MEMVAULT_RUN_STALE_HOURS``, 6)."""
    return dt.timedelta(hours=float(os.environ.get("MEMVAULT_RUN_STALE_HOURS") or 6))


def abandoned_because(
    host: str | None, pid: int | None, heartbeat: dt.datetime | None, now: dt.datetime
) -> str | None:
    """Why a ``running`` run is abandoned, or None while it may still be alive."""
    if host == HOST and pid is not None and not process_alive(pid):
        return f"its process {pid} on {host} is gone (killed or crashed)"
    if heartbeat is not None and now - heartbeat > stale_after():
        return f"no sign of life since {heartbeat:%Y-%m-%d %H:%M} UTC (MEMVAULT_RUN_STALE_HOURS)"
    return None
