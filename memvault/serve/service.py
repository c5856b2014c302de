"""What ``memvault serve`` does for a caller: recall, remember, feedback, asof on one store.

:class:`MemoryService` keeps the store's search index warm (one
:class:`~memvault.recall.Recaller`, refreshed from what changed) and answers each tool as
its command does: ``recall`` as ``memvault recall`` (recorded in recall_log, one audited
run), ``remember`` through ingest's validation and audited write (one block as a JSONL
record, embedded at once), ``feedback`` as ``memvault feedback``, ``asof`` as
``memvault asof``. Input that is refused raises :class:`MemvaultError` and writes nothing.
Searches are served one at a time on one connection (a connection is not shared by
threads); writes go through the :class:`~memvault.serve.writer.ServeWriter` (the durable
queue, its own connection).

On a DuckDB file the server holds the file only while nobody else asks for it
(:meth:`MemoryService.release`, see :mod:`memvault.serve.writer`): the night's jobs and the
owner's commands run while an agent is connected, and the server answers from its
in-memory copy meanwhile.

A recall is answered before its log is written: the log is queued (durable at once) and
applied by the writer's thread, unless ``MEMVAULT_SERVE_RECALL_LOG=inline`` asks to apply
it before answering. ``feedback`` is applied after everything queued before it (a recall
just answered included); :meth:`MemoryService.close` applies everything still queued.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
from collections.abc import Callable
from typing import Any

from memvault.errors import IngestError, MemvaultError
from memvault.ids import new_run_id
from memvault.normalize import iso, utcnow
from memvault.recall import recaller_for
from memvault.recall.feedback import ACCEPTED, BOOSTS, VERDICTS
from memvault.recall.recaller import Recaller
from memvault.serve.apply import REMEMBER_SOURCE, Refused, remembered_id
from memvault.serve.arguments import MAX_LIMIT
from memvault.serve.queue import WriteQueue
from memvault.serve.writer import ServeWriter
from memvault.store import Store
from memvault.store.queries.blocks import block_status

#: The tool's argument names for the record fields a refusal may name.
_FIELD_NAMES = (("created_at", "occurred_at"), ("role", "speaker"))
#: How recalls are written: ``queued`` (after the answer, by the writer) or ``inline``.
RECALL_LOG_VARIABLE = "MEMVAULT_SERVE_RECALL_LOG"


def queued_recall_log(environ: dict[str, str] | None = None) -> bool:
    """Whether recalls are written after they are answered (``MEMVAULT_SERVE_RECALL_LOG``:
    ``queued``, the default, or ``inline``: before answering, as ``memvault recall`` does)."""
    value = ((environ if environ is not None else os.environ).get(RECALL_LOG_VARIABLE) or "queued").strip().lower()  # fmt: skip
    if value not in ("queued", "inline"):
        raise MemvaultError(f"{RECALL_LOG_VARIABLE}={value!r}: use queued or inline")
    return value == "queued"


class MemoryService:
    """The read and write path of one open store, for a long-lived process."""

    def __init__(
        self,
        store: Store,
        recaller: Recaller | None = None,
        *,
        queued: bool | None = None,
        queue: WriteQueue | None = None,
        hold_off: float | None = None,
    ) -> None:
        self.store = store
        self.recaller = recaller or recaller_for(store)
        #: The reading connection and the index: one search at a time.
        self._lock = threading.Lock()
        self.queued = queued_recall_log() if queued is None else queued
        self.writer = ServeWriter(
            store.twin(),
            queue if queue is not None else WriteQueue.for_store(store.url),
            read_lock=self._lock,
            embedder=lambda: self.recaller.embedder,
            on_change=self.recaller.mark_stale,
            hold_off=hold_off,
        )

    def close(self) -> None:
        """Apply what is still queued and close the writer (the store itself is the
        caller's)."""
        self.writer.close()

    def release(self) -> dict[str, Any]:
        """Let go of a DuckDB file for another process (see :mod:`memvault.serve.writer`)."""
        return self.writer.release()

    def warm(self) -> dict[str, Any]:
        """Build the search index now (and load the embedder when the store has vectors),
        so the first recall is as fast as the next."""
        with self._lock:
            index = self.recaller.ready(self.store)
            if index.has_vectors:
                self.recaller.embedder.embed(["warm up"])
            return {"blocks": index.main.size, "seconds": round(index.built_seconds, 3)}

    # -- the tools ----------------------------------------------------------------------------

    def recall(self, query: str, limit: int = 10, session_id: str | None = None) -> dict[str, Any]:
        """The hits and current facts for ``query``, as ``memvault recall --json`` prints them."""
        _text(query, "query", allow_blank=True)
        _optional_text(session_id, "session_id")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise MemvaultError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
        with self._lock:
            now = utcnow()
            result = self.recaller.recall(
                self.store, query, limit=limit, session_id=session_id, now=now, record=False
            )
            self.writer.submit_recall(result, session_id, now)  # in the order answered
        if not self.queued:
            self.writer.wait_for(result.recall_id)
        return result.as_dict()

    def remember(
        self,
        text: str,
        speaker: str | None = None,
        session_id: str | None = None,
        occurred_at: str | None = None,
    ) -> dict[str, Any]:
        """Write one memory through ingest (validated, one audited run) with its vector;
        returns its block id. The same text remembered again is the same memory."""
        from memvault.ingest import read_jsonl

        _text(text, "text")
        for value, name in ((speaker, "speaker"), (session_id, "session_id"), (occurred_at, "occurred_at")):  # fmt: skip
            _optional_text(value, name)
        now = iso(utcnow())
        block: dict[str, Any] = {
            "type": "block",
            "text": text,
            "created_at": occurred_at or now,
            # When it was written: a memory of last week is still new to the search index,
            # which reads what changed by time.
            "updated_at": now,
        }
        if speaker is not None:
            block["role"] = speaker
        lines = []
        if session_id is not None:
            block["session_id"] = session_id
            # A session the store does not know yet starts with this memory (an existing
            # one is left as it is).
            lines.append({"type": "session", "id": session_id, "source": "mcp", "started_at": block["created_at"]})  # fmt: skip
        lines.append(block)
        raw = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        try:  # checked before it is queued: a bad time or an empty text never waits there
            read_jsonl(io.BytesIO(raw.encode("utf-8")), REMEMBER_SOURCE)
        except IngestError as exc:
            raise MemvaultError(_refusal(exc.problems[0].message if exc.problems else str(exc))) from None  # fmt: skip
        with self.writer.write_lock:  # the id is chosen against what the writer sees
            block["id"] = remembered_id(text)
            if _inactive(self.writer.store, block["id"]):
                block["id"] = remembered_id(text, taken=True, created_at=block["created_at"])
            lines += self._mentions(text, block)
            try:
                result = self.writer.write(
                    "remember", new_run_id("ingest"), {"block_id": block["id"], "lines": lines}
                )
            except Refused as exc:
                raise MemvaultError(_refusal(str(exc))) from None
        self.recaller.mark_stale()
        return result

    def _mentions(self, text: str, block: dict[str, Any]) -> list[dict[str, Any]]:
        """Mentions of the entities the store knows that ``text`` names, as a question naming
        them is matched: a remembered memory counts for its entities at once, not only after
        the night's extraction (else older memories of the same entity outrank it)."""
        index = self.recaller.index
        known = block_status(self.writer.store, block["id"]) is not None
        if index is None or known:  # the same text again: its mentions are there already
            return []
        return [
            {
                "type": "mention",
                "entity": entity_id,
                "block_id": block["id"],
                "mentioned_at": block["created_at"],
            }
            | ({"session_id": block["session_id"]} if "session_id" in block else {})
            for entity_id in index.matcher.match(text).ids
        ]

    def feedback(
        self,
        recall_id: str,
        verdict: str,
        block_id: str | None = None,
        note: str | None = None,
    ) -> dict[str, Any]:
        """The owner's verdict or +/- on a recall, as ``memvault feedback`` records it."""
        _text(recall_id, "recall_id")
        _text(verdict, "verdict")
        _optional_text(block_id, "block_id")
        _optional_text(note, "note")
        word = verdict.strip().lower()
        if word not in VERDICTS and word not in BOOSTS:
            raise MemvaultError(f"unknown verdict {verdict!r}: use {ACCEPTED}")
        args = {"recall_id": recall_id, "verdict": verdict, "block_id": block_id, "note": note}
        try:  # applied after everything queued before it: a recall just answered included
            report = self.writer.write(
                "feedback", new_run_id("feedback"), args | {"at": iso(utcnow())}
            )
        except Refused as exc:
            raise MemvaultError(str(exc)) from None
        self.recaller.mark_stale()  # the blocks' feedback ranks the next recall
        return report

    def asof(
        self,
        subject: str,
        at: str | None = None,
        predicate: str | None = None,
        known_at: str | None = None,
    ) -> dict[str, Any]:
        """What held for ``subject`` at ``at`` (default now): the subject named as recall
        names it, the predicates it has listed (see :mod:`memvault.serve.facts`)."""
        from memvault.serve.facts import answer_asof

        _text(subject, "subject")
        for value, name in ((at, "at"), (predicate, "predicate"), (known_at, "known_at")):
            _optional_text(value, name)
        with self._lock:
            matcher = self.recaller.ready(self.store).matcher
            return answer_asof(self.store, matcher, subject, at, predicate, known_at)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """``tool(**arguments)`` for a caller that names the tool (the JSON endpoint)."""
        methods: dict[str, Callable[..., dict[str, Any]]] = {
            "recall": self.recall,
            "remember": self.remember,
            "feedback": self.feedback,
            "asof": self.asof,
        }
        method = methods.get(tool)
        if method is None:
            raise MemvaultError(f"no tool {tool!r}: recall, remember, feedback or asof")
        try:
            return method(**arguments)
        except TypeError as exc:
            raise MemvaultError(f"{tool}: {exc}") from None


def _text(value: Any, name: str, *, allow_blank: bool = False) -> None:
    if not isinstance(value, str):
        raise MemvaultError(f"{name} must be text")
    if not allow_blank and not value.strip():
        raise MemvaultError(f"{name} is empty")


def _optional_text(value: Any, name: str) -> None:
    if value is not None:
        _text(value, name)


def _inactive(store: Store, block_id: str) -> bool:
    """Whether a block of this id exists and is no longer active (undone, archived)."""
    status = block_status(store, block_id)
    return status is not None and status != "active"


def _refusal(message: str) -> str:
    """Ingest's first problem, in the tool's words (its argument names, no line number)."""
    for field, argument in _FIELD_NAMES:
        message = re.sub(rf"\b{field}\b", argument, message)
    return f"not remembered: {message}; nothing was written"
