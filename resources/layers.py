"""How fast preferences and skills fade, as a Dagster resource (the launchpad can change it)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from memvault.layers.attitudes import DecaySettings
from memvault.layers.skills import half_life_days


class LayersResource(dg.ConfigurableResource):
    """The decay of the attitude and skill layers; defaults come from the environment."""

    attitude_decay_per_day: float = Field(
        default_factory=lambda: DecaySettings.from_env().decay_per_day,
        description="λ: confidence = stated · exp(−λ · days since the last evidence) "
        "(MEMVAULT_ATTITUDE_DECAY_PER_DAY)",
    )
    attitude_binding: float = Field(
        default_factory=lambda: DecaySettings.from_env().binding_threshold,
        description="A preference binds while its confidence is at least this "
        "(MEMVAULT_ATTITUDE_BINDING)",
    )
    skill_half_life_days: float = Field(
        default_factory=half_life_days,
        description="Days in which a skill's experience halves without use "
        "(MEMVAULT_SKILL_HALF_LIFE_DAYS)",
    )

    def decay(self) -> DecaySettings:
        return DecaySettings(
            decay_per_day=self.attitude_decay_per_day, binding_threshold=self.attitude_binding
        )
