"""memvault reads the time from one clock (memvault.clock), so a test or a replay that shifts it
shifts every process of a run; a wall-clock read elsewhere would make results depend on the day."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memvault", "memvault_demo", "assets", "resources", "pipelines")
#: Reads of the machine's clock: datetime.now/utcnow, date.today, time.time.
WALL_CLOCK = re.compile(r"\b(?:datetime|date)\.(?:now|utcnow|today)\(|\btime\.time\(\)")
#: The one place allowed to read it, and the mark that says why another line must.
CLOCK = ROOT / "memvault" / "clock.py"
MARK = "# wall clock:"


def test_only_the_clock_reads_the_wall_clock() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != CLOCK
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if WALL_CLOCK.search(line) and MARK not in line
    ]
    assert not offenders, "read memvault.clock instead (or mark the line '# wall clock: why'):\n" + "\n".join(offenders)  # fmt: skip


def test_the_guard_sees_a_wall_clock_read() -> None:
    assert WALL_CLOCK.search("stamp = dt.datetime.now(dt.UTC)")
    assert WALL_CLOCK.search("today = date.today()")
    assert WALL_CLOCK.search("t0 = time.time()")
    assert not WALL_CLOCK.search("now = clock.utcnow()")
