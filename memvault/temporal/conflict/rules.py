"""What conflict resolution settles without a model, rule by rule.

* Restatement: the same object stated twice (exact after normalization) is merged into
  the statement it restates, keeping lineage (:func:`multi_duplicates`,
  :func:`place_undated`, :func:`restatement_actions`); a merged restatement that another
  object now interrupts is split off again (:func:`split_run_actions`).
* One value at a time (T6): a functional, volatile predicate gets its timeline from
  ``valid_at`` order, each span ending where the next different object begins
  (:func:`timeline_actions`); a span whose successor is gone holds again
  (:func:`reopen_actions`). A late statement about the past becomes a historical span, it
  does not retire what is newer.
* Preference versions (T4): a version chain recorded in ``attitudes`` retires the older
  version with a date (:func:`preference_links`, :func:`preference_chain_actions`).

Every rule keeps off what a judge retired. :func:`rule_actions` runs them all, in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from memvault.temporal.conflict.model import ActionKind, ConflictAction
from memvault.temporal.timeline import GROUP
from memvault.text_tokens import normalized_expr

# =========================================================================== what the rules find


def _start() -> pl.Expr:
    """When a statement starts to hold: its valid_at, else when the store learned it."""
    return pl.coalesce("valid_at", "created_at")


def multi_duplicates(multi: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Exact restatements of multi-valued predicates: (merges loser → into, representatives).

    The representative of an object is its earliest statement; a restatement
    merges into it unless it starts after the representative stopped holding
    (then it is a new span, e.g. a preference taken up again).
    """
    ordered = multi.sort([*GROUP, "objkey", "valid_at", "created_at", "id"], nulls_last=True)
    ordered = ordered.with_columns(
        pl.col("id").first().over([*GROUP, "objkey"]).alias("into"),
        pl.col("invalid_at").first().over([*GROUP, "objkey"]).alias("into_invalid_at"),
    )
    dup = (pl.col("id") != pl.col("into")) & (
        pl.col("into_invalid_at").is_null() | (_start() < pl.col("into_invalid_at"))
    )
    merges = ordered.filter(dup).select("id", "into")
    reps = ordered.filter(~dup)
    return merges, reps


