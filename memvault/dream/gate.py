"""The dual gate (D6): dream only when more than 24 h passed AND at least 5 sessions arrived.

Pure logic, shared by the sensor (which reads its inputs from the Dagster
instance, never from the store file) and by ``memvault dream`` (which reads
them from the store).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from memvault.dream.config import DreamConfig


@dataclass(frozen=True)
class GateDecision:
    """Whether to dream, and in words which gate held (shown as the sensor's SkipReason)."""

    run: bool
    reason: str
    hours_since: float | None
    sessions_since: int


def evaluate_gate(
    now: dt.datetime,
    last_dream_at: dt.datetime | None,
    sessions_since: int,
    config: DreamConfig | None = None,
) -> GateDecision:
    """Both gates must open; the reason names every gate that held."""
    config = config or DreamConfig()
    hours = None if last_dream_at is None else (now - last_dream_at).total_seconds() / 3600
    held: list[str] = []
    if hours is not None and hours <= config.gate_hours:
        held.append(
            f"time gate: last successful dream {hours:.1f} h ago (needs > {config.gate_hours:g} h)"
        )
    if sessions_since < config.gate_sessions:
        held.append(
            f"session gate: {sessions_since} new session(s) since the last dream "
            f"(needs >= {config.gate_sessions})"
        )
    if held:
        return GateDecision(False, "; ".join(held), hours, sessions_since)
    since = "never dreamed" if hours is None else f"{hours:.1f} h since the last dream"
    return GateDecision(True, f"{since}, {sessions_since} new sessions", hours, sessions_since)
