"""The candidates of conflict resolution: the triples it reads and the pairs it asks about.

Reading: the triples in (subject, predicate) groups of two or more live statements
(:func:`candidate_rows`), the verdicts already given, the attitudes chain, and each
statement as the judge is shown it (:func:`judged_statements`). Then
:class:`CandidateState` lays them out as the rules see them (the timeline, the merges the
rules found, the preference versions) and lists the pairs only a judge can settle:
different objects for the same ``valid_at``, a stable predicate that changed, undated
statements, and two wordings of a multi-valued predicate that look like the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from memvault.store import Store
from memvault.store.queries.entities import entity_labels_of
from memvault.store.queries.layers import attitude_versions
from memvault.store.queries.triples import conflict_candidates, statement_context, triples_by_id
from memvault.store.queries.verdicts import all_verdicts
from memvault.temporal.conflict.judge import ConflictStatement, entity_names
from memvault.temporal.conflict.model import ROW_SCHEMA, ConflictConfig, typed
from memvault.temporal.conflict.rules import multi_duplicates, place_undated, preference_links
from memvault.temporal.grounding import Grounding
from memvault.temporal.timeline import (
    GROUP,
    functional_timeline,
    object_key,
    restatement_merges,
)
from memvault.text_tokens import STOPWORDS, normalized_expr


def candidate_rows(
    store: Store, grounding: Grounding, triple_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Triples in (subject, predicate) groups of two or more live statements, with their flags
    (``triple_ids``: only the groups of those facts).

    Merged restatements of functional predicates come along (column ``restated``): they
    keep their place on the timeline, so a late statement that lands between one and its
    survivor splits that run again (:func:`memvault.temporal.timeline.restatement_merges`).
    """
    flags = grounding.frame().select("predicate", "functional", "volatile", "preference")
    functional = flags.filter(pl.col("functional"))["predicate"].to_list()
    ids = None if triple_ids is None else sorted(set(triple_ids))
    rows = typed(conflict_candidates(store, functional, ids), ROW_SCHEMA)
    rows = rows.with_columns(object_key())
    restated = restatement_merges(rows, functional)
    return (
        rows.join(restated, on="id", how="left")
        .filter((pl.col("status") != "merged") | pl.col("survivor").is_not_null())
        .with_columns(pl.col("survivor").is_not_null().alias("restated"))
        .join(flags, on="predicate", how="left")
        .with_columns(pl.col("functional", "volatile", "preference").fill_null(False))
        .sort("id")
    )


def known_verdicts(store: Store) -> pl.DataFrame:
    """Every pair a judge has decided: a pair is never asked twice."""
    schema = {
        "id": pl.Utf8(),
        "triple_a": pl.Utf8(),
        "triple_b": pl.Utf8(),
        "verdict": pl.Utf8(),
        "status": pl.Utf8(),
    }
    return typed(all_verdicts(store), schema)


def judge_protected(rows: pl.DataFrame, verdicts: pl.DataFrame) -> set[str]:
    """Triples retired by an applied SUPERSEDE verdict: their dates are the judge's, rules keep off."""
    supersedes = verdicts.filter(
        (pl.col("verdict") == "SUPERSEDE") & (pl.col("status") == "applied")
    )
    if supersedes.is_empty():
        return set()
    sides = pl.concat(
        [
            supersedes.select(pl.col("triple_a").alias("old"), pl.col("triple_b").alias("new")),
            supersedes.select(pl.col("triple_b").alias("old"), pl.col("triple_a").alias("new")),
        ]
    )
    hit = sides.join(rows.select("id", "superseded_by", "status"), left_on="old", right_on="id")
    hit = hit.filter(
        (pl.col("superseded_by") == pl.col("new")) & (pl.col("status") == "superseded")
    )
    return set(hit["old"].to_list())


