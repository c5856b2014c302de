"""What ``memvault serve`` does for a caller: recall, remember, feedback, asof on one store.

:class:`MemoryService` holds the store open for the life of the server and keeps its
search index warm (one :class:`~memvault.recall.Recaller`, refreshed from what changed).
Each method goes the same way as its command: ``recall`` as ``memvault recall``
(recorded in recall_log, one audited run), ``remember`` through ingest's validation and
audited write (one block as a JSONL record), ``feedback`` as ``memvault feedback``,
``asof`` as ``memvault asof``. Input that is refused raises :class:`MemvaultError` and
writes nothing. Calls are served one at a time: a store connection is not shared by
threads.

A recall is answered before its write: the write is queued to a
:class:`~memvault.serve.writer.RecallWriter` (its own connection and thread, group
commits), unless ``MEMVAULT_SERVE_RECALL_LOG=inline`` asks to write it before answering.
``feedback`` on a recall waits for that recall's write; :meth:`MemoryService.close`
writes everything still queued.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from memvault.errors import IngestError, MemvaultError
from memvault.normalize import iso, utcnow
from memvault.recall import feedback as give_feedback
from memvault.recall import recaller_for
from memvault.recall.log import write_recall
from memvault.recall.recaller import Recaller
from memvault.serve.writer import RecallWriter
from memvault.store import Store

#: The most hits one recall returns.
MAX_LIMIT = 100
#: Where remembered memories say they came from (the ingest run's source).
REMEMBER_SOURCE = "mcp:remember"
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
        self, store: Store, recaller: Recaller | None = None, *, queued: bool | None = None
    ) -> None:
        self.store = store
        self.recaller = recaller or recaller_for(store)
        self._lock = threading.Lock()
        queued = queued_recall_log() if queued is None else queued
        #: Writes the answered recalls on a second connection (None: written inline).
        self.writer = RecallWriter(store.twin()) if queued else None

    def close(self) -> None:
        """Write the recalls still queued and close the writer's connection (the store
        itself is the caller's)."""
        if self.writer is not None:
            self.writer.close()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """The store to this call alone, and no recall log batch written meanwhile."""
        with self._lock, self.writer.write_lock if self.writer else nullcontext():
            yield

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
            if self.writer is None:
                result = self.recaller.recall(self.store, query, limit=limit, session_id=session_id)  # fmt: skip
            else:
                now = utcnow()
                result = self.recaller.recall(
                    self.store, query, limit=limit, session_id=session_id, now=now, record=False
                )
                if not self.writer.submit(result, session_id, now):  # in the order answered
                    write_recall(self.store, result, session_id, now)  # the server is stopping
        return result.as_dict()

    def remember(
        self,
        text: str,
        speaker: str | None = None,
        session_id: str | None = None,
        occurred_at: str | None = None,
    ) -> dict[str, Any]:
        """Write one memory through ingest (validated, one audited run); returns its block id."""
        from memvault.ingest import ingest_records, read_jsonl

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
        with self._writing():
            try:
                items = read_jsonl(io.BytesIO(raw.encode("utf-8")), REMEMBER_SOURCE)
                written = items[-1].record
                if session_id is not None and _session_exists(self.store, session_id):
                    items = items[-1:]
                report = ingest_records(self.store, items, source=REMEMBER_SOURCE)
            except IngestError as exc:
                raise MemvaultError(_refusal(exc)) from None
            self.recaller.mark_stale()
        block_id = str(written.id)  # type: ignore[attr-defined]
        return {
            "block_id": block_id,
            "run_id": report.run_id,
            "written": bool(report.inserted.get("block")),
            "parts": _parts(self.store, block_id) if report.split_blocks else 1,
        }

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
        if self.writer is not None:
            self.writer.wait_for(recall_id)  # a recall just answered may not be written yet
        with self._writing():
            report = give_feedback(self.store, recall_id, verdict, block_id=block_id, note=note)
            self.recaller.mark_stale()  # the blocks' feedback ranks the next recall
        return report.as_dict()

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


def _session_exists(store: Store, session_id: str) -> bool:
    return bool(store.fetch("SELECT 1 FROM sessions WHERE id = :id", {"id": session_id}))


def _parts(store: Store, block_id: str) -> int:
    """How many blocks the memory became (a text past the block size is split, not cut)."""
    rows = store.fetch(
        "SELECT count(*) FROM blocks WHERE id = :id OR parent_id = :id", {"id": block_id}
    )
    return int(rows[0][0]) if rows else 1


def _refusal(exc: IngestError) -> str:
    """Ingest's first problem, in the tool's words (its argument names, no line number)."""
    message = exc.problems[0].message if exc.problems else str(exc)
    for field, argument in _FIELD_NAMES:
        message = re.sub(rf"\b{field}\b", argument, message)
    return f"not remembered: {message}; nothing was written"
