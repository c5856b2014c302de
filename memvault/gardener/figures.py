"""What a garden run shows an orchestrator: its counters, its budget, the survey, a phase.

Flat numbers an orchestrator can plot over runs, and records (lists of dicts) for the detail;
the orchestrator decides how to render them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memvault.gardener.state import phase_label

if TYPE_CHECKING:
    from memvault.gardener.run import Gardener

#: The action counters of a garden run, always present (0 when nothing was done).
ACTIONS = ("merges", "decays", "splits", "invalidations", "reconnects")


def run_figures(gardener: Gardener) -> dict[str, Any]:
    """The run so far: its actions, its budget, where it would resume, the judge's work."""
    state, budget = gardener.state, gardener.budget
    return {
        "garden_run_id": state.run_id,
        "mode": state.mode,
        **{action: int(state.actions.get(action, 0)) for action in ACTIONS},
        # a model's merged text that said more or less than its records, the records' kept
        "merge_texts_refused": int(state.actions.get("merge_texts_refused", 0)),
        "proposals": state.proposals,
        "mutations_used": budget.mutations,
        "mutations_max": budget.max_mutations,
        "judgments_used": budget.judgments,
        "judgments_max": budget.max_judgments,
        "resume_point": "; ".join(f"{n}: {s.resume_text()}" for n, s in state.stores.items()),
        "phases_skipped": len(state.skipped),
        "errors": len(state.errors),
        "judge": str(state.judge.get("kind", "")),
        "llm_calls": int(state.judge.get("calls", 0)),
        "llm_tokens": int(state.judge.get("prompt_tokens", 0))
        + int(state.judge.get("completion_tokens", 0)),
        "llm_cache_hits": int(state.judge.get("cache_hits", 0)),
        "skipped": [{"phase": phase_label(p), "why": w} for p, w in state.skipped],
        "error_detail": [{"error": e} for e in state.errors],
    }


def survey_figures(gardener: Gardener) -> dict[str, Any]:
    """What the survey found per store: capabilities, the snapshot taken, the counts before."""
    runs = gardener.state.stores
    return {
        "stores": len(runs),
        "snapshots_taken": sum(1 for s in runs.values() if s.backup),
        "capabilities": [{"store": n, "capabilities": s.capabilities} for n, s in runs.items()],
        "snapshots": [{"store": n, "snapshot": s.backup or "none"} for n, s in runs.items()],
        "stats_before": [{"store": n, **s.stats_before} for n, s in runs.items() if s.stats_before],
    }


def phase_figures(gardener: Gardener, phase: str, before: Mapping[str, int]) -> dict[str, Any]:
    """One phase: the actions it took (the run's counters since ``before``)."""
    done = {
        k: v - before.get(k, 0) for k, v in gardener.state.actions.items() if v != before.get(k, 0)
    }
    return {
        "phase": phase,
        "phase_actions": sum(done.values()),
        "phase_detail": [{"action": k, "count": n} for k, n in done.items()],
    }
