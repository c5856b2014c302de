"""Checks of the temporal knowledge graph; each returns the offending rows (empty = pass).

The coordinator wraps them as Dagster asset checks: grounding (L2), no data
loss ("nothing is lost": every ingested triple is still there, and a retired
one is dated or lives on in a survivor's lineage), and bi-temporal consistency
(no two current facts of a functional predicate overlap in valid time).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import polars as pl

from memvault.store import Store
from memvault.temporal.conflict.model import typed
from memvault.temporal.grounding import Grounding, grounding_violations
from memvault.temporal.timeline import follow_merges
from memvault.text_tokens import normalized_expr

__all__ = ["bitemporal_overlaps", "data_loss_violations", "grounding_violations"]

_LOSS_SCHEMA = {"triple_id": pl.Utf8(), "status": pl.Utf8(), "problem": pl.Utf8()}

# Ingested triples that no longer exist, unless an undo of their ingest removed them on purpose.
_MISSING_SQL = """
SELECT a.target_id AS triple_id
FROM audit_log a
WHERE a.target_table = 'triples' AND a.action = 'ingest'
  AND NOT EXISTS (SELECT 1 FROM triples t WHERE t.id = a.target_id)
  AND NOT EXISTS (SELECT 1 FROM audit_log u WHERE u.target_table = 'triples'
                  AND u.target_id = a.target_id AND u.action = 'undo-remove' AND u.id > a.id)
