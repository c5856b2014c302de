"""Where the owner's days begin and end, and the profile's other settings.

The partition start and timezone are read when the code location loads: from
``MEMVAULT_PROFILE_START`` / ``MEMVAULT_TIMEZONE``, else from
``$DAGSTER_HOME/memvault-profile.json`` (``memvault demo`` writes its history's
first day there, so the UI's Partitions tab starts where the history does),
else from the defaults below.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memvault.errors import MemvaultError

#: The first daily partition when nothing else says so.
DEFAULT_START = dt.date(2025, 1, 1)
#: File in DAGSTER_HOME holding the profile's start and timezone (written by the demo).
SETTINGS_FILE = "memvault-profile.json"


def settings_file() -> Path:
    home = os.environ.get("DAGSTER_HOME") or str(Path.cwd() / ".dagster")
    return Path(home) / SETTINGS_FILE


@dataclass(frozen=True)
class ProfileSettings:
    """``start``: first partition; ``timezone``: the owner's (days run midnight to midnight
    there); ``top_n``: length of the top lists; ``batch_days``: partitions per backfill run;
    ``retention_days``: None keeps every snapshot, the only choice today: neither the dream nor
    anything else prunes snapshots (the pipeline never deletes)."""

    start: dt.date = DEFAULT_START
    timezone: str = "UTC"
    top_n: int = 10
    batch_days: int = 31
    retention_days: int | None = None

    def __post_init__(self) -> None:
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise MemvaultError(
                f"MEMVAULT_TIMEZONE={self.timezone!r} is not a timezone (e.g. Europe/Paris)"
            ) from None
        if self.top_n < 1 or self.batch_days < 1:
            raise MemvaultError("the profile's top_n and batch_days must be at least 1")

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ProfileSettings:
        env = dict(os.environ if environ is None else environ)
        saved: dict[str, str] = {}
        path = settings_file()
        if path.is_file():
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise MemvaultError(f"{path}: not a JSON object ({exc})") from None
        start = env.get("MEMVAULT_PROFILE_START") or saved.get("start")
        retention = (env.get("MEMVAULT_PROFILE_RETENTION_DAYS") or "keep").strip().lower()
        if retention != "keep":
            raise MemvaultError(
                f"MEMVAULT_PROFILE_RETENTION_DAYS={retention!r}: only 'keep' is supported; "
                "daily snapshots are never pruned"
            )
        try:
            return cls(
                start=dt.date.fromisoformat(start) if start else DEFAULT_START,
                timezone=env.get("MEMVAULT_TIMEZONE") or saved.get("timezone") or "UTC",
                top_n=int(env.get("MEMVAULT_PROFILE_TOP_N") or 10),
                batch_days=int(env.get("MEMVAULT_PROFILE_BATCH_DAYS") or 31),
                retention_days=None,
            )
        except ValueError as exc:
            raise MemvaultError(f"profile settings: {exc}") from None


def save_settings(start: dt.date, timezone: str) -> Path:
    """Record the partition start and timezone for the code location (the demo calls this)."""
    path = settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"start": start.isoformat(), "timezone": timezone}, indent=2) + "\n",
        encoding="utf-8",
    )
    return path


def day_bounds(day: dt.date, timezone: str) -> tuple[dt.datetime, dt.datetime]:
    """The day as [start, end) in naive UTC, the store's clock (DST days are 23 or 25 hours)."""
    zone = ZoneInfo(timezone)

    def utc(d: dt.date) -> dt.datetime:
        local = dt.datetime.combine(d, dt.time(), tzinfo=zone)
        return local.astimezone(dt.UTC).replace(tzinfo=None)

    return utc(day), utc(day + dt.timedelta(days=1))


def day_range(first: dt.date, last: dt.date) -> list[dt.date]:
    """Every day from ``first`` to ``last``, both included."""
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
