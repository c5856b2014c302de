"""Test hook: named pause points where a kill test stops a process deterministically.

Inert unless ``MEMVAULT_TEST_PAUSE_AT`` names the point (one environment lookup per call).
When it does, the process writes its pid to ``MEMVAULT_TEST_PAUSE_MARKER`` and sleeps
(``MEMVAULT_TEST_PAUSE_SECONDS``, default 120, then carries on), so the test waits for the
marker and sends SIGKILL at exactly that point. Not a user setting: never set it in production.

Points: ``ingest-written`` (an ingest's rows inserted, not committed), ``undo-restored`` (an
undo's rows restored, not committed), ``dream-consolidate`` (the consolidate stage's content
fixes committed, its conflict plan not yet applied), ``garden-<phase>`` (a garden phase ran on
the first store, its state not yet saved), ``recall-log-write`` (``memvault serve``'s writer
about to write a batch of answered recalls).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

VARIABLE = "MEMVAULT_TEST_PAUSE_AT"
MARKER = "MEMVAULT_TEST_PAUSE_MARKER"
SECONDS = "MEMVAULT_TEST_PAUSE_SECONDS"


def pause_point(name: str) -> None:
    """Pause here if a test asked for ``name`` (see the module docstring); else do nothing."""
    if os.environ.get(VARIABLE) != name:
        return
    marker = os.environ.get(MARKER)
    if marker:
        Path(marker).write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(float(os.environ.get(SECONDS) or 120))
