"""Settings of a dream run as a Dagster resource (the CLI's ``--dry-run`` lands here)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from memvault.config import dream_gate
from memvault.dream.config import DreamConfig
from memvault.temporal import ConflictConfig
from resources.settings import setting


class DreamResource(dg.ConfigurableResource):
    """Dream settings. The dual gate (hours and sessions) is read by the dream sensor and by
    ``memvault dream``; defaults, bounds and descriptions are those of ``DreamConfig`` and
    ``ConflictConfig``, the graph weights those of ``GraphConfig``."""

    dry_run: bool = Field(
        default=False, description="Compute and log every decision, write nothing"
    )
    gate_hours: float = setting(
        DreamConfig,
        "gate_hours",
        default_factory=lambda: dream_gate()[0],
        description="Dual gate: hours since the last successful dream (MEMVAULT_DREAM_GATE_HOURS)",
    )
    gate_sessions: int = setting(
        DreamConfig,
        "gate_sessions",
        default_factory=lambda: dream_gate()[1],
        description="Dual gate: new sessions since the last dream (MEMVAULT_DREAM_GATE_SESSIONS)",
    )
    orphan_grace_days: float = setting(DreamConfig, "orphan_grace_days")
    full: bool = Field(
        default=False,
        description="Check every fact and refresh every edge this time (the weekly whole-store "
        "pass, on demand), not only the facts and pairs changed since the last dream; "
        "communities are then partitioned from scratch",
    )
    full_every_days: float = setting(DreamConfig, "full_every_days")
    confidence_threshold: float = setting(ConflictConfig, "confidence_threshold")
    conflict_batch_size: int = setting(ConflictConfig, "batch_size")
    conflict_apply_batch_size: int = setting(ConflictConfig, "apply_batch_size")
    max_judged_pairs: int = setting(ConflictConfig, "max_judged_pairs")
    graph: dict = Field(
        default_factory=dict,
        description="Overrides of the edge settings (weights, connect_threshold, ...), see GraphConfig",
    )

    def conflict_config(self) -> ConflictConfig:
        return ConflictConfig(
            confidence_threshold=self.confidence_threshold,
            batch_size=self.conflict_batch_size,
            apply_batch_size=self.conflict_apply_batch_size,
            max_judged_pairs=self.max_judged_pairs,
        )

    def config(self) -> DreamConfig:
        return DreamConfig(
            gate_hours=self.gate_hours,
            gate_sessions=self.gate_sessions,
            orphan_grace_days=self.orphan_grace_days,
            full_every_days=self.full_every_days,
        )
