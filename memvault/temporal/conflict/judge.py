"""The judge task ``resolve_conflict`` (T1–T3): two statements that may disagree, and a verdict.

The request carries both statements with their valid and store times, their
source sessions (with dates) and source text, and the predicate's grounding
definition, so the judge does not judge the past from today's viewpoint (T1).
The offline heuristic is honest: it merges only near-identical wording and
otherwise answers with low confidence, so the pair escalates and then goes to
review; it never guesses a supersede.
"""

from __future__ import annotations

import datetime as dt
import json
from difflib import SequenceMatcher
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memvault.judge.tasks import JudgeTask
from memvault.temporal.timeline import content_tokens
from memvault.text_tokens import normalized, normalized_words, singular

Verdict = Literal["MERGE", "SUPERSEDE", "COEXIST"]

# --------------------------------------------------------------------------- what a merge may join

#: Words that never tell two objects apart: articles.
ARTICLES = frozenset({"a", "an", "the"})
#: The legal form of an organization, ignored at the end of a name ("ACME Corporation" is
#: "Acme Corp"); elsewhere it is a word like any other ("co founder" is not "founder").
CORPORATE_SUFFIXES = frozenset(
    {"inc", "incorporated", "corp", "corporation", "co", "company", "ltd", "limited", "llc",
     "plc", "gmbh", "ag", "sa"}
)  # fmt: skip
#: Generic words one wording may add to another without naming another thing
#: ("stream processing topics" restates "stream processing"). Deliberately short: a word
#: that narrows or changes the meaning (senior, principal, batch, not) is not here, nor one
#: that names another kind of thing ("stream processing systems" are software, not the
#: field: two values).
QUALIFIERS = frozenset({"topic", "field", "area", "general", "overall"})


def identity_tokens(text: str) -> frozenset[str]:
    """The words that say which value an object is: normalized (case, width, punctuation),
    without articles and a trailing legal form, plurals folded."""
    words = [t for t in normalized_words(text) if t not in ARTICLES]
    while len(words) > 1 and words[-1] in CORPORATE_SUFFIXES:
        words.pop()
    return frozenset(singular(t) for t in words)


def _restates_text(x: str, y: str) -> bool:
    tx, ty = identity_tokens(x), identity_tokens(y)
    if not tx or not ty:
        return normalized(x) == normalized(y)
    if tx == ty:
        return True
    small, big = (tx, ty) if len(tx) < len(ty) else (ty, tx)
    return small < big and big - small <= QUALIFIERS


def entity_names(name: str | None, aliases: str | None) -> list[str]:
    """An object entity's name and aliases (stored as a JSON list), for the merge check."""
    if name is None:
        return []
    try:
        extra = json.loads(aliases or "[]")
    except ValueError:
        extra = []
    return [name, *(str(x) for x in extra if isinstance(x, str))]


def names_of(statement: ConflictStatement) -> list[str]:
    """Every wording a statement's object goes by: its own, and its entity's name and aliases."""
    return [statement.object, *statement.object_names]


def merge_refusal(a: ConflictStatement, b: ConflictStatement) -> str | None:
    """Why two statements may NOT be merged, or None when they may.

    A merge is a restatement: the two objects are the same value once normalized (case,
    whitespace, punctuation, articles, a trailing legal form such as Inc/Corp/Ltd, plurals), or
    one wording is the other plus only generic words (:data:`QUALIFIERS`). Two different
    entities (different object ids) are never merged, whatever their names; for an entity
    its name and aliases count as its wordings. Anything else ("principal engineer" /
    "staff engineer", "stream processing systems" / "stream processing") is two values: whatever
    a judge says, it is kept both ways, superseded by the rules of its predicate, or reviewed.
    """
    if a.object_id and b.object_id:
        if a.object_id == b.object_id:
            return None
        return "MERGE of two different entities (different object ids)"
    if any(_restates_text(x, y) for x in names_of(a) for y in names_of(b)):
        return None
    return (
        f"MERGE of {a.object!r} and {b.object!r}: not the same value, and neither only "
        "restates the other"
    )


#: Below this the heuristic does not call two wordings the same.
NEAR_IDENTICAL_RATIO = 0.9
#: What the heuristic answers when it cannot tell (well below any sensible threshold).
UNSURE_CONFIDENCE = 0.2


class ConflictStatement(BaseModel):
    """One of the two statements, with everything that dates it."""

    model_config = ConfigDict(extra="forbid")

    triple_id: str
    object: str
    object_id: str | None = None
    object_type: str | None = None
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    created_at: dt.datetime
    source_session: str | None = None
    session_started_at: dt.datetime | None = None
    source_text: str | None = None
    confidence: float
    status: str
    object_names: list[str] = Field(
        default_factory=list,
        description="When the object is an entity: its name and aliases in the store.",
    )


class ResolveConflictRequest(BaseModel):
    """Two statements about the same subject and predicate whose objects differ."""

    model_config = ConfigDict(extra="forbid")

    subject: str
    subject_type: str | None = None
    predicate: dict[str, Any] = Field(
        description="The predicate's grounding definition (cardinality, volatility, range, ...)."
    )
    why_asked: str
    a: ConflictStatement
    b: ConflictStatement


