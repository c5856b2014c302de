"""Point-in-time queries over the bi-temporal facts (design.md).

``asof(store, subject, predicate, at)`` answers "what was true on ``at``" from
``valid_at``/``invalid_at``; with ``known_at`` it answers "what did the store
believe then" from ``created_at``/``expired_at`` as well. The answer does not
depend on whether a dream has consolidated the store yet: functional
predicates get their timeline at read time by the same rule the dream writes
(:mod:`memvault.temporal.timeline`), restatements are shown once, and merged
triples are represented by their survivor.

Conventions: a statement without ``valid_at`` holds from when the store
learned it (``created_at``); a ``date`` means the start of that day (UTC).
With ``known_at``, a statement the dream retired later (``expired_at`` after
``known_at``) is seen as the store saw it then, open-ended; a statement that
is retracted (invalidated/archived) counts only before it was retracted.
"""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
from pydantic import BaseModel, Field

from memvault.errors import MemvaultError
from memvault.normalize import canonical_name, to_utc_naive, utcnow
from memvault.store import Store
from memvault.store.queries.entities import entities_named, entities_with_aliases_like, entity_name
from memvault.store.queries.triples import subject_statements
from memvault.temporal.conflict.model import ROW_SCHEMA, typed
from memvault.temporal.grounding import Grounding
from memvault.temporal.timeline import (
    GROUP,
    follow_merges,
    functional_timeline,
    object_key,
    restatement_merges,
)


class SubjectNotFoundError(MemvaultError):
    """No entity has that id or name."""


class AmbiguousSubjectError(MemvaultError):
    """Several entities have that name; the caller must pick one by id."""

    def __init__(self, name: str, candidates: list[tuple[str, str, str]]) -> None:
        self.name = name
        self.candidates = candidates
        listed = "; ".join(f"{i} ({kind}, {shown})" for i, shown, kind in candidates)
        super().__init__(
            f"{len(candidates)} entities are named {name!r}: {listed}; ask again with one of these ids"
        )


class FactAt(BaseModel):
    """One fact as it held at the asked time."""

    triple_id: str = Field(description="The statement that represents the fact")
    subject_id: str
    subject: str
    predicate: str
    object: str
    object_id: str | None = None
    valid_at: dt.datetime | None = Field(description="Since when it held (valid time)")
    invalid_at: dt.datetime | None = Field(description="Until when it held, as far as known")
    known_since: dt.datetime = Field(description="When the store first learned it")
    expired_at: dt.datetime | None = Field(description="When the store retired the statement")
    status: str
    confidence: float
    source_session: str | None = None
    merged_ids: list[str] = Field(
        default_factory=list, description="Statements of the same fact it stands for"
    )
    note: str | None = None


