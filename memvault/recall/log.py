"""What a recall leaves in the store: its recall_log row and the access of what it returned.

One recall is one run (its id is the recall id, kind ``recall``) and one audited
mutation (phase ``recall``): the recall_log row, ``access_count + 1`` and
``last_accessed_at`` on every returned block, and the hit on the prefetched
entry it was served from. ``memvault undo RECALL_ID`` takes all of it back.

``write_recalls`` writes several recalls in one transaction (one commit), each still its
own run with its own audit rows, in the order they were answered: what ``memvault
serve``'s background writer does with the recalls queued while it was writing.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets

import polars as pl

from memvault.recall.result import GapHint, RecallResult
from memvault.store import Store


def new_recall_id(now: dt.datetime) -> str:
    return f"recall-{now:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"


FAILED_BEFORE_SQL = """
SELECT 'gap' AS part, count(*) AS n, NULL AS last FROM knowledge_gap WHERE query_signature = :s
UNION ALL
SELECT 'fail', count(*), max(created_at) FROM recall_log
WHERE signature = :s AND verdict = 'INCORRECT'
"""


def gap_hint(store: Store, signature: str) -> GapHint | None:
    """What the caller should know when this question failed before: its recorded knowledge
    gap (``gap_for``), else the failures recall_log holds so far; None when it never failed."""
    from memvault.profile.gaps import gap_for

    found = {part: (int(n or 0), last) for part, n, last in store.fetch(FAILED_BEFORE_SQL, {"s": signature})}  # fmt: skip
    gap = gap_for(store, signature) if found["gap"][0] else None
    if gap is not None:
        status = str(gap["status"])
        count = int(gap["fail_count"] or 0)
        last = gap["last_fail_at"]
        message = f"this question failed {count} times before (last {last:%Y-%m-%d}); " + (
            "the answer below may be wrong or missing"
            if status == "open"
            else "it was answered since"
        )
        return GapHint(
            signature=signature,
            status=status,
            fail_count=count,
            last_failed_at=last,
            message=message,
        )
    count, last = found["fail"]
    if not count:
        return None
    return GapHint(
        signature=signature,
        status="failed_before",
        fail_count=count,
        last_failed_at=last,
        message=f"this question failed {count} time(s) before (last {last:%Y-%m-%d})",
    )


#: One answered recall waiting to be written: (result, session id, when it was asked).
PendingRecall = tuple[RecallResult, str | None, dt.datetime]


def write_recalls(store: Store, pending: list[PendingRecall]) -> None:
    """Several recalls in one transaction, in order, each as :func:`write_recall` writes it
    (its run, its rows, its audit rows with before-images): one commit for all of them."""
    if not pending:
        return
    with store.transaction():
        for result, session_id, now in pending:
            write_recall(store, result, session_id, now)


def write_recall(store: Store, result: RecallResult, session_id: str | None, now: dt.datetime) -> None:  # fmt: skip
    """The recall's row, the blocks' access and the prefetched entry's hit, in one mutation."""
    ids = [h.block_id for h in result.results]
    row = pl.DataFrame(
        [
            {
                "id": result.recall_id,
                "query": result.query,
                "intent_label": result.intent,
                "entities": json.dumps(result.entities),
                "result_ids": json.dumps(ids),
                "scores": json.dumps([round(h.score, 6) for h in result.results]),
                "verdict": None,
                "session_id": session_id,
                "created_at": now,
                "signature": result.signature,
                "prefetch_id": result.prefetch_id,
                "gap_hint": result.gap_hint.model_dump_json() if result.gap_hint else None,
                "latency_ms": round(result.latency_ms, 3),
            }
        ],
        schema_overrides={"verdict": pl.Utf8, "session_id": pl.Utf8, "intent_label": pl.Utf8,
                          "prefetch_id": pl.Utf8, "gap_hint": pl.Utf8},
    )  # fmt: skip
    with store.mutation(result.recall_id, "recall") as m:
        store.record_run(result.recall_id, "recall", now, {"query": result.query})
        m.insert("recall_log", row, action="recall", reason="a recall")
        if ids:
            counts = store.fetch_df(
                "SELECT id, access_count FROM blocks WHERE id = ANY(:ids)", {"ids": ids}
            )
            m.update_many(
                "blocks",
                counts.select(
                    "id",
                    access_count=pl.col("access_count") + 1,
                    last_accessed_at=pl.lit(now, dtype=pl.Datetime("us")),
                ),
                action="access",
                reason=f"returned by recall {result.recall_id}",
            )
        if result.prefetch_id:
            hits = store.fetch(
                "SELECT hits FROM prefetch_cache WHERE id = :id", {"id": result.prefetch_id}
            )
            m.update(
                "prefetch_cache",
                result.prefetch_id,
                {"hits": int(hits[0][0] or 0) + 1, "last_hit_at": now},
                action="prefetch-hit",
                reason=f"served recall {result.recall_id}",
            )
