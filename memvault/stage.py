"""The contract between a stage of a track and whatever runs it (Dagster, the CLI, a test).

A track (the dream's graph, the gardener, the lint, ...) is an object that holds what its
stages read: the open store and the track's settings. Each of its stages is a :class:`Stage`:
a name (the asset it materializes), the tables it writes, and a call that does the work and
returns a :class:`Report`, whose ``metadata()`` is the stage's figures. Whoever runs the
stages times them and shows the figures; the stage itself knows nothing of Dagster.

A stage that fails after saving what lets a retry continue raises :class:`StageFailed` with
its figures so far. A stage that needs a ``runs`` row of its own takes it from
:func:`tracked_run` (:mod:`memvault.store.tracked`), which never leaves the row open: it
ends ``succeeded`` or ``failed``. A run that later steps carry on (a garden run, a dream) is
begun with :func:`begun_run`: failed if its beginning raises, left to those steps otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from memvault.judge.base import Judge
from memvault.store.tracked import RunRow as RunRow
from memvault.store.tracked import begun_run as begun_run
from memvault.store.tracked import tracked_run as tracked_run


class Report(Protocol):
    """What a stage returns: its figures, flat numbers and words, small tables as mappings
    or lists of records, times as datetimes, text to render as :class:`Markdown`."""

    def metadata(self) -> Mapping[str, Any]: ...


class Markdown(str):
    """A figure that is text to render (a report), not a word to show as it is."""


#: How grave a failed check is: an ``error`` of a blocking check stops what follows, a
#: ``warn`` is shown and stops nothing.
Severity = Literal["error", "warn"]


@dataclass(frozen=True)
class Verdict:
    """What a check found, in plain terms whoever runs it can show: whether it passed, how
    grave a failure is, a sentence about this evaluation (if any), and the figures that say
    why (as a stage's report: numbers, words, small tables)."""

    passed: bool
    figures: Mapping[str, Any] = field(default_factory=dict)
    severity: Severity = "error"
    description: str | None = None


@dataclass(frozen=True)
class Figures:
    """A report that is only its figures (a stage whose result is a mapping)."""

    values: Mapping[str, Any]

    def metadata(self) -> dict[str, Any]:
        return dict(self.values)


class StageFailed(Exception):
    """A stage failed after saving what lets a retry continue; ``figures`` says how far it
    got (shown on the failure)."""

    def __init__(self, message: str, figures: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.figures: dict[str, Any] = dict(figures or {})


@dataclass(frozen=True)
class Stage:
    """One stage of a track: ``run`` reads the store and the settings its track holds, writes
    the store's tables named in ``writes`` (audited), and returns the stage's report."""

    name: str
    run: Callable[[], Report]
    writes: tuple[str, ...] = ()


class Track(Protocol):
    """A track's stages, in the order they run, sharing one run of the store."""

    def stages(self) -> list[Stage]: ...


def judge_figures(judge: Judge, before: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Flat counters of the judge's work in a stage (since ``before``, a ``stats.as_dict()``)."""
    now = judge.stats.as_dict()
    used = {k: v - (before or {}).get(k, 0) for k, v in now.items()}
    return {
        "judge": judge.kind,
        "llm_calls": used["calls"],
        "llm_escalations": used["escalations"],
        "llm_tokens": used["prompt_tokens"] + used["completion_tokens"],
        "llm_cache_hits": used["cache_hits"],
        "heuristic_answers": used["heuristic_answers"],
    }


@dataclass
class Timer:
    """Seconds since it started, rounded to the millisecond (what a stage's figures show)."""

    started: float = field(default_factory=time.monotonic)

    @property
    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 3)


def timed(stage: Stage) -> tuple[Report, float]:
    """Run ``stage``; its report and the seconds it took."""
    timer = Timer()
    report = stage.run()
    return report, timer.seconds
