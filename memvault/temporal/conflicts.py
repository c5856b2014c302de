"""Temporal conflict resolution (design.md T1–T6), planned first and applied second.

:func:`plan_conflicts` reads the store and decides; it writes nothing, so the
dream can log a dry run (D7) and the idempotency check can re-plan after an
apply and expect an empty plan. :func:`apply_conflict_plan`
(``memvault.temporal.conflict_apply``) writes the decisions in audited batches.

Cheap first, expensive last:

* Rules settle the obvious cases without a model: the same object stated
  twice (exact after normalization) is merged, keeping lineage; a functional,
  volatile predicate (T6) gets its timeline from ``valid_at`` order, each span
  ending where the next different object begins (a late statement about the
  past becomes a historical span, it does not retire what is newer); a
  preference version chain recorded in ``attitudes`` retires the older
  version with a date (T4).
* The judge sees only what rules cannot settle: different objects stated for
  the same ``valid_at`` or without one, a change of a stable functional
  predicate, and two wordings of a multi-valued predicate that look like the
  same thing. Two clearly different objects of a multi-valued predicate are
  not a conflict at all.
* A verdict below the confidence threshold is asked again of the stronger
  model; still unsure, it goes to the review queue and nothing changes (T3).
  Every judged pair gets a ``conflict_verdicts`` row and is never asked again.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from memvault.errors import JudgeError, MemvaultError
from memvault.judge.base import ask_each
from memvault.normalize import utcnow
from memvault.review.calibration import Calibration, calibrate
from memvault.review.impact import ImpactInputs, impact_score, subject_inputs
from memvault.review.policy import ReviewPolicy, route
from memvault.store import Store
from memvault.temporal.conflict_judge import (
    CONFIRM_CHANGE,
    RESOLVE_CONFLICT,
    ConfirmChangeRequest,
    ConfirmReply,
    ConflictReply,
    ConflictStatement,
    ProposedChange,
    ResolveConflictRequest,
    merge_refusal,
)
from memvault.temporal.grounding import Grounding, PredicateDef
from memvault.temporal.timeline import (
    GROUP,
    STOPWORDS,
    functional_timeline,
    normalize_object,
    normalized_text,
    object_key,
    pair_id,
    restatement_merges,
)

if TYPE_CHECKING:
    from memvault.judge.base import Judge

ActionKind = Literal["merge", "unmerge", "supersede", "reopen", "coexist", "review"]

#: Short reasons of the rules, written to the audit log (the triple's note says the details).
RULES: dict[str, str] = {
    "restatement": "rule: the same object stated again (exact after normalization) is merged",
    "timeline": "rule (one value at a time): a functional, volatile predicate holds one object at a time; "
    "the later valid_at wins",
    "reopen": "rule (one value at a time): the statement that superseded this one is gone, so it holds again",
    "split_run": "rule (one value at a time): a statement of another object now lies between this restatement and "
    "the statement it was merged into, so it starts a span of its own again",
    "preference_chain": "rule (preference versions): a newer version of the preference (attitudes chain) "
    "retires the older one, dated",
}


class ConflictConfig(BaseModel):
    """Thresholds and budgets of conflict resolution."""

    model_config = ConfigDict(extra="forbid")

    confidence_threshold: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="Below this a verdict escalates, then goes to review.",
    )
    batch_size: int = Field(
        default=200,
        ge=1,
        description="Actions per transaction when applying; requests per judge batch.",
    )
    max_judged_pairs: int = Field(
        default=50,
        ge=0,
        description="Pairs sent to the judge per run; the rest wait for the next run.",
    )
    review_deadline_days: int = Field(
        default=14, ge=1, description="Deadline of a queued review item."
    )
    similarity_threshold: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        description="Share of shared words (of the shorter wording) from which two objects of a "
        "multi-valued predicate look like the same thing and are judged.",
    )
    max_source_chars: int = Field(
        default=1200, ge=0, description="Source memory text shown to the judge, per statement."
    )


class ConflictAction(BaseModel):
    """One decision of a plan: what changes, why, and who decided."""

    kind: ActionKind
    target_id: str = Field(
        description="merge/unmerge: the merged triple; supersede/reopen: the retired "
        "or reopened one; coexist/review: the first of the pair"
    )
    other_id: str | None = Field(
        default=None,
        description="merge: the survivor; unmerge: the survivor it leaves; supersede: the "
        "newer triple; else the pair's other",
    )
    subject_id: str
    predicate: str
    invalid_at: dt.datetime | None = None
    merged_object: str | None = None
    rule: str | None = Field(default=None, description="The rule that decided (None: judged)")
    reason: str
    decided_by: str = Field(description='"rule", the judge kind, or "escalation"')
    confidence: float | None = None
    verdict: str | None = None
    pair_id: str | None = None
    proposal: dict[str, Any] | None = None
    impact: float | None = None
    impact_inputs: dict[str, Any] | None = None
    review_kind: str | None = Field(
        default=None, description="review: the review queue's kind (conflict:merge, ...)"
    )

    def audit_reason(self) -> str:
        if self.rule is not None:
            return RULES[self.rule]
        conf = f" {self.confidence:.2f}" if self.confidence is not None else ""
        return f"{self.decided_by} {self.verdict}{conf}: {self.reason}"

    def describe(self) -> str:
        who = f"rule {self.rule}" if self.rule else f"{self.decided_by} {self.verdict}"
        since = f" from {self.invalid_at:%Y-%m-%d}" if self.invalid_at else ""
        what = {
            "merge": f"merge {self.target_id} into {self.other_id}",
            "unmerge": f"split {self.target_id} off {self.other_id}",
            "supersede": f"supersede {self.target_id} by {self.other_id}{since}",
            "reopen": f"reopen {self.target_id}",
            "coexist": f"keep both {self.target_id} and {self.other_id}",
            "review": f"queue {self.target_id} / {self.other_id} for review",
        }[self.kind]
        return f"{what} ({self.subject_id} {self.predicate}; {who}): {self.reason}"


@dataclass
class ConflictPlan:
    """What a run would do; :func:`apply_conflict_plan` does it (nothing, for a dry run)."""

    actions: list[ConflictAction]
    stats: Counter[str]
    judge_kind: str
    judge_stats: dict[str, int]
    now: dt.datetime
    config: ConflictConfig
    dry_run: bool = False
    pending_pairs: list[str] = field(default_factory=list)
    #: One line per pair whose judgment failed (it went to review; the rest was decided).
    judge_failures: list[str] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        """Planned actions by kind."""
        return Counter(a.kind for a in self.actions)

    def is_empty(self) -> bool:
        return not self.actions

    def summary(self) -> dict[str, Any]:
        """Counters for reports and materialization metadata."""
        keys = (
            "groups",
            "candidate_triples",
            "candidates",
            "by_rule",
            "judged",
            "escalated",
            "queued_for_review",
            "invalid_verdicts",
            "refused_merges",
            "refused_by_definitions",
            "judge_failures",
            "skipped_known",
            "deferred",
        )
        return {
            "dry_run": self.dry_run,
            "judge": self.judge_kind,
            **{k: int(self.stats.get(k, 0)) for k in keys},
            "actions": dict(self.counts()),
            "judge_stats": dict(self.judge_stats),
        }

    def to_dicts(self) -> list[dict[str, Any]]:
        return [a.model_dump(mode="json") for a in self.actions]


# =========================================================================== reading


_CANDIDATES_SQL = """
SELECT t.id, t.subject_id, t.predicate, t.object, t.object_id, t.valid_at, t.invalid_at,
       t.created_at, t.expired_at, t.status, t.superseded_by, t.confidence,
       t.source_session, t.source_block