def place_undated(
    undated: pl.DataFrame, timeline: pl.DataFrame, protected: set[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Functional statements without valid_at: (merges loser → into, pairs to judge).

    The same object as a dated span merges into the span in effect when the
    store learned it (else that object's first span); another undated statement
    of the same object merges into the first one. What is left, and a
    restatement of something a judge retired, is paired with the spans in
    effect when it was learned and with the other undated objects.
    """
    spans = timeline.filter(pl.col("id") == pl.col("span_start_id")).select(
        *GROUP, "objkey", "valid_at", "change_at", pl.col("id").alias("into")
    )
    learned = undated.sort("created_at", "id")
    in_effect_same = learned.join_asof(
        spans.sort("valid_at"),
        left_on="created_at",
        right_on="valid_at",
        by=[*GROUP, "objkey"],
        strategy="backward",
        suffix="_span",
        check_sortedness=False,
    ).select("id", *GROUP, "objkey", "created_at", "into")
    first_span = (
        spans.sort("valid_at")
        .group_by([*GROUP, "objkey"], maintain_order=True)
        .agg(pl.col("into").first().alias("first_into"))
    )
    resolved = in_effect_same.join(first_span, on=[*GROUP, "objkey"], how="left").with_columns(
        pl.coalesce("into", "first_into").alias("into")
    )
    to_dated = resolved.filter(pl.col("into").is_not_null()).select("id", "into")
    alone = resolved.filter(pl.col("into").is_null()).sort("created_at", "id")
    alone = alone.with_columns(pl.col("id").first().over([*GROUP, "objkey"]).alias("first"))
    among_undated = alone.filter(pl.col("id") != pl.col("first")).select(
        "id", pl.col("first").alias("into")
    )
    merges = pl.concat([to_dated, among_undated])
    blocked = merges.filter(pl.col("into").is_in(sorted(protected)))["id"].to_list()
    reps = resolved.filter(
        pl.col("id").is_in(alone.filter(pl.col("id") == pl.col("first"))["id"].to_list() + blocked)
    ).select("id", *GROUP, "objkey", "created_at")

    in_effect = reps.join(spans, on=GROUP, suffix="_span").filter(
        (pl.col("valid_at") <= pl.col("created_at"))
        & (pl.col("change_at").is_null() | (pl.col("change_at") > pl.col("created_at")))
    )
    effect = in_effect.filter(pl.col("objkey") != pl.col("objkey_span"))
    earliest = (
        spans.filter(pl.col("valid_at") == pl.col("valid_at").min().over(GROUP))
        .join(reps, on=GROUP, suffix="_rep")
        .filter(pl.col("objkey") != pl.col("objkey_rep"))
        .join(in_effect.select("id"), on="id", how="anti")
        .select("id", "into")
    )
    with_dated = pl.concat([effect.select("id", "into"), earliest])
    between = (
        reps.join(reps, on=GROUP, suffix="_b")
        .filter((pl.col("id") < pl.col("id_b")) & (pl.col("objkey") != pl.col("objkey_b")))
        .select("id", pl.col("id_b").alias("into"))
    )
    pairs = pl.concat([with_dated, between]).select(
        pl.min_horizontal("id", "into").alias("a"), pl.max_horizontal("id", "into").alias("b")
    )
    return merges.filter(~pl.col("id").is_in(blocked)), pairs


def preference_links(attitudes: pl.DataFrame, prefs: pl.DataFrame) -> pl.DataFrame:
    """(old, new) statements of one preference whose attitudes form a version chain (T4).

    A statement belongs to an attitude when the attitude's statement ends with
    its object and lists its source session as evidence; a statement matching
    several attitudes is left alone.
    """
    empty = pl.DataFrame(schema={"old": pl.Utf8, "new": pl.Utf8})
    if prefs.is_empty() or attitudes.is_empty():
        return empty
    attitudes = attitudes.select(
        pl.col("id").alias("attitude_id"),
        "previous_id",
        normalized_expr("statement").alias("said"),
        pl.col("evidence").fill_null("[]").str.json_decode(pl.List(pl.Utf8)).alias("session"),
    ).explode("session")
    owned = (
        prefs.select(
            "id",
            *GROUP,
            "source_session",
            "valid_at",
            "created_at",
            normalized_expr("object").alias("obj"),
        )
        .join(attitudes, left_on="source_session", right_on="session")
        .filter(
            (pl.col("said") == pl.col("obj"))
            | pl.col("said").str.ends_with(pl.lit(" ") + pl.col("obj"))
        )
        .unique(["id", "attitude_id"])
    )
    owned = owned.filter(pl.len().over("id") == 1)
    owned = owned.sort("valid_at", "created_at", "id", nulls_last=True).unique(
        "attitude_id", keep="first", maintain_order=True
    )
    versions = owned.select("id", *GROUP, "attitude_id", "previous_id", "valid_at")
    return (
        versions.join(
            versions,
            left_on=[*GROUP, "previous_id"],
            right_on=[*GROUP, "attitude_id"],
            suffix="_old",
        )
        .filter(
            pl.col("valid_at").is_null()
            | pl.col("valid_at_old").is_null()
            | (pl.col("valid_at_old") <= pl.col("valid_at"))
        )
        .select(pl.col("id_old").alias("old"), pl.col("id").alias("new"))
    )


def _resolve_into(merges: pl.DataFrame, judged_into: dict[str, str]) -> pl.DataFrame:
    """Merge targets that the judge merged away in this plan point on to their survivor."""
    if not judged_into or merges.is_empty():
        return merges

    def final(target: str) -> str:
        seen = set()
        while target in judged_into and target not in seen:
            seen.add(target)
            target = judged_into[target]
        return target

    return merges.with_columns(pl.col("into").map_elements(final, return_dtype=pl.Utf8))


def _still_in_run(
    restated: pl.DataFrame, continuation: pl.DataFrame, merges: pl.DataFrame
) -> set[str]:
    """Merged restatements whose chain of merges, once the planned merges are made, ends where
    the timeline says their run starts."""
    if restated.is_empty():
        return set()
    planned = dict(zip(merges["id"].to_list(), merges["into"].to_list(), strict=True))
    run_start = dict(zip(continuation["id"].to_list(), continuation["into"].to_list(), strict=True))

    def final(row_id: str) -> str:
        seen: set[str] = set()
        while row_id in planned and row_id not in seen:
            seen.add(row_id)
            row_id = planned[row_id]
        return row_id

    return {
        row_id
        for row_id, survivor in restated.select("id", "survivor").iter_rows()
        if row_id in run_start and final(survivor) == final(run_start[row_id])
    }


# =========================================================================== rule actions


@dataclass(frozen=True)
class PlannedMerges:
    """The restatement merges the rules make now, and the merged restatements they split off."""

    merges: pl.DataFrame  # (id, into): merge id into into
    split_off: pl.DataFrame  # merged restatements that start a span of their own again
    losers: set[str]  # merged away: by a merge planned now, or by one that stays


def planned_merges(
    rows: pl.DataFrame,
    timeline: pl.DataFrame,
    undated_merges: pl.DataFrame,
    multi_merges: pl.DataFrame,
    protected: set[str],
    judged_into: dict[str, str],
) -> PlannedMerges:
    """Restatements merge into their run's start (dated), their span (undated) or their first
    statement (multi-valued), never into or out of what a judge retired. A merged restatement
    whose chain of merges still ends in the run it belongs to stays as it is; one that now
    starts a run of its own (or belongs to another run) is split off."""
    protected_list = sorted(protected)
    continuation = timeline.filter(pl.col("id") != pl.col("span_start_id")).select(
        "id", pl.col("span_start_id").alias("into")
    )
    restated = rows.filter(pl.col("restated")).select(
        "id", "survivor", "object", "valid_at", *GROUP
    )
    merges = _resolve_into(pl.concat([continuation, undated_merges, multi_merges]), judged_into)
    merges = merges.filter(
        ~pl.col("id").is_in(protected_list)
        & ~pl.col("into").is_in(protected_list)
        & (pl.col("id") != pl.col("into"))
    )
    kept = _still_in_run(restated, continuation, merges)
    merges = merges.filter(~pl.col("id").is_in(sorted(kept)))
    return PlannedMerges(
        merges=merges,
        split_off=restated.filter(~pl.col("id").is_in(sorted(kept))).sort("id"),
        losers=set(merges["id"].to_list()) | kept,
    )


def _by_rule(rule: str, kind: ActionKind, row: Mapping[str, Any], **fields: Any) -> ConflictAction:
    """An action a rule decided about the row's subject and predicate."""
    return ConflictAction(
        kind=kind,
        rule=rule,
        decided_by="rule",
        subject_id=row["subject_id"],
        predicate=row["predicate"],
        **fields,
    )


def _triples(rows: pl.DataFrame) -> pl.DataFrame:
    """What an action's reason and the already-done checks read of a triple."""
    return rows.select(
        "id", *GROUP, "object", "valid_at", "created_at", "status", "invalid_at", "superseded_by"
    )


def split_run_actions(split_off: pl.DataFrame) -> list[ConflictAction]:
    """UNMERGE: a statement of another object now lies between a restatement and its survivor."""
    return [
        _by_rule(
            "split_run",
            "unmerge",
            r,
            target_id=r["id"],
            other_id=r["survivor"],
            reason=f"'{r['object']}' of {r['valid_at']:%Y-%m-%d} no longer restates "
            f"{r['survivor']}: another object was stated in between",
        )
        for r in split_off.iter_rows(named=True)
    ]


def restatement_actions(rows: pl.DataFrame, merges: pl.DataFrame) -> list[ConflictAction]:
    """MERGE: the same object stated again joins the statement it restates, keeping lineage."""
    info = _triples(rows)
    detail = (
        merges.join(info, on="id")
        .join(
            info.select(pl.col("id").alias("into"), pl.col("object").alias("into_object")),
            on="into",
        )
        .sort("into", "valid_at", "created_at", "id", nulls_last=True)
    )
    return [
        _by_rule(
            "restatement",
            "merge",
            r,
            target_id=r["id"],
            other_id=r["into"],
            reason=f"'{r['object']}' restates '{r['into_object']}'",
        )
        for r in detail.iter_rows(named=True)
    ]


def _volatile_spans(timeline: pl.DataFrame, protected: set[str], losers: set[str]) -> pl.DataFrame:
    """The spans of functional, volatile predicates the rules may date (T6): not one a judge
    retired, not one merged away."""
    return timeline.filter(
        pl.col("volatile")
        & (pl.col("id") == pl.col("span_start_id"))
        & ~pl.col("id").is_in(sorted(protected) + sorted(losers))
    )


def timeline_actions(rows: pl.DataFrame, spans: pl.DataFrame) -> list[ConflictAction]:
    """SUPERSEDE (T6): every span ends where the next different object begins, unless it
    already does."""
    ends = spans.filter(pl.col("change_at").is_not_null())
    already = (
        (pl.col("status") == "active")
        & pl.col("invalid_at").is_not_null()
        & (pl.col("invalid_at") <= pl.col("change_at"))
    ) | (
        (pl.col("status") == "superseded")
        & (pl.col("invalid_at") == pl.col("change_at"))
        & (pl.col("superseded_by") == pl.col("change_id"))
    )
    ends = ends.filter(~already.fill_null(False)).join(
        rows.select(pl.col("id").alias("change_id"), pl.col("object").alias("new_object")),
        on="change_id",
    )
    return [
        _by_rule(
            "timeline",
            "supersede",
            r,
            target_id=r["id"],
            other_id=r["change_id"],
            invalid_at=r["change_at"],
            reason=f"'{r['new_object']}' holds from {r['change_at']:%Y-%m-%d}, so "
            f"'{r['object']}' stops holding then",
        )
        for r in ends.sort("id").iter_rows(named=True)
    ]


def reopen_actions(spans: pl.DataFrame, live: set[str]) -> list[ConflictAction]:
    """REOPEN: a span superseded by a statement that is no longer live holds again."""
    reopen = spans.filter(
        pl.col("change_at").is_null()
        & (pl.col("status") == "superseded")
        & pl.col("superseded_by").is_not_null()
        & ~pl.col("superseded_by").is_in(sorted(live))
    )
    return [
        _by_rule(
            "reopen",
            "reopen",
            r,
            target_id=r["id"],
            reason=f"no later statement of another object remains (was superseded by "
            f"{r['superseded_by']})",
        )
        for r in reopen.sort("id").iter_rows(named=True)
    ]


def preference_chain_actions(
    rows: pl.DataFrame,
    links: pl.DataFrame,
    protected: set[str],
    losers: set[str],
    judged_into: dict[str, str],
) -> list[ConflictAction]:
    """SUPERSEDE (T4): a preference's older version is retired, dated, when the attitudes chain
    says a newer one replaced it; it is kept as an earlier version."""
    if not links.height:
        return []
    info = _triples(rows)
    gone = sorted(losers) + sorted(judged_into)
    chain = (
        links.filter(~pl.col("old").is_in(sorted(protected) + gone))
        .filter(~pl.col("new").is_in(gone))
        .join(info, left_on="old", right_on="id")
        .join(
            info.select(
                pl.col("id").alias("new"),
                pl.col("object").alias("new_object"),
                _start().alias("new_start"),
            ),
            on="new",
        )
    )
    done = (
        (pl.col("status") == "superseded")
        & (pl.col("invalid_at") == pl.col("new_start"))
        & (pl.col("superseded_by") == pl.col("new"))
    )
    return [
        _by_rule(
            "preference_chain",
            "supersede",
            r,
            target_id=r["old"],
            other_id=r["new"],
            invalid_at=r["new_start"],
            reason=f"newer version '{r['new_object']}' from {r['new_start']:%Y-%m-%d}; "
            f"'{r['object']}' is kept as an earlier version",
        )
        for r in chain.filter(~done.fill_null(False)).sort("old").iter_rows(named=True)
    ]


def rule_actions(
    rows: pl.DataFrame,
    timeline: pl.DataFrame,
    undated_merges: pl.DataFrame,
    multi_merges: pl.DataFrame,
    links: pl.DataFrame,
    protected: set[str],
    judged_into: dict[str, str],
) -> list[ConflictAction]:
    """Everything the rules decide: split runs, restatement merges, the T6 timeline (its ends
    and reopenings) and the T4 preference chain, in that order."""
    planned = planned_merges(rows, timeline, undated_merges, multi_merges, protected, judged_into)
    spans = _volatile_spans(timeline, protected, planned.losers)
    live = set(rows["id"].to_list()) - planned.losers - set(judged_into)
    return [
        *split_run_actions(planned.split_off),
        *restatement_actions(rows, planned.merges),
        *timeline_actions(rows, spans),
        *reopen_actions(spans, live),
        *preference_chain_actions(rows, links, protected, planned.losers, judged_into),
    ]
