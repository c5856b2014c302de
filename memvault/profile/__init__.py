"""The interest profile (P): daily snapshots, trailing interest windows, the diary, knowledge gaps.

Every day is computed from what the store knew at the end of that day in store
time (rows' ``created_at`` / ``expired_at``), never from what it learned later,
so a day backfilled today reads the same as the day computed that night.
"""

from memvault.profile.diary import DIARY, write_diary
from memvault.profile.gaps import GapReport, refresh_gaps
from memvault.profile.interest import WINDOWS, write_interest
from memvault.profile.settings import ProfileSettings, day_bounds, day_range
from memvault.profile.snapshot import compute_snapshots, write_snapshots

__all__ = [
    "DIARY",
    "WINDOWS",
    "GapReport",
    "ProfileSettings",
    "compute_snapshots",
    "day_bounds",
    "day_range",
    "refresh_gaps",
    "write_diary",
    "write_interest",
    "write_snapshots",
]
