"""The ceremony's phases GD1–GD6, one module each (GD0 survey and GD7 report live in run.py)."""

from __future__ import annotations

from collections.abc import Callable

from memvault.gardener.phases.base import PhaseContext
from memvault.gardener.phases.decay import run_decay
from memvault.gardener.phases.dedup import run_dedup, run_dedup_approved
from memvault.gardener.phases.invalidate import run_invalidate, run_invalidate_approved
from memvault.gardener.phases.journal import run_journal
from memvault.gardener.phases.reconnect import run_reconnect
from memvault.gardener.phases.split import run_split, run_split_approved

PHASE_FUNCTIONS: dict[str, Callable[[PhaseContext], None]] = {
    "dedup": run_dedup,
    "decay": run_decay,
    "split": run_split,
    "invalidate": run_invalidate,
    "reconnect": run_reconnect,
    "journal": run_journal,
}

#: What a run that resumes past a phase still does there: execute approved proposals first.
APPROVED_ONLY: dict[str, Callable[[PhaseContext], None]] = {
    "dedup": run_dedup_approved,
    "split": run_split_approved,
    "invalidate": run_invalidate_approved,
}

__all__ = ["APPROVED_ONLY", "PHASE_FUNCTIONS", "PhaseContext"]