def load_attitudes(store: Store) -> pl.DataFrame:
    """The attitudes and their version chain (``previous_id``), for the preference rule."""
    schema = {"id": pl.Utf8(), "statement": pl.Utf8(), "evidence": pl.Utf8(),
              "previous_id": pl.Utf8()}  # fmt: skip
    return typed(attitude_versions(store), schema)


# =========================================================================== what the judge sees


def judged_statements(
    store: Store, rows: pl.DataFrame, ids: Sequence[str], max_chars: int
) -> dict[str, ConflictStatement]:
    context = typed(
        statement_context(store, ids),
        {
            "id": pl.Utf8(),
            "session_started_at": pl.Datetime("us"),
            "source_text": pl.Utf8(),
            "object_type": pl.Utf8(),
            "object_name": pl.Utf8(),
            "object_aliases": pl.Utf8(),
        },
    )
    joined = rows.filter(pl.col("id").is_in(list(ids))).join(context, on="id", how="left")
    out: dict[str, ConflictStatement] = {}
    for row in joined.iter_rows(named=True):
        text = row["source_text"]
        if text is not None and len(text) > max_chars:
            text = text[:max_chars] + " …"
        out[row["id"]] = ConflictStatement(
            triple_id=row["id"],
            object=row["object"],
            object_id=row["object_id"],
            object_type=row["object_type"],
            valid_at=row["valid_at"],
            invalid_at=row["invalid_at"],
            created_at=row["created_at"],
            source_session=row["source_session"],
            session_started_at=row["session_started_at"],
            source_text=text,
            confidence=float(row["confidence"]),
            status=row["status"],
            object_names=entity_names(row["object_name"], row["object_aliases"]),
        )
    return out


