"""Near-duplicate search for a foreign server's items with memvault's own embedder.

The MCP memory servers the gardener tends have no similarity search of their own, so both of
their adapters embed item texts here (once per text, lazily: the embedders pull in heavy
modules) and pair them through :func:`~memvault.gardener.similarity.similar_pairs`, never
all pairs of the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from memvault.gardener.adapter import Capability, DuplicatePair, MemoryItem, UnsupportedMixin
from memvault.gardener.similarity import similar_pairs

if TYPE_CHECKING:
    from memvault.embed import Embedder


class EmbeddedItems(UnsupportedMixin):
    """The base of an adapter whose server cannot find near duplicates itself."""

    def items(self) -> list[MemoryItem]:  # pragma: no cover - each adapter reads its server
        """Every item of the store, as the adapter reads its server."""
        raise NotImplementedError

    def init_embedding(self, embedder: Embedder | str | None) -> None:
        """``embedder``: an instance, a spec for :func:`memvault.embed.make_embedder`, or None
        (the default embedder, made when first needed)."""
        self._embedder_spec = embedder
        self._embedder: Embedder | None = (
            None if embedder is None or isinstance(embedder, str) else embedder
        )
        self._vectors: dict[str, np.ndarray] = {}

    def duplicate_candidates(
        self, item_ids: Sequence[str], threshold: float = 0.90, limit: int = 1000
    ) -> list[DuplicatePair]:
        """Pairs among unpinned items, each with one of ``item_ids``, by cosine."""
        self.require(Capability.DUPLICATE_CHECK)
        items = [i for i in self.items() if not i.pinned]
        position = {item.id: n for n, item in enumerate(items)}
        queries = np.array([position[i] for i in dict.fromkeys(item_ids) if i in position])
        if queries.size == 0 or len(items) < 2:
            return []
        found = similar_pairs(self._embed([i.text for i in items]), queries, threshold)
        pairs = []
        for a, b, score in zip(
            found.left.tolist(), found.right.tolist(), found.score.tolist(), strict=True
        ):
            first, second = sorted((items[a].id, items[b].id))
            pairs.append(DuplicatePair(first, second, min(1.0, round(float(score), 6))))
            if len(pairs) >= limit:
                break
        return pairs

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if todo:
            if self._embedder is None:
                from memvault.embed import make_embedder

                spec = self._embedder_spec if isinstance(self._embedder_spec, str) else None
                self._embedder = make_embedder(spec)
            for text, vector in zip(todo, self._embedder.embed(todo), strict=True):
                self._vectors[text] = vector
        return np.stack([self._vectors[t] for t in texts])
