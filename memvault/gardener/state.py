"""The ceremony's settings and its state, JSON-able so phase assets can pass it through the store."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from memvault.gardener.budget import DEFAULT_MAX_JUDGMENTS, DEFAULT_MAX_MUTATIONS

Mode = Literal["tend-and-propose", "autonomous"]
MODES: tuple[str, ...] = ("tend-and-propose", "autonomous")

#: The tending phases in ceremony order (the survey and the report bracket them).
PHASES: tuple[str, ...] = ("dedup", "decay", "split", "invalidate", "reconnect", "journal")
#: What a reader sees for a phase: the report, skip lines, errors and asset metadata.
PHASE_LABELS: dict[str, str] = {
    "survey": "survey the store",
    "dedup": "merge duplicates",
    "decay": "decay unused memories",
    "split": "split bloated memories",
    "invalidate": "invalidate stale facts",
    "reconnect": "reconnect orphans",
    "journal": "write the journal",
    "report": "write the report",
}
_CODED_LABEL = re.compile(r"GD\d (\w+)")
#: Targets remembered per action for the journal (the count goes on past it).
LEARNED_CAP = 50
#: Items remembered by how many duplicate candidate pairs they are in.
CROWDED_CAP = 100


def phase_label(phase: str) -> str:
    """The plain name of a phase, also for a skip recorded by an older run ("GD5 reconnect")."""
    if m := _CODED_LABEL.fullmatch(phase):
        phase = m[1]
    return PHASE_LABELS.get(phase, phase)


def grounded_predicates() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(functional and volatile, functional and stable) predicates of the grounding definitions
    (``memvault/temporal/predicates.yaml``), the same ones the dream's conflict resolution reads.
    """
    from memvault.temporal.grounding import Grounding

    defs = Grounding.load().predicates.values()
    volatile = tuple(sorted(p.name for p in defs if p.is_functional and p.is_volatile))
    stable = tuple(sorted(p.name for p in defs if p.is_functional and not p.is_volatile))
    return volatile, stable