FROM triples t
JOIN (SELECT subject_id, predicate FROM triples WHERE status IN ('active', 'superseded')
      GROUP BY subject_id, predicate HAVING count(*) > 1) g
  ON g.subject_id = t.subject_id AND g.predicate = t.predicate
WHERE t.status IN ('active', 'superseded')
   OR (t.status = 'merged' AND t.valid_at IS NOT NULL
       AND t.predicate = ANY(CAST(:functional AS TEXT[])))
"""

ROW_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.Utf8(),
    "subject_id": pl.Utf8(),
    "predicate": pl.Utf8(),
    "object": pl.Utf8(),
    "object_id": pl.Utf8(),
    "valid_at": pl.Datetime("us"),
    "invalid_at": pl.Datetime("us"),
    "created_at": pl.Datetime("us"),
    "expired_at": pl.Datetime("us"),
    "status": pl.Utf8(),
    "superseded_by": pl.Utf8(),
    "confidence": pl.Float64(),
    "source_session": pl.Utf8(),
    "source_block": pl.Utf8(),
}


def typed(df: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """``df`` with exactly ``schema``'s columns and types (an empty result comes back untyped)."""
    if df.is_empty():
        return pl.DataFrame(schema=schema)
    return df.select(pl.col(c).cast(t) for c, t in schema.items())


def candidate_rows(store: Store, grounding: Grounding) -> pl.DataFrame:
    """Triples in (subject, predicate) groups of two or more live statements, with their flags.

    Merged restatements of functional predicates come along (column ``restated``): they
    keep their place on the timeline, so a late statement that lands between one and its
    survivor splits that run again (:func:`memvault.temporal.timeline.restatement_merges`).
    """
    flags = grounding.frame().select("predicate", "functional", "volatile", "preference")
    functional = flags.filter(pl.col("functional"))["predicate"].to_list()
    rows = typed(store.fetch_df(_CANDIDATES_SQL, {"functional": functional}), ROW_SCHEMA)
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


def _known_verdicts(store: Store) -> pl.DataFrame:
    schema = {
        "id": pl.Utf8(),
        "triple_a": pl.Utf8(),
        "triple_b": pl.Utf8(),
        "verdict": pl.Utf8(),
        "status": pl.Utf8(),
    }
    return typed(
        store.fetch_df("SELECT id, triple_a, triple_b, verdict, status FROM conflict_verdicts"),
        schema,
    )


def _judge_protected(rows: pl.DataFrame, verdicts: pl.DataFrame) -> set[str]:
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


# =========================================================================== rule parts


def _start() -> pl.Expr:
    """When a statement starts to hold: its valid_at, else when the store learned it."""
    return pl.coalesce("valid_at", "created_at")


