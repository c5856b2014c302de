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
from memvault.store.audit import append_audit
from memvault.store.audit import images as _images
from memvault.store.liveness import HOST, carrier_pid
from memvault.store.queries.recall import bump_uses, failures_before, rows_to_bump


def new_recall_id(now: dt.datetime) -> str:
    return f"recall-{now:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"


def gap_hint(store: Store, signature: str) -> GapHint | None:
    """What the caller should know when this question failed before: its recorded knowledge
    gap (``gap_for``), else the failures recall_log holds so far; None when it never failed."""
    from memvault.profile.gaps import gap_for

    found = failures_before(store, signature)
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
    """Several recalls in one transaction, set-based, in the order given: each recall is
    its own run with its own audit rows, exactly as :func:`write_recall` writes it (the
    before-image of a block two recalls returned shows the first recall's access), in six
    statements whatever the number of recalls, one commit."""
    if not pending:
        return
    backend = store.backend
    log = store.conform("recall_log", pl.concat([_log_row(r, s, t) for r, s, t in pending]))
    runs = pl.DataFrame(
        {
            "id": [r.recall_id for r, _, _ in pending],
            "kind": ["recall"] * len(pending),
            "status": ["succeeded"] * len(pending),
            "started_at": [t for _, _, t in pending],
            "finished_at": [t for _, _, t in pending],
            "params": [json.dumps({"query": r.query}) for r, _, _ in pending],
            "host": [HOST] * len(pending),
            "pid": [carrier_pid()] * len(pending),
            "heartbeat_at": [t for _, _, t in pending],
        }
    )
    access = [
        (k, r.recall_id, bid, t)
        for k, (r, _, t) in enumerate(pending)
        for bid in sorted({h.block_id for h in r.results})
    ]
    hits = [(k, r.recall_id, r.prefetch_id, t) for k, (r, _, t) in enumerate(pending) if r.prefetch_id]  # fmt: skip
    with store.transaction():
        backend.insert_df("runs", store.conform("runs", runs), on_conflict="error")
        backend.insert_df("recall_log", log, on_conflict="error")
        audit = [
            _audit_frame(log["id"], "recall", "recall_log", log["id"], None, _images(log),
                         pl.Series(["a recall"] * log.height), range(log.height), 0),
            *_bump(store, "blocks", access, "access_count", "last_accessed_at", "access",
                   "returned by recall {}", 1),
            *_bump(store, "prefetch_cache", hits, "hits", "last_hit_at", "prefetch-hit",
                   "served recall {}", 2),
        ]  # fmt: skip
        frame = pl.concat(audit).sort("_order", "_part", "target_id").drop("_order", "_part")
        append_audit(store, frame)


def _log_row(result: RecallResult, session_id: str | None, now: dt.datetime) -> pl.DataFrame:
    """The recall's recall_log row."""
    ids = [h.block_id for h in result.results]
    return pl.DataFrame(
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
                          "prefetch_id": pl.Utf8, "gap_hint": pl.Utf8, "created_at": pl.Datetime("us")},
    )  # fmt: skip


def _audit_frame(
    run_ids: pl.Series | list[str],
    action: str,
    table: str,
    target_ids: pl.Series | list[str],
    before: pl.Series | None,
    after: pl.Series,
    reasons: pl.Series,
    order: range | list[int],
    part: int,
) -> pl.DataFrame:
    n = len(after)
    return pl.DataFrame(
        {
            "run_id": pl.Series(run_ids, dtype=pl.Utf8),
            "phase": ["recall"] * n,
            "action": [action] * n,
            "target_table": [table] * n,
            "target_id": pl.Series(target_ids, dtype=pl.Utf8),
            "before_image": before if before is not None else pl.Series([None] * n, dtype=pl.Utf8),
            "after_image": after,
            "reason": reasons,
            "_order": pl.Series(list(order), dtype=pl.Int64),
            "_part": [part] * n,
        }
    )


def _bump(
    store: Store,
    table: str,
    uses: list[tuple[int, str, str, dt.datetime]],
    count: str,
    when: str,
    action: str,
    reason: str,
    part: int,
) -> list[pl.DataFrame]:
    """``count + 1`` and ``when = now`` on each row of ``uses`` (recall order, run id, row id,
    now), a row used by several recalls once per recall in their order; one UPDATE, and the
    audit rows (empty list: nothing to do) with each use's before- and after-image."""
    if not uses:
        return []
    base = rows_to_bump(store, table, sorted({u[2] for u in uses}))
    if base.is_empty():
        return []
    base = store.conform(table, base)
    columns = base.columns
    frame = (
        pl.DataFrame(
            {
                "_order": [u[0] for u in uses],
                "_run": [u[1] for u in uses],
                "id": [u[2] for u in uses],
                "_now": pl.Series([u[3] for u in uses], dtype=pl.Datetime("us")),
            }
        )
        .join(base, on="id", how="inner")
        .sort("_order", "id")
        .with_columns(
            _seen=pl.int_range(pl.len()).over("id"),
            _before_when=pl.col("_now").shift(1).over("id"),
        )
    )
    counted = pl.col(count).fill_null(0) + pl.col("_seen")
    before = frame.with_columns(
        pl.when(pl.col("_seen") == 0).then(pl.col(count)).otherwise(counted).alias(count),
        pl.when(pl.col("_seen") == 0).then(pl.col(when)).otherwise(pl.col("_before_when")).alias(when),
    )  # fmt: skip
    after = frame.with_columns((counted + 1).alias(count), pl.col("_now").alias(when))
    schema = store.table_schema(table)
    before_rows = before.select(pl.col(c).cast(schema[c]) for c in columns)
    after_rows = after.select(pl.col(c).cast(schema[c]) for c in columns)
    final = after_rows.with_columns(_order=frame["_order"]).sort("_order").group_by("id", maintain_order=True).last()  # fmt: skip
    changes = final.select("id", count, when)
    bump_uses(store, table, changes, count, when)
    reasons = pl.Series([reason.format(r) for r in frame["_run"]], dtype=pl.Utf8)
    return [
        _audit_frame(frame["_run"], action, table, frame["id"], _images(before_rows),
                     _images(after_rows), reasons, frame["_order"].to_list(), part)
    ]  # fmt: skip


def write_recall(store: Store, result: RecallResult, session_id: str | None, now: dt.datetime) -> None:  # fmt: skip
    """The recall's row, the blocks' access and the prefetched entry's hit, in one
    transaction, audited under the recall's run id (see :func:`write_recalls`)."""
    write_recalls(store, [(result, session_id, now)])
