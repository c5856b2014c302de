"""Settings of a dream run as a Dagster resource (the CLI's ``--dry-run`` lands here)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from memvault.config import dream_gate
from memvault.dream.config import DreamConfig
from memvault.temporal import ConflictConfig


class DreamResource(dg.ConfigurableResource):
    """Dream settings. The dual gate (hours and sessions) is read by the dream sensor and by
    ``memvault dream``; the graph weights and the conflict threshold have their own defaults."""

    dry_run: bool = Field(
        default=False, description="Compute and log every decision, write nothing"
    )
    gate_hours: float = Field(
        default_factory=lambda: dream_gate()[0],
        description="Dual gate: hours since the last successful dream (MEMVAULT_DREAM_GATE_HOURS)",
    )
    gate_sessions: int = Field(
        default_factory=lambda: dream_gate()[1],
        description="Dual gate: new sessions since the last dream (MEMVAULT_DREAM_GATE_SESSIONS)",
    )
    orphan_grace_days: float = Field(default=7.0, description="Orphans younger than this are kept")
    confidence_threshold: float = Field(
        default=0.7, description="Judge verdicts below this escalate, then go to review"
    )
    conflict_batch_size: int = Field(default=200, description="Conflict actions per transaction")
    max_judged_pairs: int = Field(default=50, description="Pairs sent to the judge per dream")
    graph: dict = Field(
        default_factory=dict,
        description="Overrides of the edge settings (weights, connect_threshold, ...), see GraphConfig",
    )

    def conflict_config(self) -> ConflictConfig:
        return ConflictConfig(
            confidence_threshold=self.confidence_threshold,
            batch_size=self.conflict_batch_size,
            max_judged_pairs=self.max_judged_pairs,
        )

    def config(self) -> DreamConfig:
        return DreamConfig(
            gate_hours=self.gate_hours,
            gate_sessions=self.gate_sessions,
            orphan_grace_days=self.orphan_grace_days,
        )
