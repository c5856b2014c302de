"""What makes two objects "the same", and the valid-time timeline of a functional predicate.

Conflict resolution (which writes the timeline) and point-in-time queries
(which read it, also before any dream ran) share these definitions, so a
question answered before consolidation gets the same answer after it.

The timeline of one (subject, functional predicate) is computed per group
with window functions, never pair by pair: statements are ordered by
``valid_at``; a *step* is one ``valid_at``; consecutive steps stating the same
object form a *run* (a span of the fact, however often it was restated); a
step stating several different objects at once is a *tie* and a run of its
own (only a judge can say which was right). Each statement ends where the next
run with another object begins.
"""

from __future__ import annotations

from itertools import pairwise

import polars as pl

from memvault.text_tokens import STOPWORDS, normalized_expr, normalized_words

GROUP = ["subject_id", "predicate"]


def object_key() -> pl.Expr:
    """Identity of an object: its entity id when it has one, else its normalized wording."""
    return (
        pl.when(pl.col("object_id").is_not_null())
        .then(pl.lit("id:") + pl.col("object_id"))
        .otherwise(pl.lit("tx:") + normalized_expr("object"))
        .alias("objkey")
    )


def content_tokens(text: str, ignore: frozenset[str] = frozenset()) -> frozenset[str]:
    """The words of an object that identify it (no stop words, no words of the predicate)."""
    return frozenset(t for t in normalized_words(text) if t not in STOPWORDS | ignore)


def pair_id(a: str, b: str) -> str:
    """The id of a pair of triples: both ids, sorted, joined by ``|``."""
    return "|".join(sorted((a, b)))


def functional_timeline(rows: pl.DataFrame) -> pl.DataFrame:
    """Annotate dated statements of functional predicates with their place in the timeline.

    ``rows`` needs ``id, subject_id, predicate, objkey, valid_at, created_at``
    (``valid_at`` not null). Adds:

    * ``run``: the span the statement belongs to (per group, ascending),
    * ``tie``: True when its ``valid_at`` states several different objects,
    * ``span_start_id``: the first statement of its object in its run (restatements merge into it),
    * ``change_at``: ``valid_at`` of the next statement with another object (null: none),
    * ``change_id``: that statement (first by ``created_at``, then id).
    """
    ordered = rows.sort([*GROUP, "valid_at", "created_at", "id"])
    steps = (
        ordered.group_by([*GROUP, "valid_at"], maintain_order=True)
        .agg(
            pl.col("objkey").n_unique().alias("n_keys"),
            pl.col("objkey").first().alias("only_key"),
        )
        .with_columns(
            pl.when(pl.col("n_keys") == 1)
            .then(pl.lit("k:") + pl.col("only_key"))
            .otherwise(pl.lit("tie:") + pl.col("valid_at").cast(pl.Utf8))
            .alias("sig")
        )
        .sort([*GROUP, "valid_at"])
    )
    steps = steps.with_columns(
        (pl.col("sig") != pl.col("sig").shift(1).over(GROUP)).fill_null(True).alias("new_run")
    ).with_columns(pl.col("new_run").cast(pl.Int64).cum_sum().over(GROUP).alias("run"))
    runs = (
        steps.group_by([*GROUP, "run"])
        .agg(pl.col("valid_at").min().alias("run_at"), pl.col("sig").first())
        .sort([*GROUP, "run"])
        .with_columns(
            pl.col("run_at").shift(-1).over(GROUP).alias("next1_at"),
            pl.col("sig").shift(-1).over(GROUP).alias("next1_sig"),
            pl.col("run_at").shift(-2).over(GROUP).alias("next2_at"),
        )
    )
    out = ordered.join(
        steps.select(*GROUP, "valid_at", "run", (pl.col("n_keys") > 1).alias("tie")),
        on=[*GROUP, "valid_at"],
    ).join(runs.select(*GROUP, "run", "next1_at", "next1_sig", "next2_at"), on=[*GROUP, "run"])
    out = out.sort([*GROUP, "valid_at", "created_at", "id"])
    # A run never follows a run of the same object, so only a tie can be followed by its own object.
    out = out.with_columns(
        pl.when(pl.col("next1_sig") == pl.lit("k:") + pl.col("objkey"))
        .then(pl.col("next2_at"))
        .otherwise(pl.col("next1_at"))
        .alias("change_at"),
        pl.col("id").first().over([*GROUP, "run", "objkey"]).alias("span_start_id"),
    )
    candidates = out.select(
        *GROUP,
        pl.col("valid_at").alias("change_at"),
        pl.col("objkey").alias("change_key"),
        pl.col("id").alias("change_id"),
        pl.col("created_at").alias("change_created"),
    )
    change = (
        out.filter(pl.col("change_at").is_not_null())
        .select("id", *GROUP, "change_at", "objkey")
        .join(candidates, on=[*GROUP, "change_at"])
        .filter(pl.col("change_key") != pl.col("objkey"))
        .sort("id", "change_created", "change_id")
        .group_by("id", maintain_order=True)
        .agg(pl.col("change_id").first())
    )
    return out.join(change, on="id", how="left", maintain_order="left").drop(
        "next1_at", "next1_sig", "next2_at"
    )


