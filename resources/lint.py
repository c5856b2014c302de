"""The lint's knobs as a Dagster resource (the launchpad can change them)."""

from __future__ import annotations

import dagster as dg

from memvault.lint.run import run_semantic
from resources.settings import setting


class LintResource(dg.ConfigurableResource):
    """How much of the store the semantic layer looks at (the embedder is the shared one);
    the defaults are the semantic layer's own."""

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
