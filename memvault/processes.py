"""Is a process still running? One answer for the run-liveness checks and the serve discovery
file; kept free of heavy imports, since the shell's fast path to a running server reads it."""

from __future__ import annotations

import os
from pathlib import Path


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (a zombie counts as gone; one we
    may not signal counts as running)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
