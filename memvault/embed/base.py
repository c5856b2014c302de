"""The embedder protocol: texts in, unit-length float32 rows out.

Stored vectors are keyed by ``model_name``, so changing the model re-embeds
instead of silently mixing vector spaces; ``dim`` sizes the columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors whose dot product is their cosine similarity."""

    @property
    def model_name(self) -> str:
        """Names the vector space; stored vectors are keyed by it."""
        ...

    @property
    def dim(self) -> int:
        """Vector length."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dim), rows L2-normalized."""
        ...


def normalize_rows(vectors: np.ndarray, dtype: type[np.floating[Any]] = np.float32) -> np.ndarray:
    """Rows scaled to unit length (float32 unless ``dtype`` says otherwise); all-zero rows
    stay zero. The one normalization of vectors: embedders, the graph's vector similarity,
    the gardener's duplicate search and the semantic lint all scale rows by it, so a dot
    product is a cosine everywhere."""
    vectors = np.asarray(vectors, dtype=dtype)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(dtype)
