"""How each write ``memvault serve`` queued is applied to a store, exactly once.

An entry of the queue (:mod:`memvault.serve.queue`) names the run it is written under
(an ingest run for ``remember``, a feedback run, the recall's own run for its log). Applying
looks for that run first, in the same transaction as the write: an entry already in the
store is not written again, however often a crash makes it be tried. The same entry is
applied twice on purpose while a nightly job holds a DuckDB file: to the server's in-memory
copy at once (so a recall sees it), and to the file when the server has it back. Its ids
and times are fixed in the entry, so both are the same write.

A refusal (:class:`Refused`: ingest's or feedback's own checks) writes nothing and says why.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import unicodedata
from typing import Any

from memvault.embed import Embedder
from memvault.errors import IngestError, MemvaultError
from memvault.normalize import normalize_text, to_utc_naive
from memvault.recall.log import PendingRecall, write_recalls
from memvault.recall.result import GapHint, RecallHit, RecallResult
from memvault.records import stable_id
from memvault.serve.queue import Entry
from memvault.store import Store
from memvault.store.queries.blocks import block_and_parts, session_exists
from memvault.store.queries.recall import blocks_without_current_vector
from memvault.store.queries.runs import runs_held

#: Where remembered memories say they came from (the ingest run's source).
REMEMBER_SOURCE = "mcp:remember"


class Refused(MemvaultError):
    """The store refused an entry (nothing was written); the message says why."""

    def __init__(self, message: str, cause: Exception | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def remembered_id(text: str, taken: bool = False, created_at: str | None = None) -> str:
    """The block id of a remembered text: the same for the same words, whatever their case
    and spacing (the same text remembered twice is one memory). ``taken``: a block of that
    id exists but is no longer active (undone, archived): the memory gets an id of its own."""
    words = " ".join(unicodedata.normalize("NFKC", normalize_text(text)).casefold().split())
    return stable_id("blk", "remembered", words, created_at if taken else None)


def already_applied(store: Store, run_ids: list[str]) -> set[str]:
    """Which of these runs the store holds (their entries were applied)."""
    return runs_held(store, run_ids)


# -- remember ---------------------------------------------------------------------------------


def apply_remember(store: Store, entry: Entry, embedder: Embedder | None) -> dict[str, Any]:
    """Write a remembered memory through ingest (validated, one audited run) and give it its
    vector at once (the server's embedder is loaded); returns what the tool answers."""
    from memvault.ingest import ingest_records, read_jsonl

    args = entry.args
    block_id = str(args["block_id"])
    lines: list[dict[str, Any]] = args["lines"]
    written = False
    with store.transaction():
        if not already_applied(store, [entry.run_id]):
            raw = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
            try:
                items = read_jsonl(io.BytesIO(raw.encode("utf-8")), REMEMBER_SOURCE)
                if lines[0]["type"] == "session" and _session_exists(store, str(lines[0]["id"])):
                    items = items[1:]  # the session goes on; it is left as it is
                report = ingest_records(store, items, source=REMEMBER_SOURCE, run_id=entry.run_id)
            except IngestError as exc:
                raise Refused(_first_problem(exc), exc) from None
            written = bool(report.inserted.get("block"))
    blocks = _with_parts(store, block_id)
    embedded = False
    if embedder is not None:
        try:
            embed_blocks(store, embedder, blocks)
            embedded = True
        except Exception:  # the memory is written; the night's embedding makes its vector
            embedded = False
    return {
        "block_id": block_id,
        "run_id": entry.run_id,
        "written": written,
        "parts": len(blocks),
        "embedded": embedded,
    }


def embed_blocks(store: Store, embedder: Embedder, block_ids: list[str]) -> int:
    """Vectors for those of ``block_ids`` that are active and have none made from their
    text by this model; returns how many were made."""
    from memvault.vectors import write_vectors

    if not block_ids:
        return 0
    stale = blocks_without_current_vector(store, block_ids, embedder.model_name)
    if stale.height:
        write_vectors(store, embedder, "block", stale)
    return stale.height


def _session_exists(store: Store, session_id: str) -> bool:
    return session_exists(store, session_id)


def _with_parts(store: Store, block_id: str) -> list[str]:
    """The memory's blocks (a text past the block size is split into parts, not cut)."""
    return block_and_parts(store, block_id) or [block_id]


def _first_problem(exc: IngestError) -> str:
    return exc.problems[0].message if exc.problems else str(exc)


# -- feedback ---------------------------------------------------------------------------------


def apply_feedback(store: Store, entry: Entry) -> dict[str, Any]:
    """Record the owner's verdict or +/- as ``memvault feedback`` does, under the entry's run."""
    from memvault.recall import feedback as give_feedback
    from memvault.recall.feedback import FeedbackError

    args = entry.args
    with store.transaction():
        if already_applied(store, [entry.run_id]):
            return {"run_id": entry.run_id, "recall_id": args["recall_id"], "verdict": args["verdict"]}  # fmt: skip
        try:
            report = give_feedback(
                store,
                args["recall_id"],
                args["verdict"],
                block_id=args.get("block_id"),
                note=args.get("note"),
                now=_time(args["at"]),
                run_id=entry.run_id,
            )
        except FeedbackError as exc:
            raise Refused(str(exc), exc) from None
    return report.as_dict()


# -- the recall log ---------------------------------------------------------------------------


def recall_args(result: RecallResult, session_id: str | None, now: dt.datetime) -> dict[str, Any]:
    """What a recall's log needs, for the queue: its hits' ids and scores, not their texts."""
    return {
        "recall_id": result.recall_id,
        "query": result.query,
        "signature": result.signature,
        "intent": result.intent,
        "entities": result.entities,
        "prefetch_id": result.prefetch_id,
        "gap_hint": result.gap_hint.model_dump(mode="json") if result.gap_hint else None,
        "latency_ms": result.latency_ms,
        "hits": [[h.block_id, h.score] for h in result.results],
        "session_id": session_id,
        "at": now.isoformat(),
    }


def pending_recall(args: dict[str, Any]) -> PendingRecall:
    """A queued recall as :func:`~memvault.recall.log.write_recalls` takes it (its hits carry
    id and score only: the log keeps no more)."""
    result = RecallResult(
        recall_id=args["recall_id"],
        query=args["query"],
        signature=args["signature"],
        intent=args["intent"],
        entities=args["entities"],
        prefetch_id=args["prefetch_id"],
        gap_hint=GapHint.model_validate(args["gap_hint"]) if args["gap_hint"] else None,
        latency_ms=args["latency_ms"],
        results=[RecallHit(block_id=b, text="", tier="", score=s) for b, s in args["hits"]],
    )
    return result, args["session_id"], _time(args["at"])


def apply_recalls(store: Store, entries: list[Entry]) -> None:
    """Write the logs of queued recalls in one transaction, those not written yet."""
    with store.transaction():
        done = already_applied(store, [e.run_id for e in entries])
        todo = [pending_recall(e.args) for e in entries if e.run_id not in done]
        if todo:
            write_recalls(store, todo)


def _time(value: str) -> dt.datetime:
    return to_utc_naive(dt.datetime.fromisoformat(value))
