"""The embedder as a Dagster resource (MEMVAULT_EMBEDDER by default: the offline MiniLM)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from memvault.embed import Embedder, make_embedder


class EmbedderResource(dg.ConfigurableResource):
    spec: str | None = Field(
        default=None, description="'minilm', 'hashing[:dim]' or 'openai:<model>'"
    )

    def build(self) -> Embedder:
        return make_embedder(self.spec)
