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
from memvault.store.queries import triples as triple_rows
from memvault.temporal.conflict.model import typed
from memvault.temporal.grounding import Grounding, grounding_violations
from memvault.temporal.timeline import follow_merges
from memvault.text_tokens import normalized_expr

__all__ = ["bitemporal_overlaps", "data_loss_violations", "grounding_violations"]

_LOSS_SCHEMA = {"triple_id": pl.Utf8(), "status": pl.Utf8(), "problem": pl.Utf8()}

_LINEAGE = pl.List(pl.Struct({"id": pl.Utf8, "object": pl.Utf8}))


_ROW_SCHEMA = {
    "id": pl.Utf8(),
    "status": pl.Utf8(),
    "invalid_at": pl.Datetime("us"),
    "superseded_by": pl.Utf8(),
    "object": pl.Utf8(),
}
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
        missing = typed(triple_rows.missing_ingested_triples(store), {"triple_id": pl.Utf8()})
        rows = typed(triple_rows.triple_states(store), _ROW_SCHEMA)
        return _loss_problems(store, missing.unique(), rows, None)
    ids = sorted(set(triple_ids))
    if not ids:
        return pl.DataFrame(schema=_LOSS_SCHEMA)
    missing = typed(triple_rows.missing_ingested_triples(store, ids), {"triple_id": pl.Utf8()})
    affected = _merged_into(store, ids)
    rows = _with_chains(store, affected)
    return _loss_problems(store, missing.unique(), rows, affected)


def _merged_into(store: Store, ids: list[str]) -> list[str]:
    """``ids`` and every triple whose chain of merges passes through one of them."""
    found, frontier = set(ids), ids
    for _ in range(_MAX_CHAIN):
        if not frontier:
            break
        frontier = sorted(triple_rows.merged_into(store, frontier) - found)
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
        frame = typed(triple_rows.triple_states(store, sorted(wanted)), _ROW_SCHEMA)
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
    only = survivors.drop_nulls().to_list() if by_id else None
    found = triple_rows.non_empty_lineages(store, only)
    lineage = typed(found, {"id": pl.Utf8(), "lineage": pl.Utf8()}).join(
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
    ids = None if triple_ids is None else sorted(set(triple_ids))
    run = bool(functional) and (ids is None or bool(ids))
    found = typed(
        triple_rows.overlapping_current_facts(store, functional, ids) if run else pl.DataFrame(),
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
