"""The gardening report, rendered in exactly its fixed format, and parsed back.

::

    # Gardening report — <ISO timestamp>
    Stores tended: <store: capability summary, per store>
    Stats: <counts before → after, per store>
    Actions: merges N · decays N · splits N · invalidations N · reconnects N
    Destructive ops (mode: tend-and-propose | autonomous):
      - PROPOSED ARCHIVE <id> "<short preview>" — duplicate of <id>
      - EXECUTED MERGE <id> ← <id> — "<short preview>"
    Deferred (uncertain): <pairs the prompts declined to merge, one line each>
    Skipped: <phase> — <missing capability>
    Budget: <used>/<max> mutations · resume point: <store / cursor or "clean">

Several stores on one line are separated by `` | `` (Stores tended, Stats) or
``; `` (resume point). "Deferred" and "Destructive ops" list their entries on
indented ``  - `` lines (``none`` when empty); each skipped phase has its own
``Skipped:`` line (``Skipped: none`` when nothing was skipped).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

ACTION_NAMES: tuple[str, ...] = ("merges", "decays", "splits", "invalidations", "reconnects")
MODES: tuple[str, ...] = ("tend-and-propose", "autonomous")


def preview(text: str, limit: int = 60) -> str:
    """A one-line, quote-safe preview of a memory text."""
    flat = " ".join(text.split()).replace('"', "'")
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass
class OpLine:
    """One destructive operation: proposed or executed."""

    state: str  # PROPOSED | EXECUTED
    verb: str  # ARCHIVE, MERGE, INVALIDATE, EXPIRE, ...
    target: str
    source: str | None = None  # the survivor / the superseding fact (EXECUTED ... ← source)
    preview: str = ""
    why: str = ""

    def render(self) -> str:
        if self.state == "PROPOSED":
            return f'  - PROPOSED {self.verb} {self.target} "{self.preview}" — {self.why}'
        arrow = f" ← {self.source}" if self.source else ""
        return f'  - EXECUTED {self.verb} {self.target}{arrow} — "{self.preview}"'


_PROPOSED = re.compile(
    r'^  - PROPOSED (?P<verb>[A-Z-]+) (?P<target>\S+) "(?P<preview>.*)" — (?P<why>.*)$'
)
_EXECUTED = re.compile(
    r'^  - EXECUTED (?P<verb>[A-Z-]+) (?P<target>\S+)(?: ← (?P<source>\S+))? — "(?P<preview>.*)"$'
)


@dataclass
class StoreLine:
    name: str
    capabilities: str
    stats_before: dict[str, int] = field(default_factory=dict)
    stats_after: dict[str, int] = field(default_factory=dict)
    resume: str = "clean"


@dataclass
class GardenReport:
    """Everything the report says; :meth:`render` and :func:`parse_report` are inverses."""

    timestamp: str
    mode: str
    stores: list[StoreLine]
    actions: dict[str, int]
    ops: list[OpLine] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    mutations_used: int = 0
    mutations_max: int = 0

    @property
    def resume_point(self) -> str:
        pending = [f"{s.name} / {s.resume}" for s in self.stores if s.resume != "clean"]
        return "; ".join(pending) if pending else "clean"

    def render(self) -> str:
        stores = " | ".join(f"{s.name}: {s.capabilities}" for s in self.stores) or "none"
        stats = " | ".join(
            f"{s.name}: {_stats(s.stats_before, s.stats_after)}" for s in self.stores
        )
        lines = [
            f"# Gardening report — {self.timestamp}",
            f"Stores tended: {stores}",
            f"Stats: {stats or 'none'}",
            "Actions: " + " · ".join(f"{n} {self.actions.get(n, 0)}" for n in ACTION_NAMES),
            f"Destructive ops (mode: {self.mode}):",
        ]
        lines += [op.render() for op in self.ops] or ["  - none"]
        lines.append("Deferred (uncertain):" + ("" if self.deferred else " none"))
        lines += [f"  - {d}" for d in self.deferred]
        lines += [f"Skipped: {phase} — {why}" for phase, why in self.skipped] or ["Skipped: none"]
        lines.append(
            f"Budget: {self.mutations_used}/{self.mutations_max} mutations · "
            f"resume point: {self.resume_point}"
        )
        return "\n".join(lines) + "\n"


def _stats(before: Mapping[str, int], after: Mapping[str, int]) -> str:
    names = list(dict.fromkeys([*before, *after]))
    if not names:
        return "no stats capability"
    return ", ".join(f"{n} {before.get(n, '?')} → {after.get(n, '?')}" for n in names)


class ReportFormatError(ValueError):
    """The text is not a gardening report in its fixed format."""


def _expect(lines: list[str], n: int, prefix: str) -> str:
    if n >= len(lines) or not lines[n].startswith(prefix):
        got = lines[n] if n < len(lines) else "<end of report>"
        raise ReportFormatError(f"line {n + 1}: expected {prefix!r}, got {got!r}")
    return lines[n][len(prefix) :]


def _parse_stats(text: str) -> tuple[dict[str, int], dict[str, int]]:
    before: dict[str, int] = {}
    after: dict[str, int] = {}
    if text == "no stats capability":
        return before, after
    for part in text.split(", "):
        m = re.fullmatch(r"(\w+) (\S+) → (\S+)", part)
        if not m:
            raise ReportFormatError(f"bad stats entry {part!r}")
        if m[2] != "?":
            before[m[1]] = int(m[2])
        if m[3] != "?":
            after[m[1]] = int(m[3])
    return before, after


def parse_report(text: str) -> GardenReport:
    """Read a rendered report back (a test and the next run's "since when" use it)."""
    lines = text.rstrip("\n").split("\n")
    timestamp = _expect(lines, 0, "# Gardening report — ")
    stores = _parse_stores(_expect(lines, 1, "Stores tended: "), _expect(lines, 2, "Stats: "))
    actions = _parse_actions(_expect(lines, 3, "Actions: "))
    mode = _expect(lines, 4, "Destructive ops (mode: ").removesuffix("):")
    if mode not in MODES:
        raise ReportFormatError(f"unknown mode {mode!r}")
    ops, n = _parse_ops(lines, 5)
    deferred, n = _parse_deferred(lines, n)
    skipped, n = _parse_skipped(lines, n)
    used, most = _parse_budget(lines, n, stores)
    return GardenReport(
        timestamp=timestamp,
        mode=mode,
        stores=stores,
        actions=actions,
        ops=ops,
        deferred=deferred,
        skipped=skipped,
        mutations_used=used,
        mutations_max=most,
    )


def _parse_stores(stores_text: str, stats_text: str) -> list[StoreLine]:
    """The stores tended with their capabilities, and their stats before and after."""
    stores: list[StoreLine] = []
    if stores_text != "none":
        for part in stores_text.split(" | "):
            name, _, caps = part.partition(": ")
            stores.append(StoreLine(name, caps))
    if stats_text != "none":
        for store, part in zip(stores, stats_text.split(" | "), strict=True):
            name, _, counts = part.partition(": ")
            if name != store.name:
                raise ReportFormatError(f"stats name {name!r} does not match store {store.name!r}")
            store.stats_before, store.stats_after = _parse_stats(counts)
    return stores


def _parse_actions(text: str) -> dict[str, int]:
    actions = {}
    for part in text.split(" · "):
        name, _, count = part.partition(" ")
        if name not in ACTION_NAMES:
            raise ReportFormatError(f"unknown action {name!r}")
        actions[name] = int(count)
    return actions


def _parse_ops(lines: list[str], n: int) -> tuple[list[OpLine], int]:
    """The destructive-op lines from line ``n``; the line after them."""
    ops: list[OpLine] = []
    while n < len(lines) and lines[n].startswith("  - "):
        line = lines[n]
        n += 1
        if line == "  - none":
            continue
        if m := _PROPOSED.match(line):
            ops.append(OpLine("PROPOSED", m["verb"], m["target"], None, m["preview"], m["why"]))
        elif m := _EXECUTED.match(line):
            ops.append(OpLine("EXECUTED", m["verb"], m["target"], m["source"], m["preview"]))
        else:
            raise ReportFormatError(f"line {n}: not a destructive-op line: {line!r}")
    return ops, n


def _parse_deferred(lines: list[str], n: int) -> tuple[list[str], int]:
    """The deferred (uncertain) cases from line ``n``; the line after them."""
    head = _expect(lines, n, "Deferred (uncertain):")
    n += 1
    deferred: list[str] = []
    if head.strip() != "none":
        while n < len(lines) and lines[n].startswith("  - "):
            deferred.append(lines[n][4:])
            n += 1
    return deferred, n


def _parse_skipped(lines: list[str], n: int) -> tuple[list[tuple[str, str]], int]:
    """The skipped phases with their reasons from line ``n``; the line after them."""
    skipped: list[tuple[str, str]] = []
    while n < len(lines) and lines[n].startswith("Skipped: "):
        body = lines[n][len("Skipped: ") :]
        n += 1
        if body == "none":
            continue
        phase, sep, why = body.partition(" — ")
        if not sep:
            raise ReportFormatError(f"line {n}: skipped line without a reason: {body!r}")
        skipped.append((phase, why))
    return skipped, n


def _parse_budget(lines: list[str], n: int, stores: list[StoreLine]) -> tuple[int, int]:
    """The last line: mutations used and allowed; each store's resume point is set."""
    budget = _expect(lines, n, "Budget: ")
    m = re.fullmatch(r"(\d+)/(\d+) mutations · resume point: (.+)", budget)
    if not m:
        raise ReportFormatError(f"bad budget line {budget!r}")
    if n + 1 != len(lines):
        raise ReportFormatError(f"unexpected text after the budget line: {lines[n + 1]!r}")
    if m[3] != "clean":
        for part in m[3].split("; "):
            name, _, cursor = part.partition(" / ")
            for store in stores:
                if store.name == name:
                    store.resume = cursor
    return int(m[1]), int(m[2])
