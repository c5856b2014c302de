"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama, ...).

Optional: the offline MiniLM model is the default. Vectors are normalized
here because not every server returns unit vectors; the SDK retries
connection errors, 429 and 5xx with backoff.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import openai
from openai import OpenAI

from memvault.embed.base import normalize_rows
from memvault.errors import MemvaultError


class OpenAIEmbedder:
    """``model_name`` is ``openai:<model>``; ``dim`` is learned from the first reply."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str,
        model: str,
        batch_size: int = 128,
        *,
        timeout: float = 60,
        max_retries: int = 4,
    ) -> None:
        """``base_url`` None means the SDK's default (``OPENAI_BASE_URL`` or api.openai.com)."""
        self.base_url = base_url
        self.model = model
        self.model_name = f"openai:{model}"
        self.batch_size = batch_size
        self._client = OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )
        self._dim: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.base_url!r}, model={self.model!r})"

    @property
    def dim(self) -> int:
        """Vector length (one small request if nothing was embedded yet)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        batches = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                response = self._client.embeddings.create(
                    model=self.model, input=batch, encoding_format="float"
                )
            except openai.OpenAIError as exc:
                raise MemvaultError(
                    f"embedding endpoint {self.base_url or 'default'} (model {self.model}) "
                    f"failed: {' '.join(str(exc).split())}"
                ) from exc
            rows = sorted(response.data, key=lambda item: item.index)
            if len(rows) != len(batch):
                raise MemvaultError(
                    f"embedding endpoint returned {len(rows)} vectors for {len(batch)} texts"
                )
            batches.append(np.array([row.embedding for row in rows], dtype=np.float32))
        if not batches:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        vectors = np.concatenate(batches)
        with self._lock:
            if self._dim is None:
                self._dim = vectors.shape[1]
        if vectors.shape[1] != self._dim:
            raise MemvaultError(
                f"{self.model_name} returned {vectors.shape[1]}-dim vectors, "
                f"earlier {self._dim}-dim"
            )
        return normalize_rows(vectors)