"""

_LINEAGE = pl.List(pl.Struct({"id": pl.Utf8, "object": pl.Utf8}))


_ROW_SCHEMA = {
    "id": pl.Utf8(),
    "status": pl.Utf8(),
    "invalid_at": pl.Datetime("us"),
    "superseded_by": pl.Utf8(),
    "object": pl.Utf8(),
}
_ROWS_SQL = (
    "SELECT id, status, invalid_at, superseded_by, "
    "CASE WHEN status = 'merged' THEN object END AS object FROM triples"
)
#: Chains of merges longer than this are not followed by a scoped pass (a loop or a
#: pathological chain: the whole-store pass reports it).
_MAX_CHAIN = 64


def data_loss_violations(store: Store, triple_ids: Sequence[str] | None = None) -> pl.DataFrame:
    """Triples whose content could be lost: one row per problem (empty = pass).

    Every ingested triple must still exist; a superseded one must have
    ``invalid_at``; a merged one must lead (through ``superseded_by``) to a
    surviving triple whose ``lineage`` holds its id and wording.

    Only the lineage of survivors is read, and each survivor's lineage is
    decoded once however many statements it absorbed (a hub survivor of
    thousands of restatements would otherwise be decoded once per merged row).

    ``triple_ids``: only the problems of those triples and of the triples merged into them
    (directly or down a chain: a survivor that changed may have lost what they rely on); the
    rows read are theirs and their chains', not the store's. The problems found are the
    whole-store pass's problems of the same triples.
    """
    if triple_ids is None:
        missing = typed(store.fetch_df(_MISSING_SQL), {"triple_id": pl.Utf8()})
        rows = typed(store.fetch_df(_ROWS_SQL), _ROW_SCHEMA)
        return _loss_problems(store, missing.unique(), rows, None)
    ids = sorted(set(triple_ids))
    if not ids:
        return pl.DataFrame(schema=_LOSS_SCHEMA)
    missing = typed(
        store.fetch_df(_MISSING_SQL + " AND a.target_id = ANY(CAST(:ids AS TEXT[]))", {"ids": ids}),
        {"triple_id": pl.Utf8()},
    )
    affected = _merged_into(store, ids)
    rows = _with_chains(store, affected)
    return _loss_problems(store, missing.unique(), rows, affected)


def _merged_into(store: Store, ids: list[str]) -> list[str]:
    """``ids`` and every triple whose chain of merges passes through one of them."""
    found, frontier = set(ids), ids
    for _ in range(_MAX_CHAIN):
        if not frontier:
            break
        rows = store.fetch(
            "SELECT id FROM triples WHERE status = 'merged' "
            "AND superseded_by = ANY(CAST(:ids AS TEXT[]))",
            {"ids": frontier},
        )
        frontier = sorted({str(r[0]) for r in rows} - found)
        found |= set(frontier)
    return sorted(found)


def _with_chains(store: Store, ids: list[str]) -> pl.DataFrame:
    """The rows of ``ids`` and of every triple down their chains of merges."""
    frames: list[pl.DataFrame] = []
    seen: set[str] = set()
    wanted = ids
    for _ in range(_MAX_CHAIN):
        if not wanted:
            break
        seen |= set(wanted)
        frame = typed(
            store.fetch_df(
                _ROWS_SQL + " WHERE id = ANY(CAST(:ids AS TEXT[]))", {"ids": sorted(wanted)}
            ),
            _ROW_SCHEMA,
        )
        frames.append(frame)
        targets = frame.filter(pl.col("status") == "merged")["superseded_by"].drop_nulls()
        wanted = sorted(set(targets.to_list()) - seen)
    return pl.concat(frames) if frames else pl.DataFrame(schema=_ROW_SCHEMA)


def _loss_problems(
    store: Store, missing: pl.DataFrame, rows: pl.DataFrame, only: list[str] | None
) -> pl.DataFrame:
    """The problems of ``rows`` (with the chains they need), kept to ``only`` when given."""
    problems = [
        missing.select(
            "triple_id",
            pl.lit(None, dtype=pl.Utf8).alias("status"),
            pl.lit("ingested triple no longer exists").alias("problem"),
        )
    ]
    if rows.height:
        problems.append(
            rows.filter((pl.col("status") == "superseded") & pl.col("invalid_at").is_null()).select(
                pl.col("id").alias("triple_id"),
                "status",
                pl.lit("superseded without invalid_at").alias("problem"),
            )
        )
        merged = rows.filter(pl.col("status") == "merged")
        if only is not None:
            merged = merged.filter(pl.col("id").is_in(only))
        if merged.height:
            problems.append(_merge_problems(store, rows, merged, by_id=only is not None))
    found = pl.concat(problems)
    if only is not None:
        found = found.filter(pl.col("triple_id").is_in(only))
    return found.sort("triple_id", "problem")


def _merge_problems(
    store: Store, rows: pl.DataFrame, merged: pl.DataFrame, *, by_id: bool = False
) -> pl.DataFrame:
    chains = follow_merges(rows.select("id", "status", "superseded_by"))
    found = (
        merged.select("id", "object")
        .join(chains, on="id")
        .join(
            rows.select(pl.col("id").alias("survivor"), pl.col("status").alias("survivor_status")),
            on="survivor",
            how="left",
        )
    )
    broken = found.filter(
        pl.col("survivor").is_null() | (pl.col("survivor_status") == "merged")
    ).select(
        pl.col("id").alias("triple_id"),
        pl.lit("merged").alias("status"),
        pl.lit("merged, but its chain of survivors is broken or loops").alias("problem"),
    )
    reached = found.filter(
        pl.col("survivor").is_not_null() & (pl.col("survivor_status") != "merged")
    )
    entries = _lineage_entries(store, reached["survivor"].unique(), by_id=by_id)
    kept = reached.join(
        entries,
        left_on=["survivor", "id", "object"],
        right_on=["survivor", "entry_id", "entry_object"],
        how="semi",
    ).select("id")
    lost = reached.join(kept, on="id", how="anti").select(
        pl.col("id").alias("triple_id"),
        pl.lit("merged").alias("status"),
        pl.format("merged into {}, whose lineage lacks its id and wording", "survivor").alias(
            "problem"
        ),
    )
    return pl.concat([broken, lost])


def _lineage_entries(store: Store, survivors: pl.Series, *, by_id: bool = False) -> pl.DataFrame:
    """(survivor, entry_id, entry_object) of every entry in the lineage of ``survivors``
    (``by_id``: read by their ids, for a few survivors; else every non-empty lineage is read
    once and kept to theirs)."""
    schema = {"survivor": pl.Utf8(), "entry_id": pl.Utf8(), "entry_object": pl.Utf8()}
    if survivors.is_empty():
        return pl.DataFrame(schema=schema)
    # An empty lineage holds nothing; reading only the others keeps the transfer small.
    sql = "SELECT id, lineage FROM triples WHERE lineage IS NOT NULL AND lineage <> '[]'"
    params = None
    if by_id:
        sql += " AND id = ANY(CAST(:ids AS TEXT[]))"
        params = {"ids": survivors.drop_nulls().to_list()}
    lineage = typed(store.fetch_df(sql, params), {"id": pl.Utf8(), "lineage": pl.Utf8()}).join(
        survivors.to_frame("id"), on="id", how="semi"
    )
    if lineage.is_empty():
        return pl.DataFrame(schema=schema)
    return (
        lineage.select(
            pl.col("id").alias("survivor"),
            pl.col("lineage").str.json_decode(_LINEAGE).alias("entry"),
        )
        .explode("entry")
        .select(
            "survivor",
            pl.col("entry").struct.field("id").alias("entry_id"),
            pl.col("entry").struct.field("object").alias("entry_object"),
        )
        .filter(pl.col("entry_id").is_not_null())
    )


_OVERLAP_SCHEMA = {
    "subject_id": pl.Utf8(),
    "predicate": pl.Utf8(),
    "triple_a": pl.Utf8(),
    "triple_b": pl.Utf8(),
    "object_a": pl.Utf8(),
    "object_b": pl.Utf8(),
    "object_id_a": pl.Utf8(),
    "object_id_b": pl.Utf8(),
}

# Current (not merged, not retired) statements of the same functional predicate whose valid
# times overlap, unless a judge accepted both (COEXIST). Undated statements start when learned.
# The current functional statements are picked before the self-join: joining all triples of a
# subject first pairs up every multi-valued fact too (tens of millions of rows at 200k triples).
_OVERLAP_SQL = """
WITH current_facts AS (
    SELECT t.id, t.subject_id, t.predicate, t.object, t.object_id,
           COALESCE(t.valid_at, t.created_at) AS starts,
           COALESCE(t.invalid_at, TIMESTAMP '9999-12-31') AS ends
    FROM triples t {scope}
    WHERE t.predicate = ANY(:predicates)
      AND t.status NOT IN ('merged', 'invalidated', 'archived', 'held') AND t.expired_at IS NULL
)
SELECT a.subject_id, a.predicate, a.id AS triple_a, b.id AS triple_b,
       a.object AS object_a, b.object AS object_b, a.object_id AS object_id_a,
       b.object_id AS object_id_b
