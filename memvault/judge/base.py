"""The judge protocol, its counters, and the response cache protocol.

Every stage that needs judgment talks to a :class:`Judge`, so the pipeline
runs the same with a real LLM, the offline heuristics or a test script; the
counters in :class:`JudgeStats` go into every materialization's metadata.
The cache protocol is kept small so the store can back it with one table
(``judge_cache``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from memvault.errors import JudgeError
from memvault.judge.tasks import JudgeTask

RequestT = TypeVar("RequestT", bound=BaseModel)
ReplyT = TypeVar("ReplyT", bound=BaseModel)


@dataclass
class JudgeStats:
    """Thread-safe counters of what a judge did."""

    calls: int = 0
    escalations: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    errors: int = 0
    heuristic_answers: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        """Add to counters by name, atomically: ``stats.add(calls=1, prompt_tokens=12)``."""
        with self._lock:
            for name, value in counts.items():
                if name.startswith("_") or not isinstance(getattr(self, name, None), int):
                    raise AttributeError(f"JudgeStats has no counter {name!r}")
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, int]:
        """A consistent snapshot of all counters."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_lock"}


@runtime_checkable
class Judge(Protocol):
    """Answers typed tasks; ``kind`` names the implementation ("openai:<model>", ...).

    ``can_escalate`` says whether ``escalate=True`` reaches a different, stronger model;
    when it does not, callers must not count a re-ask as an escalation (it would only be
    the same question answered again, or a cache hit on the first answer).
    """

    kind: str
    stats: JudgeStats

    @property
    def can_escalate(self) -> bool:
        """Whether ``escalate=True`` reaches a different, stronger model."""
        ...

    def ask(
        self, task: JudgeTask[RequestT, ReplyT], request: RequestT, *, escalate: bool = False
    ) -> ReplyT:
        """One reply for one request; ``escalate`` asks the stronger model."""
        ...

    def ask_many(
        self,
        task: JudgeTask[RequestT, ReplyT],
        requests: Sequence[RequestT],
        *,
        escalate: bool = False,
    ) -> list[ReplyT]:
        """Replies in the order of ``requests``."""
        ...


@runtime_checkable
class JudgeCache(Protocol):
    """Stored replies by prompt hash, so a re-run costs no calls."""

    def get(self, key: str) -> str | None:
        """The reply JSON stored under ``key``, or None."""
        ...

    def put(
        self,
        key: str,
        task: str,
        model: str,
        reply_json: str,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        """Store a reply (the token counts say what it cost the first time)."""
        ...


@dataclass(frozen=True)
class CachedReply:
    """One entry of :class:`InMemoryJudgeCache`."""

    task: str
    model: str
    reply_json: str
    prompt_tokens: int
    completion_tokens: int


class InMemoryJudgeCache:
    """A :class:`JudgeCache` in a dict, for tests and one-process runs."""

    def __init__(self) -> None:
        self.entries: dict[str, CachedReply] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: str) -> str | None:
        with self._lock:
            entry = self.entries.get(key)
        return entry.reply_json if entry else None

    def put(
        self,
        key: str,
        task: str,
        model: str,
        reply_json: str,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        with self._lock:
            self.entries[key] = CachedReply(
                task, model, reply_json, prompt_tokens, completion_tokens
            )


def cache_key(
    model: str, messages: Sequence[dict[str, str]], schema: dict[str, Any], task: str
) -> str:
    """sha256 over everything that determines a reply: model, messages, schema, task."""
    blob = json.dumps(
        {"model": model, "messages": list(messages), "schema": schema, "task": task},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def ask_each(
    judge: Judge,
    task: JudgeTask[RequestT, ReplyT],
    requests: Sequence[RequestT],
    *,
    escalate: bool = False,
) -> list[ReplyT | JudgeError]:
    """Replies in the order of ``requests``; a request whose judgment failed (after the judge's
    own retries) gets its :class:`JudgeError` instead, and the others keep their replies.

    One bad reply must not cost the whole batch: when ``ask_many`` fails, each request is
    asked again on its own (the ones answered before come from the reply cache).
    """
    try:
        return list(judge.ask_many(task, requests, escalate=escalate))
    except JudgeError:
        pass
    out: list[ReplyT | JudgeError] = []
    for request in requests:
        try:
            out.append(judge.ask(task, request, escalate=escalate))
        except JudgeError as exc:
            out.append(exc)
    return out


class SequentialJudge:
    """``ask_many`` as one ``ask`` after another, for judges with nothing to overlap."""

    def ask(self, task: JudgeTask[Any, Any], request: Any, *, escalate: bool = False) -> Any:
        raise NotImplementedError

    def ask_many(
        self,
        task: JudgeTask[RequestT, ReplyT],
        requests: Sequence[RequestT],
        *,
        escalate: bool = False,
    ) -> list[ReplyT]:
        return [self.ask(task, request, escalate=escalate) for request in requests]