def _as_time(value: dt.datetime | dt.date | str | None) -> dt.datetime | None:
    """A naive UTC datetime from a datetime, a date (its start) or an ISO 8601 string."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise MemvaultError(
                f"{value!r} is not a date or time (use YYYY-MM-DD[THH:MM])"
            ) from exc
    if isinstance(value, dt.datetime):
        try:
            return to_utc_naive(value)
        except ValueError:  # 0001-01-01T00:30+01:00 is before year 1 in UTC
            raise MemvaultError(
                f"{value.isoformat()} is out of range: in UTC it falls outside the years 1 to 9999"
            ) from None
    return dt.datetime(value.year, value.month, value.day)


def resolve_subject(store: Store, subject: str) -> tuple[str, str]:
    """The (id, name) of the entity ``subject`` names: an id, a canonical name or an alias."""
    name = entity_name(store, subject)
    if name is not None:
        return subject, name
    key = canonical_name(subject)
    found = entities_named(store, key)
    if not found:
        candidates = entities_with_aliases_like(store, key)
        found = [
            (i, n, k)
            for i, n, k, aliases in candidates
            if key in {canonical_name(a) for a in json.loads(aliases or "[]")}
        ]
    if not found:
        raise SubjectNotFoundError(
            f"no entity has the id or name {subject!r}; `memvault export --type entity` lists them"
        )
    if len(found) > 1:
        raise AmbiguousSubjectError(subject, [(r[0], r[1], r[2]) for r in found])
    return found[0][0], found[0][1]


def asof(
    store: Store,
    subject: str,
    predicate: str | None = None,
    at: dt.datetime | dt.date | str | None = None,
    *,
    known_at: dt.datetime | dt.date | str | None = None,
    grounding: Grounding | None = None,
) -> list[FactAt]:
    """What held for ``subject`` (and ``predicate``) at ``at`` (default: now).

    ``subject`` is an entity id or a name; an ambiguous name raises
    :class:`AmbiguousSubjectError` listing the candidates. With ``known_at``,
    only what the store knew then, as it believed it then.
    """
    grounding = grounding or Grounding.load()
    when = _as_time(at) or utcnow()
    known = _as_time(known_at)
    subject_id, subject_name = resolve_subject(store, subject)
    rows = typed(
        subject_statements(store, subject_id, list(ROW_SCHEMA), predicate),
        {**ROW_SCHEMA, "note": pl.Utf8()},
    )
    if rows.is_empty():
        return []
    rows = rows.with_columns(object_key())
    functional = [p for p in rows["predicate"].unique().to_list() if grounding.is_functional(p)]
    believed = _believed(rows, known, restatement_merges(rows, functional)["id"].to_list())
    if believed.is_empty():
        return []
    held = _holding(believed, functional, when)
    return [
        FactAt(subject=subject_name, **row)
        for row in held.sort("predicate", "valid_at", "object", nulls_last=True).iter_rows(
            named=True
        )
    ]


def _believed(rows: pl.DataFrame, known: dt.datetime | None, restated: list[str]) -> pl.DataFrame:
    """Statements as the store held them at ``known`` (None: now), with merged ids.

    Merged statements are represented by their survivor, except ``restated`` ones (merged
    restatements of a functional predicate), which keep their own place on the timeline.
    """
    is_restated = pl.col("id").is_in(restated)
    survivors = follow_merges(rows.select("id", "status", "superseded_by"))
    members = (
        rows.filter(~is_restated)
        .select("id", "created_at")
        .join(survivors, on="id")
        .filter(pl.col("survivor").is_not_null())
        .group_by("survivor")
        .agg(
            pl.col("created_at").min().alias("known_since"),
            pl.col("id").filter(pl.col("id") != pl.col("survivor")).sort().alias("merged_ids"),
        )
    )
    live = rows.filter((pl.col("status") != "merged") | is_restated).join(
        members, left_on="id", right_on="survivor", how="left"
    )
    live = live.with_columns(
        pl.col("known_since").fill_null(pl.col("created_at")),
        pl.col("merged_ids").fill_null(pl.lit([], dtype=pl.List(pl.Utf8))),
    )
    timeline_status = pl.col("status").is_in(["active", "superseded"]) | is_restated
    if known is None:
        return live.filter(timeline_status).with_columns(pl.col("invalid_at").alias("held_until"))
    retired_later = pl.col("expired_at").is_not_null() & (pl.col("expired_at") > known)
    believed = live.filter((pl.col("known_since") <= known) & (timeline_status | retired_later))
    return believed.with_columns(
        pl.when((pl.col("status") == "superseded") & retired_later)
        .then(None)
        .otherwise(pl.col("invalid_at"))
        .alias("held_until")
    )


def _holding(believed: pl.DataFrame, functional: list[str], when: dt.datetime) -> pl.DataFrame:
    """The statements holding at ``when``, one per fact."""
    frame = believed.with_columns(
        object_key(), pl.coalesce("valid_at", "created_at").alias("start")
    )
    is_functional = pl.col("predicate").is_in(functional)
    func = frame.filter(is_functional)
    parts = []
    if func.height:
        timeline = functional_timeline(
            func.select("id", *GROUP, "objkey", pl.col("start").alias("valid_at"), "created_at")
        ).select("id", "run", "change_at", "span_start_id")
        func = func.join(timeline, on="id").with_columns(
            pl.min_horizontal("held_until", "change_at").alias("held_until"),
            pl.col("span_start_id").alias("fact"),
        )
        parts.append(func.drop("run", "change_at", "span_start_id"))
    multi = frame.filter(~is_functional)
    if multi.height:
        first = (
            multi.sort("start", "created_at", "id")
            .group_by([*GROUP, "objkey"])
            .agg(pl.col("id").first().alias("fact"))
        )
        parts.append(multi.join(first, on=[*GROUP, "objkey"]))
    rows = pl.concat(parts, how="diagonal_relaxed")
    holding = rows.filter(
        (pl.col("start") <= when) & (pl.col("held_until").is_null() | (pl.col("held_until") > when))
    )
    # One row per fact: its earliest statement that holds, standing for the others.
    facts = (
        holding.sort("start", "created_at", "id")
        .group_by("fact", maintain_order=True)
        .agg(
            pl.all().exclude("merged_ids", "known_since").first(),
            pl.col("known_since").min(),
            pl.col("merged_ids").explode().alias("absorbed"),
            pl.col("id").alias("restated"),
        )
    )
    return facts.select(
        pl.col("id").alias("triple_id"),
        "subject_id",
        "predicate",
        "object",
        "object_id",
        pl.col("start").alias("valid_at"),
        pl.col("held_until").alias("invalid_at"),
        "known_since",
        "expired_at",
        "status",
        "confidence",
        "source_session",
        pl.concat_list("absorbed", "restated")
        .list.set_difference(pl.concat_list(pl.col("id")))
        .list.drop_nulls()
        .list.unique()
        .list.sort()
        .alias("merged_ids"),
        "note",
    )
