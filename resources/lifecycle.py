"""The lifecycle's settings as a Dagster resource: the effective-age thresholds of the tiers."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from memvault.lifecycle.tiering import TierConfig
from resources.settings import setting


def _default(name: str) -> float:
    return float(getattr(TierConfig.from_env(), name))


class LifecycleResource(dg.ConfigurableResource):
    """Thresholds in days of effective age (age ÷ what recalls and feedback earned the block):
    hot below ``hot_days``, warm below ``warm_days``, cold below ``cold_days``, frozen beyond."""

    hot_days: float = Field(
        default_factory=lambda: _default("hot_days"),
        description="Hot below this effective age in days (MEMVAULT_TIER_HOT_DAYS)",
    )
    warm_days: float = Field(
        default_factory=lambda: _default("warm_days"),
        description="Warm below this; older blocks get a ≤400-character digest "
        "(MEMVAULT_TIER_WARM_DAYS)",
    )
    cold_days: float = Field(
        default_factory=lambda: _default("cold_days"),
        description="Cold below this; older blocks keep a one-line headline "
        "(MEMVAULT_TIER_COLD_DAYS)",
    )
    dry_run: bool = Field(default=False, description="Plan and report, write nothing, ask nothing")
    batch_size: int = setting(
        TierConfig, "batch_size", ge=1, description="Tier changes per audited transaction"
    )
    blocks_per_call: int = setting(
        TierConfig, "blocks_per_call", ge=1, description="Blocks per digest request to the LLM"
    )

    def config(self) -> TierConfig:
        return TierConfig(
            hot_days=self.hot_days,
            warm_days=self.warm_days,
            cold_days=self.cold_days,
            batch_size=self.batch_size,
            blocks_per_call=self.blocks_per_call,
        )