def _multi_duplicates(multi: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
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
            normalized_text("object").str.split(" ").alias("word"),
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


def _undated(
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


_ATTITUDES_SQL = "SELECT id, statement, evidence, previous_id FROM attitudes"


def _attitudes(store: Store) -> pl.DataFrame:
    schema = {"id": pl.Utf8(), "statement": pl.Utf8(), "evidence": pl.Utf8(),
              "previous_id": pl.Utf8()}  # fmt: skip
    return typed(store.fetch_df(_ATTITUDES_SQL), schema)


def _preference_links(attitudes: pl.DataFrame, prefs: pl.DataFrame) -> pl.DataFrame:
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
        normalized_text("statement").alias("said"),
        pl.col("evidence").fill_null("[]").str.json_decode(pl.List(pl.Utf8)).alias("session"),
    ).explode("session")
    owned = (
        prefs.select(
            "id",
            *GROUP,
            "source_session",
            "valid_at",
            "created_at",
            normalized_text("object").alias("obj"),
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


# =========================================================================== judging


def _statements(
    store: Store, rows: pl.DataFrame, ids: Sequence[str], max_chars: int
) -> dict[str, ConflictStatement]:
    context = store.fetch_df(
        "SELECT t.id, s.started_at AS session_started_at, b.text AS source_text, "
        "o.entity_type AS object_type, o.name AS object_name, o.aliases AS object_aliases "
        "FROM triples t "
        "LEFT JOIN sessions s ON s.id = t.source_session "
        "LEFT JOIN blocks b ON b.id = t.source_block "
        "LEFT JOIN entities o ON o.id = t.object_id WHERE t.id = ANY(:ids)",
        {"ids": list(ids)},
    )
    context = typed(
        context,
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


def entity_names(name: str | None, aliases: str | None) -> list[str]:
    """An object entity's name and aliases (stored as a JSON list), for the merge check."""
    if name is None:
        return []
    try:
        extra = json.loads(aliases or "[]")
    except ValueError:
        extra = []
    return [name, *(str(x) for x in extra if isinstance(x, str))]


def _subjects(store: Store, ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
    rows = store.fetch(
        "SELECT id, name, entity_type FROM entities WHERE id = ANY(:ids)", {"ids": list(ids)}
    )
    return {r[0]: (r[1], r[2]) for r in rows}


def _ask(
    judge: Judge, requests: list[ResolveConflictRequest], batch: int, *, escalate: bool
) -> list[ConflictReply | JudgeError]:
    replies: list[ConflictReply | JudgeError] = []
    for start in range(0, len(requests), batch):
        chunk = requests[start : start + batch]
        replies += ask_each(judge, RESOLVE_CONFLICT, chunk, escalate=escalate)
    return replies


def _ask_confirm(
    judge: Judge, requests: list[ConfirmChangeRequest], batch: int, *, escalate: bool
) -> list[ConfirmReply | JudgeError]:
    replies: list[ConfirmReply | JudgeError] = []
    for start in range(0, len(requests), batch):
        chunk = requests[start : start + batch]
        replies += ask_each(judge, CONFIRM_CHANGE, chunk, escalate=escalate)
    return replies


def _confirm_request(
    request: ResolveConflictRequest, reply: ConflictReply, newer: str | None
) -> ConfirmChangeRequest:
    return ConfirmChangeRequest(
        subject=request.subject,
        subject_type=request.subject_type,
        predicate=request.predicate,
        a=request.a,
        b=request.b,
        proposed=ProposedChange(
            verdict=reply.verdict,  # only MERGE and SUPERSEDE reach here
            newer=newer,
            reason=reply.reason,
        ),
    )


def _earlier(a: ConflictStatement, b: ConflictStatement) -> bool:
    """True when ``a`` came first (valid_at, then created_at, then id; undated last)."""

    def key(s: ConflictStatement) -> tuple[int, dt.datetime, dt.datetime, str]:
        return (s.valid_at is None, s.valid_at or s.created_at, s.created_at, s.triple_id)

    return key(a) <= key(b)


def _start_of(s: ConflictStatement) -> dt.datetime:
    """When a statement starts to hold: its valid_at, else when the store learned it."""
    return s.valid_at or s.created_at


@dataclass(frozen=True)
class Refusal:
    """Why a judge's verdict may not touch the store, and the counter it is counted under
    (every refusal also counts as an ``invalid_verdicts``)."""

    text: str
    counter: Literal["invalid_verdicts", "refused_merges", "refused_by_definitions"]

    def __str__(self) -> str:
        return self.text


def count_refusal(stats: Counter[str], refusal: Refusal) -> None:
    stats["invalid_verdicts"] += 1
    if refusal.counter != "invalid_verdicts":
        stats[refusal.counter] += 1


def _supersede_problem(
    new: ConflictStatement, old: ConflictStatement, definition: Mapping[str, Any]
) -> Refusal | None:
    """What the dates and the predicate's definition say against ``new`` retiring ``old``.

    Never before the retired statement began (that contradicts the known dates). A predicate
    that holds one value at a time (functional) may retire a statement from the start of the
    next one (its valid_at, else when the store learned it), a correction of a value stated
    for the same moment included: only one of them can have held. A predicate that may hold
    several values at once (or one not defined) gives no reason for one value to end where
    another begins: a statement retires another only when both are dated and its valid_at is
    strictly later, so the retired one never ends up valid for no time at all.
    """
    if _start_of(new) < _start_of(old):
        return Refusal(
            f"SUPERSEDE would end {old.triple_id} on {_start_of(new):%Y-%m-%d}, before its own "
            f"start ({_start_of(old):%Y-%m-%d}): it contradicts the known dates",
            "invalid_verdicts",
        )
    if definition.get("cardinality") == "functional":
        return None
    if new.valid_at is None or old.valid_at is None or new.valid_at <= old.valid_at:
        name = definition.get("name", "this predicate")
        return Refusal(
            f"SUPERSEDE on {name}, which may hold several values at once: one statement retires "
            "another only from a strictly later valid_at, never leaving it valid for no time",
            "refused_by_definitions",
        )
    return None


def verdict_problem(
    reply: ConflictReply, request: ResolveConflictRequest
) -> tuple[Refusal | None, str | None]:
    """(why the verdict cannot be applied as it stands, or None; for SUPERSEDE which side is
    newer). A judge's answer is checked against the data and the predicate's definition
    before it may touch the store: the one check every judged MERGE and SUPERSEDE passes,
    in the dream, the lint and the review queue."""
    a, b, definition = request.a, request.b, request.predicate
    if reply.verdict == "MERGE" and definition.get("preference"):
        # A preference keeps its versions: the merge is applied as the later wording
        # retiring the earlier one (see _judged_action), so it is bounded like a supersede.
        new, old = (b, a) if _earlier(a, b) else (a, b)
        return _supersede_problem(new, old, definition), None
    if reply.verdict == "MERGE":
        why = merge_refusal(a, b)
        return (Refusal(why, "refused_merges") if why else None), None
    if reply.verdict != "SUPERSEDE":
        return None, None
    newer = reply.newer
    if newer is None and a.valid_at and b.valid_at and a.valid_at != b.valid_at:
        newer = "a" if a.valid_at > b.valid_at else "b"
    if newer is None:
        return Refusal(
            "SUPERSEDE without saying which statement is newer", "invalid_verdicts"
        ), None
    new, old = (a, b) if newer == "a" else (b, a)
    bound = _supersede_problem(new, old, definition)
    return bound, (None if bound else newer)


def merged_wording(
    reply: ConflictReply, survivor: ConflictStatement, loser: ConflictStatement
) -> str | None:
    """The wording a MERGE keeps: one of the two statements' own objects, never free text from
    the judge (a memory that says "ignore previous instructions" must not become a fact)."""
    wording = (reply.merged_object or "").strip()
    if not wording or survivor.object_id is not None:
        return None
    chosen = normalize_object(wording)
    if chosen == normalize_object(loser.object) and wording != survivor.object:
        return loser.object
    return None


@dataclass(frozen=True)
class _Pair:
    """What the plan knows about a judged pair besides the request."""

    pair_id: str
    subject_id: str
    predicate: str
    preference: bool
    impact: float  # the change's impact score (memvault.review.impact)
    impact_inputs: dict[str, Any]


def _judged_action(
    pair: _Pair,
    request: ResolveConflictRequest,
    reply: ConflictReply,
    newer: str | None,
    decided_by: str,
) -> ConflictAction:
    a, b = request.a, request.b
    base: dict[str, Any] = {
        "subject_id": pair.subject_id,
        "predicate": pair.predicate,
        "reason": reply.reason,
        "decided_by": decided_by,
        "confidence": reply.confidence,
        "verdict": reply.verdict,
        "pair_id": pair.pair_id,
        "impact": pair.impact,
        "impact_inputs": pair.impact_inputs,
    }
    verdict = reply.verdict
    if verdict == "MERGE" and pair.preference:
        # A preference keeps its versions (T4): the later wording becomes current, the
        # earlier one is retired with a date instead of being merged away.
        verdict, newer = "SUPERSEDE", ("b" if _earlier(a, b) else "a")
    if verdict == "SUPERSEDE":
        new, old = (a, b) if newer == "a" else (b, a)
        return ConflictAction(
            kind="supersede",
            target_id=old.triple_id,
            other_id=new.triple_id,
            invalid_at=new.valid_at or new.created_at,
            **base,
        )
    if verdict == "MERGE":
        survivor, loser = (a, b) if _earlier(a, b) else (b, a)
        merged = merged_wording(reply, survivor, loser)
        return ConflictAction(
            kind="merge",
            target_id=loser.triple_id,
            other_id=survivor.triple_id,
            merged_object=merged,
            **base,
        )
    return ConflictAction(kind="coexist", target_id=a.triple_id, other_id=b.triple_id, **base)


def review_action(
    pair: _Pair,
    request: ResolveConflictRequest,
    replies: list[tuple[str, ConflictReply]],
    now: dt.datetime,
    config: ConflictConfig,
    *,
    reason: str | None = None,
    confirmation: ConfirmReply | None = None,
) -> ConflictAction:
    last_by, last = replies[-1]
    proposal = _review_proposal(pair, request, replies, now, config)
    confidence = last.confidence
    if confirmation is not None:
        proposal["confirmation"] = confirmation.model_dump(mode="json")
        confidence = min(confidence, confirmation.confidence)
    why = (
        reason
        or verdict_problem(last, request)[0]
        or f"not sure enough ({last.confidence:.2f} < {config.confidence_threshold})"
    )
    return ConflictAction(
        kind="review",
        target_id=request.a.triple_id,
        other_id=request.b.triple_id,
        subject_id=pair.subject_id,
        predicate=pair.predicate,
        reason=f"{why}: {last.reason}",
        decided_by=last_by,
        confidence=confidence,
        verdict=last.verdict,
        pair_id=pair.pair_id,
        proposal=proposal,
        impact=pair.impact,
        impact_inputs=pair.impact_inputs,
        review_kind=f"conflict:{last.verdict.lower()}"
        if last.verdict in ("MERGE", "SUPERSEDE")
        else "conflict",
    )


def _review_proposal(
    pair: _Pair,
    request: ResolveConflictRequest,
    replies: list[tuple[str, ConflictReply]],
    now: dt.datetime,
    config: ConflictConfig,
) -> dict[str, Any]:
    """What a human reviewing the pair sees: both statements, every verdict, the deadline."""
    return {
        "pair": pair.pair_id,
        "triple_a": request.a.triple_id,
        "triple_b": request.b.triple_id,
        "subject": request.subject,
        "predicate": pair.predicate,
        "objects": {"a": request.a.object, "b": request.b.object},
        "statements": {
            side: statement.model_dump(
                mode="json",
                include={
                    "object",
                    "valid_at",
                    "invalid_at",
                    "created_at",
                    "source_session",
                    "source_text",
                },
            )
            for side, statement in (("a", request.a), ("b", request.b))
        },
        "verdicts": [{"decided_by": by, **r.model_dump(mode="json")} for by, r in replies],
        "deadline": (now + dt.timedelta(days=config.review_deadline_days)).isoformat(),
        "why_asked": request.why_asked,
    }


def _failed_action(
    pair: _Pair,
    request: ResolveConflictRequest,
    error: JudgeError,
    now: dt.datetime,
    config: ConflictConfig,
) -> ConflictAction:
    """A pair whose judgment failed: queued for a human with the cause, nothing applied."""
    return ConflictAction(
        kind="review",
        target_id=request.a.triple_id,
        other_id=request.b.triple_id,
        subject_id=pair.subject_id,
        predicate=pair.predicate,
        reason=f"the judge failed: {error}",
        decided_by="judge-error",
        pair_id=pair.pair_id,
        proposal=_review_proposal(pair, request, [], now, config) | {"judge_error": str(error)},
        impact=pair.impact,
        impact_inputs=pair.impact_inputs,
        review_kind="conflict",
    )


def definition_dict(definition: PredicateDef | None, name: str) -> dict[str, Any]:
    """The predicate's definition as the judge sees it and :func:`verdict_problem` bounds a
    verdict by; a predicate not defined is treated as one that may hold several values."""
    if definition is not None:
        return definition.as_dict()
    return {"name": name, "description": "not in the grounding definitions",
            "cardinality": "unknown"}  # fmt: skip


def pair_requests(
    store: Store,
    pairs: pl.DataFrame,
    rows: pl.DataFrame,
    grounding: Grounding,
    config: ConflictConfig,
) -> tuple[list[ResolveConflictRequest], list[_Pair]]:
    """What the judge is shown for each pair (``a``, ``b``, ``why``), and what the plan keeps
    about it (its impact among others). ``rows`` are :data:`ROW_SCHEMA` rows with the flags
    ``functional`` and ``preference`` (see :func:`flagged_rows`)."""
    ids = sorted(set(pairs["a"].to_list()) | set(pairs["b"].to_list()))
    statements = _statements(store, rows, ids, config.max_source_chars)
    info = rows.filter(pl.col("id").is_in(ids)).select("id", *GROUP, "functional", "preference")
    by_id = {r["id"]: r for r in info.iter_rows(named=True)}
    subjects = _subjects(store, sorted({r["subject_id"] for r in by_id.values()}))
    requests: list[ResolveConflictRequest] = []
    meta: list[_Pair] = []
    subject_facts: dict[str, tuple[float, int]] = {}
    for a, b, why in pairs.select("a", "b", "why").iter_rows():
        row = by_id[a]
        predicate = definition_dict(grounding.get(row["predicate"]), row["predicate"])
        name, kind = subjects.get(row["subject_id"], (row["subject_id"], None))
        requests.append(
            ResolveConflictRequest(
                subject=name,
                subject_type=kind,
                predicate=predicate,
                why_asked=why,
                a=statements[a],
                b=statements[b],
            )
        )
        if row["subject_id"] not in subject_facts:
            subject_facts[row["subject_id"]] = subject_inputs(store, row["subject_id"])
        centrality, dependents = subject_facts[row["subject_id"]]
        inputs = ImpactInputs(
            centrality=centrality,
            dependents=dependents,
            layer=bool(row["preference"]),
            retires_current=any(
                statements[t].status == "active" and statements[t].invalid_at is None
                for t in (a, b)
            ),
        )
        meta.append(
            _Pair(
                pair_id=pair_id(a, b),
                subject_id=row["subject_id"],
                predicate=row["predicate"],
                preference=bool(row["preference"]),
                impact=impact_score(inputs),
                impact_inputs=inputs.model_dump(),
            )
        )
    return requests, meta


def _judge_pairs(
    store: Store,
    judge: Judge,
    pairs: pl.DataFrame,
    rows: pl.DataFrame,
    grounding: Grounding,
    config: ConflictConfig,
    now: dt.datetime,
    stats: Counter[str],
    failures: list[str],
    policy: ReviewPolicy,
    calibration: Calibration,
) -> list[ConflictAction]:
    """Ask the judge about each pair, escalate the unsure ones, queue what stays unsure.

    Every verdict is checked against the data first (:func:`verdict_problem`): one that
    cannot be true goes to review, never to the store; a pair whose judgment failed goes to
    review too, and the other pairs are decided as usual."""
    if pairs.is_empty():
        return []
    requests, meta = pair_requests(store, pairs, rows, grounding, config)
    stats["judged"] += len(requests)
    threshold = config.confidence_threshold
    decisions = Decisions(requests, meta, config, now, stats, failures)
    to_review, failed = decisions.review, decisions.failed
    confident: list[tuple[int, list[tuple[str, ConflictReply]], str | None]] = []
    unsure: list[tuple[int, ConflictReply]] = []
    for i, reply in enumerate(_ask(judge, requests, config.batch_size, escalate=False)):
        if isinstance(reply, JudgeError):
            failed(i, reply)
            continue
        problem, newer = verdict_problem(reply, requests[i])
        if problem is not None:
            count_refusal(stats, problem)
            to_review(i, [(judge.kind, reply)])
        elif reply.confidence >= threshold:
            confident.append((i, [(judge.kind, reply)], newer))
        elif judge.can_escalate:
            unsure.append((i, reply))
        else:  # no stronger model configured: asking again would only repeat the answer
            to_review(i, [(judge.kind, reply)], "not sure, and no escalation model is configured")
    stats["escalated"] += len(unsure)
    again = _ask(judge, [requests[i] for i, _ in unsure], config.batch_size, escalate=True)
    for (i, first), second in zip(unsure, again, strict=True):
        if isinstance(second, JudgeError):
            failed(i, second)
            continue
        problem, newer = verdict_problem(second, requests[i])
        if problem is None and second.confidence >= threshold:
            confident.append((i, [(judge.kind, first), ("escalation", second)], newer))
        else:
            if problem is not None:
                count_refusal(stats, problem)
            to_review(i, [(judge.kind, first), ("escalation", second)])

    confirm_and_route(judge, decisions, confident, policy, calibration)
    return decisions.actions()


@dataclass
class Decisions:
    """The actions decided so far for a list of judged pairs, and the two ways a pair leaves
    the judge's hands without a verdict applied: queued for review, or failed."""

    requests: list[ResolveConflictRequest]
    meta: list[_Pair]
    config: ConflictConfig
    now: dt.datetime
    stats: Counter[str]
    failures: list[str]
    decided: dict[int, ConflictAction] = field(default_factory=dict)

    def review(
        self,
        i: int,
        replies: list[tuple[str, ConflictReply]],
        reason: str | None = None,
        second: ConfirmReply | None = None,
    ) -> None:
        self.stats["queued_for_review"] += 1
        self.decided[i] = review_action(self.meta[i], self.requests[i], replies, self.now,
                                        self.config, reason=reason, confirmation=second)  # fmt: skip

    def failed(self, i: int, error: JudgeError) -> None:
        """After the judge's own retries: this pair goes to a human, the others go on."""
        self.stats["judge_failures"] += 1
        self.failures.append(f"{self.meta[i].pair_id}: {error}")
        self.decided[i] = _failed_action(self.meta[i], self.requests[i], error, self.now,
                                         self.config)  # fmt: skip

    def actions(self) -> list[ConflictAction]:
        return [self.decided[i] for i in sorted(self.decided)]


def confirm_and_route(
    judge: Judge,
    decisions: Decisions,
    confident: list[tuple[int, list[tuple[str, ConflictReply]], str | None]],
    policy: ReviewPolicy,
    calibration: Calibration,
) -> None:
    """Confident, valid verdicts (index, replies so far, newer) → actions: COEXIST as it is;
    a change only with a second judgment that agrees and the review rules' consent, else it
    is queued for review."""
    requests, meta, stats, decided = (
        decisions.requests, decisions.meta, decisions.stats, decisions.decided
    )  # fmt: skip
    to_review, failed = decisions.review, decisions.failed

    # A change of the store needs a second, independent judgment that agrees, and the review
    # rules' consent; keeping both statements (COEXIST) changes nothing and needs neither.
    changes = [(i, r, n) for i, r, n in confident if r[-1][1].verdict != "COEXIST"]
    for i, replies, newer in confident:
        if replies[-1][1].verdict == "COEXIST":
            decided[i] = _judged_action(meta[i], requests[i], replies[-1][1], newer, replies[-1][0])
    # The confirmation goes to the other model when there is one: the escalation model for a
    # first answer, the primary model (its own differently worded prompt) for an escalated one.
    by_model = {
        escalate: [c for c in changes if (c[1][-1][0] != "escalation") == escalate]
        for escalate in (True, False)
    }
    for escalate, group in by_model.items():
        escalate = escalate and judge.can_escalate
        checks = [_confirm_request(requests[i], replies[-1][1], n) for i, replies, n in group]
        seconds = _ask_confirm(judge, checks, decisions.config.batch_size, escalate=escalate)
        for (i, replies, newer), check in zip(group, seconds, strict=True):
            first_by, first = replies[-1]
            if isinstance(check, JudgeError):
                failed(i, check)
                continue
            stats["confirmations"] += 1
            if not check.agree:
                stats["disagreements"] += 1
                to_review(i, replies, f"the second judgment disagrees: {check.reason}", check)
                continue
            kind = f"conflict:{first.verdict.lower()}"
            decision = route(
                policy,
                calibration,
                kind,
                min(first.confidence, check.confidence),
                meta[i].impact,
                batch_size=len(changes),
            )
            if not decision.auto:
                to_review(i, replies, f"both judgments agree, but {decision.reason}", check)
                continue
            stats["auto_approved"] += 1
            decided[i] = _judged_action(
                meta[i], requests[i], first, newer, f"{first_by}, confirmed"
            )


# =========================================================================== the plan


def _pairs_frame(parts: list[tuple[pl.DataFrame, str]]) -> pl.DataFrame:
    frames = [
        df.select("a", "b").with_columns(pl.lit(why).alias("why")) for df, why in parts if df.height
    ]
    if not frames:
        return pl.DataFrame(schema={"a": pl.Utf8, "b": pl.Utf8, "why": pl.Utf8})
    return pl.concat(frames).unique(["a", "b"], keep="first", maintain_order=True)


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


@dataclass
class _State:
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
    ) -> _State:  # fmt: skip
        live = rows.filter(~pl.col("id").is_in(sorted(judged_into)))
        functional = live.filter(pl.col("functional"))
        timeline = functional_timeline(functional.filter(pl.col("valid_at").is_not_null()))
        undated_merges, undated_pairs = _undated(
            functional.filter(pl.col("valid_at").is_null()), timeline, protected
        )
        multi_merges, multi_reps = _multi_duplicates(live.filter(~pl.col("functional")))
        links = _preference_links(attitudes, multi_reps.filter(pl.col("preference")))
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


#: Rounds of judging per plan: a verdict can uncover a pair (a restatement of what it retired).
_MAX_ROUNDS = 3


def plan_conflicts(
    store: Store,
    judge: Judge,
    *,
    grounding: Grounding | None = None,
    config: ConflictConfig | None = None,
    dry_run: bool = False,
    now: dt.datetime | None = None,
    policy: ReviewPolicy | None = None,
) -> ConflictPlan:
    """Decide every conflict the store holds now; writes nothing.

    ``now`` is the store time the plan stamps on retired rows (default: the
    current UTC time); tests pass a fixed one to compare runs.
    """
    grounding = grounding or Grounding.load()
    config = config or ConflictConfig()
    policy = policy or ReviewPolicy()
    now = now or utcnow()
    stats: Counter[str] = Counter()
    before = judge.stats.as_dict()
    rows = candidate_rows(store, grounding)
    stats["candidate_triples"] = rows.height
    stats["groups"] = rows.select(GROUP).n_unique() if rows.height else 0

    failures: list[str] = []

    def finish(actions: list[ConflictAction], pending: list[str]) -> ConflictPlan:
        after = judge.stats.as_dict()
        return ConflictPlan(
            judge_failures=failures,
            actions=actions,
            stats=stats,
            judge_kind=judge.kind,
            judge_stats={k: after[k] - before.get(k, 0) for k in after},
            now=now,
            config=config,
            dry_run=dry_run,
            pending_pairs=pending,
        )

    if rows.is_empty():
        return finish([], [])
    verdicts = _known_verdicts(store)
    known = set(verdicts["id"].to_list())
    calibration = calibrate(store, policy)
    protected = _judge_protected(rows, verdicts)
    attitudes = _attitudes(store) if rows["preference"].any() else pl.DataFrame()
    judged: list[ConflictAction] = []
    judged_into: dict[str, str] = {}
    asked: set[str] = set()
    for round_ in range(_MAX_ROUNDS + 1):
        # Rules see the store as the judged verdicts will leave it, so re-planning after
        # the apply finds the same timeline (and nothing to do).
        state = _State.of(rows, attitudes, protected, judged_into, config)
        fresh = state.pairs.filter(~pl.col("pair_id").is_in(sorted(known | asked)))
        budget = config.max_judged_pairs - len(asked)
        if fresh.is_empty() or budget <= 0 or round_ == _MAX_ROUNDS:
            break
        batch = fresh.head(budget)
        asked |= set(batch["pair_id"].to_list())
        verdicts_now = _judge_pairs(
            store, judge, batch, rows, grounding, config, now, stats, failures, policy, calibration
        )
        judged += verdicts_now
        judged_into |= {
            a.target_id: a.other_id for a in verdicts_now if a.kind == "merge" and a.other_id
        }
        protected |= {a.target_id for a in verdicts_now if a.kind == "supersede"}
    pending = fresh["pair_id"].to_list()
    stats["deferred"] = len(pending)
    stats["skipped_known"] = state.pairs.filter(pl.col("pair_id").is_in(sorted(known))).height
    rule_actions = _rule_actions(
        rows, state.timeline, state.undated_merges, state.multi_merges, state.links, protected,
        judged_into,
    )  # fmt: skip
    stats["by_rule"] = len(rule_actions)
    stats["candidates"] = (
        len(rule_actions) + len(asked) + stats["skipped_known"] + stats["deferred"]
    )
    return finish([*judged, *rule_actions], pending)


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


def _rule_actions(
    rows: pl.DataFrame,
    timeline: pl.DataFrame,
    undated_merges: pl.DataFrame,
    multi_merges: pl.DataFrame,
    links: pl.DataFrame,
    protected: set[str],
    judged_into: dict[str, str],
) -> list[ConflictAction]:
    """Restatement merges, the T6 timeline and the T4 preference chain, as actions."""
    protected_list = sorted(protected)
    continuation = timeline.filter(pl.col("id") != pl.col("span_start_id")).select(
        "id", pl.col("span_start_id").alias("into")
    )
    # A merged restatement whose chain of merges still ends in the run it belongs to stays as
    # it is; one that now starts a run of its own (or belongs to another run) is split off.
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
    split_off = restated.filter(~pl.col("id").is_in(sorted(kept))).sort("id")
    merges = merges.filter(~pl.col("id").is_in(sorted(kept)))
    losers = set(merges["id"].to_list()) | kept
    actions = [
        ConflictAction(
            kind="unmerge",
            target_id=r["id"],
            other_id=r["survivor"],
            subject_id=r["subject_id"],
            predicate=r["predicate"],
            rule="split_run",
            decided_by="rule",
            reason=f"'{r['object']}' of {r['valid_at']:%Y-%m-%d} no longer restates "
            f"{r['survivor']}: another object was stated in between",
        )
        for r in split_off.iter_rows(named=True)
    ]
    info = rows.select(
        "id", *GROUP, "object", "valid_at", "created_at", "status", "invalid_at", "superseded_by"
    )
    detail = (
        merges.join(info, on="id")
        .join(
            info.select(pl.col("id").alias("into"), pl.col("object").alias("into_object")),
            on="into",
        )
        .sort("into", "valid_at", "created_at", "id", nulls_last=True)
    )
    actions += [
        ConflictAction(
            kind="merge",
            target_id=r["id"],
            other_id=r["into"],
            subject_id=r["subject_id"],
            predicate=r["predicate"],
            rule="restatement",
            decided_by="rule",
            reason=f"'{r['object']}' restates '{r['into_object']}'",
        )
        for r in detail.iter_rows(named=True)
    ]

    # T6: every span of a functional, volatile predicate ends where the next object begins.
    live = set(rows["id"].to_list()) - losers - set(judged_into)
    spans = timeline.filter(
        pl.col("volatile")
        & (pl.col("id") == pl.col("span_start_id"))
        & ~pl.col("id").is_in(protected_list + sorted(losers))
    )
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
    for r in ends.sort("id").iter_rows(named=True):
        actions.append(
            ConflictAction(
                kind="supersede",
                target_id=r["id"],
                other_id=r["change_id"],
                subject_id=r["subject_id"],
                predicate=r["predicate"],
                invalid_at=r["change_at"],
                rule="timeline",
                decided_by="rule",
                reason=f"'{r['new_object']}' holds from {r['change_at']:%Y-%m-%d}, so "
                f"'{r['object']}' stops holding then",
            )
        )
    reopen = spans.filter(
        pl.col("change_at").is_null()
        & (pl.col("status") == "superseded")
        & pl.col("superseded_by").is_not_null()
        & ~pl.col("superseded_by").is_in(sorted(live))
    )
    for r in reopen.sort("id").iter_rows(named=True):
        actions.append(
            ConflictAction(
                kind="reopen",
                target_id=r["id"],
                subject_id=r["subject_id"],
                predicate=r["predicate"],
                rule="reopen",
                decided_by="rule",
                reason=f"no later statement of another object remains (was superseded by "
                f"{r['superseded_by']})",
            )
        )

    # T4: a preference's older version is retired, dated, when the attitudes chain says so.
    if links.height:
        chain = (
            links.filter(
                ~pl.col("old").is_in(protected_list + sorted(losers) + sorted(judged_into))
            )
            .filter(~pl.col("new").is_in(sorted(losers) + sorted(judged_into)))
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
        for r in chain.filter(~done.fill_null(False)).sort("old").iter_rows(named=True):
            actions.append(
                ConflictAction(
                    kind="supersede",
                    target_id=r["old"],
                    other_id=r["new"],
                    subject_id=r["subject_id"],
                    predicate=r["predicate"],
                    invalid_at=r["new_start"],
                    rule="preference_chain",
                    decided_by="rule",
                    reason=f"newer version '{r['new_object']}' from {r['new_start']:%Y-%m-%d}; "
                    f"'{r['object']}' is kept as an earlier version",
                )
            )
    return actions


def proposal_json(action: ConflictAction) -> str:
    return json.dumps(action.proposal or {}, ensure_ascii=False, sort_keys=True, default=str)


def action_for_review(
    store: Store, proposal: dict[str, Any], decided_by: str, grounding: Grounding | None = None
) -> ConflictAction | None:
    """The change a queued conflict proposes (its last verdict), checked again against the
    store as it is now; None when it proposes no change (keep both)."""
    verdicts = proposal.get("verdicts") or []
    if not verdicts or verdicts[-1].get("verdict") not in ("MERGE", "SUPERSEDE"):
        return None
    reply = ConflictReply.model_validate(
        {k: v for k, v in verdicts[-1].items() if k in ConflictReply.model_fields}
    )
    a_id, b_id = str(proposal["triple_a"]), str(proposal["triple_b"])
    rows = typed(
        store.fetch_df(
            f"SELECT {', '.join(ROW_SCHEMA)} FROM triples WHERE id = ANY(:ids)",
            {"ids": [a_id, b_id]},
        ),
        ROW_SCHEMA,
    )
    if rows.height != 2:
        raise MemvaultError(f"the statements {a_id} and {b_id} are no longer both in the store")
    statements = _statements(store, rows, [a_id, b_id], 0)
    a, b = statements[a_id], statements[b_id]
    predicate = str(rows["predicate"][0])  # the store's, not what the queued item says
    definition = (grounding or Grounding.load()).get(predicate)
    request = ResolveConflictRequest(
        subject=str(proposal.get("subject") or rows["subject_id"][0]),
        predicate=definition_dict(definition, predicate),
        why_asked=str(proposal.get("why_asked") or "review"),
        a=a,
        b=b,
    )
    problem, newer = verdict_problem(reply, request)
    if problem is not None:
        raise MemvaultError(f"the proposed change cannot be applied: {problem}")
    pair = _Pair(
        pair_id=pair_id(a_id, b_id),
        subject_id=str(rows["subject_id"][0]),
        predicate=predicate,
        preference=bool(definition and definition.preference),
        impact=float(proposal.get("impact") or 0.0),
        impact_inputs=dict(proposal.get("impact_inputs") or {}),
    )
    return _judged_action(pair, request, reply, newer, decided_by)


def flagged_rows(store: Store, ids: Sequence[str], grounding: Grounding) -> pl.DataFrame:
    """Triples by id with the flags :func:`pair_requests` reads (``functional``, ``preference``)."""
    rows = typed(
        store.fetch_df(
            f"SELECT {', '.join(ROW_SCHEMA)} FROM triples WHERE id = ANY(CAST(:ids AS TEXT[]))",
            {"ids": sorted(set(ids))},
        ),
        ROW_SCHEMA,
    )
    flags = grounding.frame().select("predicate", "functional", "preference")
    return (
        rows.with_columns(object_key())
        .join(flags, on="predicate", how="left")
        .with_columns(pl.col("functional", "preference").fill_null(False))
    )
