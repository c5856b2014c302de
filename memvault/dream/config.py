"""Dream settings: the dual gate (D6) and what prune may touch; graph and conflict settings nest here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DreamConfig(BaseModel):
    """Tunables of one dream; the defaults are design.md's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gate_hours: float = Field(
        default=24.0, gt=0, description="Minimum hours since the last successful dream"
    )
    gate_sessions: int = Field(
        default=5, ge=1, description="Minimum new sessions since the last dream"
    )
    orphan_grace_days: float = Field(
        default=7.0,
        ge=0,
        description="An orphan entity younger than this is left alone (memories settle)",
    )
    max_insights: int = Field(default=5, ge=0, description="Insights written by one reflect stage")
    full_every_days: float = Field(
        default=7.0,
        ge=0,
        description="The dream's checks read every fact when no dream did in this many days "
        "(0: every dream); in between, the facts changed since the last dream's checks",
    )
