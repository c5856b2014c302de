"""The judge's reply cache in the store (table ``judge_cache``): shared by every run and process."""

from __future__ import annotations

import threading

import polars as pl

from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.judge import cache_reply, cached_reply


class StoreJudgeCache:
    """Replies by prompt hash. A lock serializes access: ``ask_many`` calls from threads."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            return cached_reply(self.store, key)

    def put(
        self,
        key: str,
        task: str,
        model: str,
        reply_json: str,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        row = pl.DataFrame(
            [
                {
                    "key": key,
                    "task": task,
                    "model": model,
                    "reply": reply_json,
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "created_at": utcnow(),
                }
            ]
        )
        with self._lock:
            cache_reply(self.store, row)
