"""The judge family (``judge_cache``): the judge's replies by prompt hash, shared by every run
and process so nothing is asked twice."""

from __future__ import annotations

import polars as pl

from memvault.store.store import Store


def cached_reply(store: Store, key: str) -> str | None:
    """The reply cached under ``key`` (JSON text), None when the prompt was never answered."""
    rows = store.fetch("SELECT reply FROM judge_cache WHERE key = :k", {"k": key})
    return rows[0][0] if rows else None


def cache_reply(store: Store, row: pl.DataFrame) -> None:
    """Keep a reply (one ``judge_cache`` row); a key already cached keeps its first reply."""
    with store.transaction():
        store.backend.insert_df("judge_cache", row, key=("key",), on_conflict="ignore")