@dataclass
class GardenConfig:
    """Thresholds of the ceremony (the defaults are those of docs/design.md)."""

    mode: Mode = "tend-and-propose"
    max_mutations: int = DEFAULT_MAX_MUTATIONS
    max_judgments: int = DEFAULT_MAX_JUDGMENTS
    similarity: float = 0.90
    first_run_items: int = 200
    window_page: int = 5000
    confident: float = 0.8  # below this a verdict is uncertain: proposed, never executed
    shared_core: float = 0.85
    decay_after_days: int = 30
    decay_step: float = 0.1
    importance_min: float = 0.1
    expire_below: float = 0.2  # importance at or below this gets an expiry (not a deletion)
    expire_after_days: int = 90
    bloat_chars: int = 750
    max_splits: int = 5
    max_reconnects: int = 10
    #: Superseded by rule (GD4): one value at a time, expected to change.
    functional_predicates: tuple[str, ...] = field(default_factory=lambda: grounded_predicates()[0])
    #: One value at a time but not expected to change: a change is proposed, never executed.
    stable_predicates: tuple[str, ...] = field(default_factory=lambda: grounded_predicates()[1])
    backup: bool = True
    #: Cadence (GD10): a store with fewer new or changed memory items than this since the last
    #: garden run is quiet, and its nightly run waits (0: every night is due).
    quiet_items: int = 5
    #: A quiet store is still gardened once this many days passed since its last run.
    quiet_days: int = 7

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.max_mutations < 0 or self.max_judgments < 0:
            raise ValueError("budgets cannot be negative")
        if self.quiet_items < 0 or self.quiet_days < 1:
            raise ValueError("quiet_items cannot be negative and quiet_days must be at least 1")
        self.functional_predicates = tuple(self.functional_predicates)
        self.stable_predicates = tuple(self.stable_predicates)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GardenConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class StoreRun:
    """One tended store within a run."""

    name: str
    capabilities: str = ""
    survey: dict[str, Any] = field(default_factory=dict)
    stats_before: dict[str, int] = field(default_factory=dict)
    stats_after: dict[str, int] = field(default_factory=dict)
    first_run: bool = True
    window_start: str | None = None  # ISO; None on a first run (the recent ~200 items instead)
    window_end: str = ""
    since_source: str = "first run"
    start_phase: str = PHASES[0]
    start_cursor: dict[str, Any] = field(default_factory=dict)
    cursor: dict[str, Any] = field(default_factory=dict)  # the current phase's position
    stop: dict[str, Any] | None = None  # {"phase", "cursor", "reason"} when the run stopped early
    #: A phase that reached its per-run cap with work left ({"phase", "cursor", "reason"}); the
    #: later phases still ran, and the next run resumes there.
    pending: dict[str, Any] | None = None
    done: list[str] = field(default_factory=list)
    judged: list[str] = field(default_factory=list)  # dedup pairs judged in this window
    settled: dict[str, list[str]] = field(default_factory=dict)  # left alone on purpose, per phase
    proposing_only: list[str] = field(default_factory=list)  # GD-S3: fixes switched to proposing
    blocked: str | None = None  # why this store gets no mutation at all (failed backup)
    backup: str | None = None
    splits_done: int = 0
    reconnects_done: int = 0
    #: What the journal tells of this run here: ``changed`` / ``proposed`` (action → count and
    #: the first targets with a short label), ``window_items``, ``candidate_pairs``,
    #: ``kept_apart`` and ``crowded`` (item → the duplicate candidate pairs it is in).
    learned: dict[str, Any] = field(default_factory=dict)

    @property
    def resume(self) -> dict[str, Any] | None:
        """Where the next run starts: where this one stopped, else a capped phase, else None."""
        return self.stop or self.pending

    def learn(self, kind: str, action: str, target: str, label: str | None = None) -> None:
        """Remember a change (``kind`` "changed") or a proposal ("proposed") for the journal."""
        entry = self.learned.setdefault(kind, {}).setdefault(action, {"n": 0, "items": []})
        entry["n"] += 1
        if len(entry["items"]) < LEARNED_CAP:
            entry["items"].append([target, label])

    def tally(self, name: str, n: int = 1) -> None:
        """Add to one of the journal's counters (``window_items``, ``kept_apart`` ...)."""
        self.learned[name] = int(self.learned.get(name, 0)) + n

    def crowd(self, pairs: list[tuple[str, str]]) -> None:
        """Count the duplicate candidate pairs each item is in (the most crowded kept)."""
        counts: dict[str, int] = self.learned.setdefault("crowded", {})
        for a, b in pairs:
            counts[a] = counts.get(a, 0) + 1
            counts[b] = counts.get(b, 0) + 1
        if len(counts) > CROWDED_CAP:
            kept = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:CROWDED_CAP]
            self.learned["crowded"] = dict(kept)

    def resume_text(self) -> str:
        resume = self.resume
        if resume is None:
            return "clean"
        cursor = resume.get("cursor") or {}
        after = cursor.get("after")
        text = f"{resume['phase']}" + (f" after {after}" if after else "")
        return text if self.stop else f"{text} ({resume['reason']})"


@dataclass
class RunState:
    """Everything a run has done so far; saved in ``runs.stats`` after every phase."""

    run_id: str
    mode: str
    started_at: str
    config: dict[str, Any]
    budget: dict[str, int]
    stores: dict[str, StoreRun] = field(default_factory=dict)
    actions: dict[str, int] = field(default_factory=dict)
    ops: list[dict[str, Any]] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    skipped: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    expected_audit: int = 0  # audit rows this run should have written (counted at each write)
    changes: int = 0  # changes made to tended stores
    proposals: int = 0  # new proposals queued
    errors: list[str] = field(default_factory=list)
    judge: dict[str, Any] = field(default_factory=dict)
    phase_metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Whether the night's run was due on these stores, and why (see ``cadence.Cadence``).
    cadence: dict[str, Any] | None = None
    report_id: str | None = None
    report_text: str | None = None
    report_read_back: bool | None = None
    outcome: dict[str, Any] | None = None
    finished: bool = False

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        data = dict(data)
        data["stores"] = {k: StoreRun(**v) for k, v in data.get("stores", {}).items()}
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def skip(self, phase: str, why: str) -> None:
        entry = [phase_label(phase), why]
        if entry not in self.skipped:
            self.skipped.append(entry)

    def count(self, action: str, n: int = 1) -> None:
        self.actions[action] = self.actions.get(action, 0) + n