def subject_names(store: Store, ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
    return dict(entity_labels_of(store, ids))


def flagged_rows(store: Store, ids: Sequence[str], grounding: Grounding) -> pl.DataFrame:
    """Triples by id with the flags :func:`pair_requests` reads (``functional``, ``preference``)."""
    rows = typed(
        triples_by_id(store, sorted(set(ids)), ROW_SCHEMA),
        ROW_SCHEMA,
    )
    flags = grounding.frame().select("predicate", "functional", "preference")
    return (
        rows.with_columns(object_key())
        .join(flags, on="predicate", how="left")
        .with_columns(pl.col("functional", "preference").fill_null(False))
    )


# =========================================================================== pairs for the judge


def _similar_pairs(reps: pl.DataFrame, threshold: float) -> pl.DataFrame:
    """Pairs of different objects (at least one a literal) that share most of their words."""
    literal_groups = reps.group_by(GROUP).agg(pl.col("object_id").null_count().alias("literals"))
    reps = reps.join(literal_groups.filter(pl.col("literals") > 0), on=GROUP, how="semi")
    if reps.height < 2:
        return pl.DataFrame(schema={"a": pl.Utf8, "b": pl.Utf8})
    predicate_words = pl.col("predicate").str.split("_")
    words = (
        reps.select(
            "id",
            *GROUP,
            "object_id",
            "objkey",
            normalized_expr("object").str.split(" ").alias("word"),
            predicate_words.alias("ignore"),
        )
        .explode("word")
        .filter(
            (pl.col("word").str.len_chars() > 1)
            & ~pl.col("word").is_in(list(STOPWORDS))
            & ~pl.col("ignore").list.contains(pl.col("word"))
        )
        .unique(["id", "word"])
    )
    sizes = words.group_by("id").agg(pl.len().alias("n"))
    left = words.select("id", *GROUP, "objkey", "word", pl.col("object_id").is_null().alias("lit"))
    shared = (
        left.join(left, on=[*GROUP, "word"], suffix="_b")
        .filter(pl.col("id") < pl.col("id_b"))
        .filter((pl.col("lit") | pl.col("lit_b")) & (pl.col("objkey") != pl.col("objkey_b")))
        .group_by("id", "id_b")
        .agg(pl.len().alias("shared"))
        .join(sizes, on="id")
        .join(sizes.rename({"id": "id_b", "n": "n_b"}), on="id_b")
    )
    close = shared.filter(pl.col("shared") / pl.min_horizontal("n", "n_b") >= threshold)
    return close.select(pl.col("id").alias("a"), pl.col("id_b").alias("b"))


def _tie_pairs(timeline: pl.DataFrame) -> pl.DataFrame:
    """Different objects stated for the same valid_at (one statement per object)."""
    reps = timeline.filter(pl.col("tie") & (pl.col("id") == pl.col("span_start_id")))
    reps = reps.select("id", *GROUP, "valid_at")
    return (
        reps.join(reps, on=[*GROUP, "valid_at"], suffix="_b")
        .filter(pl.col("id") < pl.col("id_b"))
        .select(pl.col("id").alias("a"), pl.col("id_b").alias("b"))
    )


def _stable_change_pairs(timeline: pl.DataFrame) -> pl.DataFrame:
    """A stable functional predicate changed its object: the change is judged, not assumed."""
    changed = timeline.filter(
        ~pl.col("volatile")
        & (pl.col("id") == pl.col("span_start_id"))
        & pl.col("change_id").is_not_null()
    )
    return changed.select(
        pl.min_horizontal("id", "change_id").alias("a"),
        pl.max_horizontal("id", "change_id").alias("b"),
    )


def _pairs_frame(parts: list[tuple[pl.DataFrame, str]]) -> pl.DataFrame:
    frames = [
        df.select("a", "b").with_columns(pl.lit(why).alias("why")) for df, why in parts if df.height
    ]
    if not frames:
        return pl.DataFrame(schema={"a": pl.Utf8, "b": pl.Utf8, "why": pl.Utf8})
    return pl.concat(frames).unique(["a", "b"], keep="first", maintain_order=True)


@dataclass
class CandidateState:
    """The candidates as they stand once the judged verdicts so far are applied."""

    timeline: pl.DataFrame
    undated_merges: pl.DataFrame
    multi_merges: pl.DataFrame
    links: pl.DataFrame
    pairs: pl.DataFrame

    @classmethod
    def of(
        cls, rows: pl.DataFrame, attitudes: pl.DataFrame, protected: set[str],
        judged_into: dict[str, str], config: ConflictConfig,
    ) -> CandidateState:  # fmt: skip
        live = rows.filter(~pl.col("id").is_in(sorted(judged_into)))
        functional = live.filter(pl.col("functional"))
        timeline = functional_timeline(functional.filter(pl.col("valid_at").is_not_null()))
        undated_merges, undated_pairs = place_undated(
            functional.filter(pl.col("valid_at").is_null()), timeline, protected
        )
        multi_merges, multi_reps = multi_duplicates(live.filter(~pl.col("functional")))
        links = preference_links(attitudes, multi_reps.filter(pl.col("preference")))
        similar = _similar_pairs(multi_reps, config.similarity_threshold)
        if links.height:
            linked = links.select(
                pl.min_horizontal("old", "new").alias("a"),
                pl.max_horizontal("old", "new").alias("b"),
            )
            similar = similar.join(linked, on=["a", "b"], how="anti")
        pairs = _pairs_frame(
            [
                (_tie_pairs(timeline), "different objects stated for the same valid_at"),
                (_stable_change_pairs(timeline), "a stable predicate changed its object"),
                (undated_pairs, "at least one statement has no valid_at"),
                (similar, "two wordings of a multi-valued predicate look like the same thing"),
            ]
        )
        created = rows.select("id", "created_at")
        pairs = (
            pairs.with_columns(
                (pl.min_horizontal("a", "b") + pl.lit("|") + pl.max_horizontal("a", "b")).alias(
                    "pair_id"
                )
            )
            .join(created.rename({"id": "a", "created_at": "ca"}), on="a")
            .join(created.rename({"id": "b", "created_at": "cb"}), on="b")
            .sort(pl.min_horizontal("ca", "cb"), "pair_id")  # oldest first
        )
        return cls(timeline, undated_merges, multi_merges, links, pairs)
