"""The one clock memvault reads for "now", so every process of a run agrees on the day.

Ages, decay, tiers, gates, the profile's last complete day and the check that a record is
not from the future all read :func:`utcnow`. ``MEMVAULT_CLOCK_SHIFT`` (seconds, may be
negative, default 0) moves that clock away from the wall clock while it keeps running: the
tests set it so that a history generated for a fixed day is seen from the same moment on
whatever day they run, and every process they start (a Dagster step, a CLI call, a server)
inherits it. Durations are measured with :func:`time.monotonic`, never with this clock.
"""

from __future__ import annotations

import datetime as dt
import os

VARIABLE = "MEMVAULT_CLOCK_SHIFT"

_parsed: tuple[str, dt.timedelta] = ("", dt.timedelta(0))


def shift() -> dt.timedelta:
    """How far memvault's clock is from the wall clock (``MEMVAULT_CLOCK_SHIFT``)."""
    global _parsed
    raw = os.environ.get(VARIABLE, "")
    if raw != _parsed[0]:
        try:
            seconds = float(raw) if raw.strip() else 0.0
        except ValueError:
            raise ValueError(f"{VARIABLE}={raw!r}: give a number of seconds") from None
        _parsed = (raw, dt.timedelta(seconds=seconds))
    return _parsed[1]


def utcnow() -> dt.datetime:
    """Now, in naive UTC (the store's spelling of time)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None) + shift()


def now(tz: dt.tzinfo = dt.UTC) -> dt.datetime:
    """Now, aware, in ``tz``."""
    return (dt.datetime.now(dt.UTC) + shift()).astimezone(tz)


def shift_to(moment: dt.datetime) -> float:
    """The ``MEMVAULT_CLOCK_SHIFT`` that makes the clock read ``moment`` (naive: UTC) now."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - dt.datetime.now(dt.UTC)).total_seconds()