def stale_statements(rows: pl.DataFrame) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """What is stale in the timelines of ``rows`` (functional predicates), as pairs of ids.

    ``rows`` needs ``id, subject_id, predicate, objkey, valid_at, created_at`` (``valid_at``
    not null). Returns (``ended``, ``tied``): ``ended`` pairs a statement with the
    statement of another object that ends it (:func:`functional_timeline`'s ``change_id``;
    restatements of one object all end there); ``tied`` pairs statements of different
    objects stated for the same time that nothing later ends (only a judge or a person can
    say which holds), each with the next one of another object, in timeline order.
    """
    if rows.is_empty():
        return [], []
    timeline = functional_timeline(rows)
    ended = [
        (str(r["id"]), str(r["change_id"]))
        for r in timeline.filter(pl.col("change_id").is_not_null()).iter_rows(named=True)
    ]
    tied: list[tuple[str, str]] = []
    open_ties = timeline.filter(pl.col("tie") & pl.col("change_id").is_null())
    for _, step in open_ties.group_by([*GROUP, "valid_at"], maintain_order=True):
        firsts = step.unique("objkey", keep="first", maintain_order=True)["id"].to_list()
        tied += [(str(a), str(b)) for a, b in pairwise(firsts)]
    return ended, tied


def follow_merges(rows: pl.DataFrame, max_hops: int = 64) -> pl.DataFrame:
    """Where each triple lives on: ``id → survivor`` following ``superseded_by`` of merged rows.

    ``rows`` needs ``id, status, superseded_by``. The result has ``id, survivor,
    hops``; ``survivor`` is null when a chain leads to a missing triple or loops.
    """
    step = rows.select(
        "id",
        pl.when(pl.col("status") == "merged")
        .then(pl.col("superseded_by"))
        .otherwise(pl.col("id"))
        .alias("next"),
    )
    state = rows.select(
        "id", pl.col("id").alias("survivor"), pl.lit(0, dtype=pl.Int64).alias("hops")
    )
    for _ in range(max_hops + 1):
        moved = state.join(step, left_on="survivor", right_on="id", how="left").with_columns(
            (pl.col("survivor").is_not_null() & pl.col("next").is_null()).alias("missing"),
            (pl.col("next").is_not_null() & (pl.col("next") != pl.col("survivor"))).alias("moving"),
        )
        if not (moved["moving"] | moved["missing"]).any():
            return state
        state = moved.select(
            "id",
            pl.when(pl.col("missing"))
            .then(None)
            .when(pl.col("moving"))
            .then(pl.col("next"))
            .otherwise(pl.col("survivor"))
            .cast(pl.Utf8)
            .alias("survivor"),
            (pl.col("hops") + pl.col("moving").cast(pl.Int64)).alias("hops"),
        )
    # Still moving after max_hops: the chain loops.
    last = state.join(step, left_on="survivor", right_on="id", how="left")
    looping = pl.col("next").is_not_null() & (pl.col("next") != pl.col("survivor"))
    return last.select(
        "id", pl.when(looping).then(None).otherwise(pl.col("survivor")).alias("survivor"), "hops"
    )


def restatement_merges(rows: pl.DataFrame, functional: list[str]) -> pl.DataFrame:
    """Merged, dated statements of functional predicates that restate their survivor's object.

    Such a statement keeps its place on the timeline: merging it was right only
    while nothing of another object was known between it and its survivor, so
    conflict resolution and point-in-time answers keep reading it as the
    statement it is (a late statement landing in between splits the run again).
    ``rows`` needs ``id, status, superseded_by, predicate, objkey, valid_at``;
    returns ``id, survivor`` (where its chain of merges ends now).
    """
    merged = rows.filter(
        (pl.col("status") == "merged")
        & pl.col("predicate").is_in(functional)
        & pl.col("valid_at").is_not_null()
    )
    if merged.is_empty():
        return pl.DataFrame(schema={"id": pl.Utf8, "survivor": pl.Utf8})
    survivors = follow_merges(rows.select("id", "status", "superseded_by"))
    keys = rows.select(pl.col("id").alias("survivor"), pl.col("objkey").alias("survivor_key"))
    return (
        merged.select("id", "objkey")
        .join(survivors.select("id", "survivor"), on="id")
        .join(keys, on="survivor")
        .filter(pl.col("objkey") == pl.col("survivor_key"))
        .select("id", "survivor")
    )
