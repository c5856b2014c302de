"""A large import's embedding survives a kill: what was written stays, a re-run does the rest.

At a million memories embedding takes hours of the collector's time, so it must be resumable
(a crash loses at most the batch in flight) and incremental (a re-run embeds only what has
no current vector). Both backends.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import numpy as np
import pytest

from memvault.embed import HashingEmbedder
from memvault.store import Store
from memvault.vectors import embed_missing, load_vectors, stale_texts
from tests.lifecycle_support import add_blocks

BATCH = 8


class Killed(RuntimeError):
    """The embedder's process dying mid-import."""


class DiesAfter(HashingEmbedder):
    """The hashing embedder, killed on its ``batches + 1``-th batch; counts what it embeds."""

    def __init__(self, batches: int | None) -> None:
        super().__init__()
        self.batches = batches
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.batches is not None and self.calls == self.batches:
            raise Killed("killed mid-import")
        self.calls += 1
        self.texts += len(texts)
        return super().embed(texts)


def test_a_killed_embedding_keeps_its_batches_and_a_rerun_embeds_only_the_rest(
    store: Store,
) -> None:
    now = dt.datetime(2026, 11, 1)
    ages = {f"b{i:03d}": 1.0 + i for i in range(50)}
    for block_id, age in ages.items():  # each block its own text
        add_blocks(
            store, now, {block_id: age}, text=f"memory {block_id} about topic {block_id[-1]}"
        )

    dying = DiesAfter(batches=3)
    with pytest.raises(Killed):
        embed_missing(store, dying, kinds=("block",), batch_size=BATCH)
    kept, _ = load_vectors(store, "block", dying.model_name)
    assert len(kept) == 3 * BATCH  # the batches before the kill, none lost
    assert stale_texts(store, "block", dying.model_name).height == 50 - 3 * BATCH

    resumed = DiesAfter(batches=None)
    report = embed_missing(store, resumed, kinds=("block",), batch_size=BATCH)
    assert resumed.texts == 50 - 3 * BATCH  # only what had no vector
    assert report.total["block"] == 50
    ids, matrix = load_vectors(store, "block", resumed.model_name)
    assert sorted(ids) == sorted(ages)
    # the vectors written before the kill are the ones a clean run writes
    clean = HashingEmbedder().embed(
        [str(t) for (t,) in store.fetch("SELECT text FROM blocks ORDER BY id")]
    )
    assert np.allclose(matrix, clean, atol=1e-6)

    again = DiesAfter(batches=None)
    embed_missing(store, again, kinds=("block",), batch_size=BATCH)
    assert again.texts == 0  # a re-run costs nothing
