"""What conflict resolution decides, in data: its settings, one action, a whole plan.

The planner (:mod:`~memvault.temporal.conflict.plan`) builds a :class:`ConflictPlan` of
:class:`ConflictAction` s; the apply step (:mod:`~memvault.temporal.conflict.apply`), the
lint and the review queue read them. Everything here is plain data with no store access,
so every stage can import it without importing another stage.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

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
    batch_size: int = Field(default=200, ge=1, description="Requests per judge batch.")
    apply_batch_size: int = Field(
        default=20_000,
        ge=1,
        description="Actions per transaction when applying (a crash redoes at most one).",
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


def proposal_json(action: ConflictAction) -> str:
    """The review item's proposal as stored (stable key order)."""
    return json.dumps(action.proposal or {}, ensure_ascii=False, sort_keys=True, default=str)


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
            "ties_for_review",
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


#: The triple columns conflict resolution reads, typed (also the as-of queries' row).
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


@dataclass(frozen=True)
class JudgedPair:
    """What the plan knows about a judged pair besides the request."""

    pair_id: str
    subject_id: str
    predicate: str
    preference: bool
    impact: float  # the change's impact score (memvault.review.impact)
    impact_inputs: dict[str, Any]