class ConflictReply(BaseModel):
    """The judge's verdict on two statements."""

    verdict: Verdict = Field(
        description=(
            "MERGE: the same fact worded differently (combine into one). SUPERSEDE: the newer "
            "statement replaced the older (the older stops being true when the newer starts). "
            "COEXIST: both are true, they are different things."
        )
    )
    confidence: float = Field(
        ge=0.0, le=1.0, description="How sure the verdict is, from 0 (a guess) to 1 (certain)."
    )
    reason: str = Field(description="One or two sentences: why, citing the dates and texts.")
    newer: Literal["a", "b"] | None = Field(
        default=None,
        description="For SUPERSEDE: which statement is the newer one that replaces the other.",
    )
    merged_object: str | None = Field(
        default=None,
        description="For MERGE: the best wording of the combined object, keeping every detail.",
    )


def resolve_conflict_heuristic(request: ResolveConflictRequest) -> ConflictReply:
    """MERGE near-identical wording of the same object; otherwise an honest "cannot tell"."""
    a, b = request.a, request.b
    not_restatement = merge_refusal(a, b) is not None
    ignore = frozenset(str(request.predicate.get("name", "")).split("_"))
    same_words = content_tokens(a.object, ignore) == content_tokens(b.object, ignore)
    ratio = SequenceMatcher(None, normalized(a.object), normalized(b.object)).ratio()
    if not not_restatement and (same_words or ratio >= NEAR_IDENTICAL_RATIO):
        longer = max((a.object, b.object), key=lambda text: (len(text), text))
        return ConflictReply(
            verdict="MERGE",
            confidence=0.9 if same_words else 0.8,
            reason=(
                "the two objects are the same words"
                if same_words
                else f"the two wordings are near-identical (similarity {ratio:.2f})"
            ),
            merged_object=longer,
        )
    return ConflictReply(
        verdict="COEXIST",
        confidence=UNSURE_CONFIDENCE,
        reason=(
            "the offline judge cannot tell whether these are the same, a change or two "
            "different things; a model or a person must decide"
        ),
    )


RESOLVE_CONFLICT: JudgeTask[ResolveConflictRequest, ConflictReply] = JudgeTask(
    "resolve_conflict",
    request_model=ResolveConflictRequest,
    reply_model=ConflictReply,
    description=(
        "Decide whether two dated statements about the same subject and predicate are the same "
        "fact (MERGE), a change over time (SUPERSEDE) or two different facts (COEXIST)."
    ),
    heuristic=resolve_conflict_heuristic,
)


# --------------------------------------------------------------------------- the second judgment


class ProposedChange(BaseModel):
    """The change a first judgment proposed, as the second one sees it."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["MERGE", "SUPERSEDE"]
    newer: Literal["a", "b"] | None = None
    reason: str


class ConfirmChangeRequest(BaseModel):
    """Two statements and a change proposed for them: is it right?"""

    model_config = ConfigDict(extra="forbid")

    subject: str
    subject_type: str | None = None
    predicate: dict[str, Any]
    a: ConflictStatement
    b: ConflictStatement
    proposed: ProposedChange


class ConfirmReply(BaseModel):
    """The second, independent judgment of a proposed change."""

    agree: bool = Field(
        description="True only when the data shows the proposed change is right; false when it "
        "is wrong or the data does not show it."
    )
    confidence: float = Field(
        ge=0.0, le=1.0, description="How sure the answer is, from 0 (a guess) to 1 (certain)."
    )
    reason: str = Field(description="One or two sentences: why, citing the dates and texts.")


#: What the rules answer when they can confirm a change by themselves.
RULE_CONFIRMED = 0.85


def confirm_change_heuristic(request: ConfirmChangeRequest) -> ConfirmReply:
    """Confirms only what rules can check: a merge of identical or near-identical wordings of
    the same thing, a supersede whose newer statement starts later on a predicate expected to
    change. Anything else: "the rules cannot confirm this" — a person decides."""
    a, b, proposed = request.a, request.b, request.proposed
    if proposed.verdict == "MERGE":
        same = resolve_conflict_heuristic(
            ResolveConflictRequest(
                subject=request.subject,
                subject_type=request.subject_type,
                predicate=request.predicate,
                why_asked="second judgment",
                a=a,
                b=b,
            )
        )
        if same.verdict == "MERGE":
            return ConfirmReply(
                agree=True, confidence=RULE_CONFIRMED, reason=f"rules agree: {same.reason}"
            )
        return ConfirmReply(
            agree=False, confidence=0.6, reason="the rules cannot confirm that these are the same"
        )
    new, old = (a, b) if proposed.newer == "a" else (b, a)
    volatile = request.predicate.get("volatility") == "volatile"
    if volatile and new.valid_at and old.valid_at and new.valid_at > old.valid_at:
        return ConfirmReply(
            agree=True,
            confidence=RULE_CONFIRMED,
            reason=f"rules agree: the newer statement starts later ({new.valid_at:%Y-%m-%d})",
        )
    return ConfirmReply(
        agree=False,
        confidence=0.6,
        reason="the rules cannot confirm this change (no later start on a predicate expected to "
        "change)",
    )


CONFIRM_CHANGE: JudgeTask[ConfirmChangeRequest, ConfirmReply] = JudgeTask(
    "confirm_change",
    request_model=ConfirmChangeRequest,
    reply_model=ConfirmReply,
    description="Check a change another judge proposed for two dated statements: agree only when "
    "the data shows it is right.",
    heuristic=confirm_change_heuristic,
)
