"""The lint's knobs as a Dagster resource (the launchpad can change them)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from memvault.lint.run import ScopeSettings, run_semantic
from resources.settings import setting


class LintResource(dg.ConfigurableResource):
    """How much of the store the semantic layer looks at (the embedder is the shared one), and
    when the structure and grounding layers read all of it; the defaults are the core's own."""

    similarity: float = setting(
        run_semantic,
        "threshold",
        description="Two facts of one subject at least this similar are compared",
    )
    pairs_per_100: int = setting(
        run_semantic,
        "pairs_per_100",
        description="Fact pairs the judge is asked about per 100 new facts",
    )
    full: bool = Field(
        default=False,
        description="Read the whole store in the structure and grounding layers this time (the "
        "weekly whole-store pass, on demand), not only the rows changed since the last lint",
    )
    full_every_days: float = setting(
        ScopeSettings,
        "full_every_days",
        ge=0,
        description="The structure and grounding layers read the whole store when no lint did "
        "in this many days (0: every lint); in between, the rows changed since the last lint",
    )

    def scope(self) -> ScopeSettings:
        return ScopeSettings(full=self.full, full_every_days=self.full_every_days)
