"""Vectors of blocks and entities, kept in table ``embeddings`` keyed by model.

A vector is stale when its model differs from the configured one or the text
changed since (``text_hash`` = md5 of the text, computed by the database), so
a model change or a rewrite means re-embedding, never silently mixed vectors.
A block's vector is made from the text recall searches it by: its original text
once tiering made the text a digest (the digest is shown, the original is found),
so tiering re-embeds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from memvault.embed.base import Embedder
from memvault.normalize import utcnow
from memvault.recall.text import SEARCH_TEXTS_SQL
from memvault.store import Store
from memvault.store.queries.recall import stale_vector_texts, stored_vectors, vector_count

#: What is embedded: target kind → (table or derived table with id and status, text column).
TARGETS: dict[str, tuple[str, str]] = {
    "block": (SEARCH_TEXTS_SQL, "text"),
    "entity": ("entities", "name"),
}


@dataclass
class EmbedReport:
    model: str
    dim: int
    embedded: dict[str, int]
    total: dict[str, int]

    def metadata(self) -> dict[str, Any]:
        """The model, and the vectors embedded in this pass and held in all, per kind."""
        return {
            "model": self.model,
            "dim": self.dim,
            "embedded_blocks": self.embedded.get("block", 0),
            "embedded_entities": self.embedded.get("entity", 0),
            "vectors_blocks": self.total.get("block", 0),
            "vectors_entities": self.total.get("entity", 0),
        }


def stale_texts(
    store: Store, kind: str, model: str, *, ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Active items of ``kind`` (of ``ids`` when given) without a current vector of
    ``model``: columns id, text, text_hash."""
    table, column = TARGETS[kind]
    return stale_vector_texts(store, kind, model, table, column, ids)


def write_vectors(store: Store, embedder: Embedder, kind: str, batch: pl.DataFrame) -> None:
    """Embed ``batch`` (columns id, text, text_hash) and store its vectors, in one transaction."""
    vectors = np.ascontiguousarray(embedder.embed(batch["text"].to_list()), dtype=np.float32)
    rows = pl.DataFrame(
        {
            "target_kind": [kind] * batch.height,
            "target_id": batch["id"],
            "model": [embedder.model_name] * batch.height,
            "dim": [vectors.shape[1]] * batch.height,
            "vector": [v.tobytes() for v in vectors],
            "text_hash": batch["text_hash"],
            "created_at": [utcnow()] * batch.height,
        },
        schema_overrides={"vector": pl.Binary, "dim": pl.Int32},
    )
    with store.transaction():
        store.backend.insert_df(
            "embeddings", rows, key=("target_kind", "target_id", "model"), on_conflict="replace"
        )


def embed_missing(
    store: Store,
    embedder: Embedder,
    *,
    kinds: tuple[str, ...] = ("block", "entity"),
    batch_size: int = 512,
    on_progress: Callable[[int, int], None] | None = None,
) -> EmbedReport:
    """Embed every stale item; vectors are written batch by batch (a crash loses one batch)."""
    todo = {kind: stale_texts(store, kind, embedder.model_name) for kind in kinds}
    total = sum(df.height for df in todo.values())
    done = 0
    embedded: dict[str, int] = {}
    for kind, frame in todo.items():
        embedded[kind] = 0
        for start in range(0, frame.height, batch_size):
            batch = frame.slice(start, batch_size)
            write_vectors(store, embedder, kind, batch)
            embedded[kind] += batch.height
            done += batch.height
            if on_progress:
                on_progress(done, total)
    counts = {kind: vector_count(store, kind, embedder.model_name) for kind in kinds}
    return EmbedReport(model=embedder.model_name, dim=embedder.dim, embedded=embedded, total=counts)


def load_vectors(
    store: Store, kind: str, model: str, *, ids: Sequence[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """All stored vectors of one kind and model (of ``ids`` when given), as ids in order and
    an (n, dim) float32 matrix."""
    df = stored_vectors(store, kind, model, ids)
    if df.is_empty():
        return [], np.zeros((0, 0), dtype=np.float32)
    matrix = np.frombuffer(b"".join(df["vector"].to_list()), dtype=np.float32).reshape(
        df.height, -1
    )
    return df["target_id"].to_list(), matrix