FROM current_facts a
JOIN current_facts b
  ON a.subject_id = b.subject_id AND a.predicate = b.predicate AND a.id < b.id
WHERE a.starts < b.ends AND b.starts < a.ends
  AND NOT EXISTS (SELECT 1 FROM conflict_verdicts v
                  WHERE (v.verdict = 'COEXIST' OR v.status IN ('review', 'expired', 'rejected')) AND v.id = a.id || '|' || b.id)
  AND NOT EXISTS (SELECT 1 FROM conflict_verdicts v
                  WHERE (v.verdict = 'COEXIST' OR v.status IN ('review', 'expired', 'rejected')) AND v.id = b.id || '|' || a.id)
"""
#: An incremental night's overlaps: the (subject, predicate) groups of the facts it changed.
_SCOPE_GROUPS = """
JOIN (SELECT DISTINCT subject_id, predicate FROM triples
      WHERE id = ANY(CAST(:ids AS TEXT[]))) g
  ON g.subject_id = t.subject_id AND g.predicate = t.predicate"""


def bitemporal_overlaps(
    store: Store, grounding: Grounding | None = None, triple_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Pairs of current facts of a functional predicate that overlap in valid time (empty = pass).

    ``triple_ids``: only the pairs in the (subject, predicate) groups of those facts (the
    whole-store pass's pairs of the same groups); only those groups' facts are read.

    A pair judged COEXIST holds together by decision; a pair waiting in the review queue is
    a human's to decide, so it does not make the store fail its own check meanwhile.

    Columns: subject_id, predicate, triple_a, triple_b, object_a, object_b,
    problem (different objects at once, or the same object stated twice).
    """
    grounding = grounding or Grounding.load()
    functional = sorted(p.name for p in grounding.predicates.values() if p.is_functional)
    params: dict[str, object] = {"predicates": functional}
    scope = ""
    if triple_ids is not None:
        params["ids"], scope = sorted(set(triple_ids)), _SCOPE_GROUPS
    run = bool(functional) and (triple_ids is None or bool(params.get("ids")))
    found = typed(
        store.fetch_df(_OVERLAP_SQL.format(scope=scope), params) if run else pl.DataFrame(),
        _OVERLAP_SCHEMA,
    )
    same = pl.coalesce(
        pl.when(pl.col("object_id_a").is_not_null() & pl.col("object_id_b").is_not_null()).then(
            pl.col("object_id_a") == pl.col("object_id_b")
        ),
        normalized_expr("object_a") == normalized_expr("object_b"),
    )
    return (
        found.with_columns(
            pl.when(same)
            .then(pl.lit("the same object stated twice over the same time (not merged)"))
            .otherwise(pl.lit("different objects hold at the same time"))
            .alias("problem")
        )
        .drop("object_id_a", "object_id_b")
        .sort("subject_id", "predicate", "triple_a", "triple_b")
    )


def lineage_ids(text: str | None) -> list[str]:
    """The triple ids a lineage JSON text holds (for reports)."""
    return [str(e.get("id")) for e in json.loads(text or "[]") if isinstance(e, dict)]
