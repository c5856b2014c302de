"""D3 Reflect: a judge reads a statistics snapshot (never the raw store) and writes insights and gaps.

The snapshot is small: counts, what changed, the most central entities, the
communities, the most volatile predicates, repeated recall failures, and a few
memory blocks about the central entities (``sources``). Insights become blocks of
kind ``insight``; knowledge gaps go to ``knowledge_gap`` (kind ``recall``: a
question that keeps failing; ``structural``: a central entity we hold no facts
about). The heuristic judge writes an honest statistical reflection and labels it
as such.

An LLM's insight is stored only when it rests on the data: it cites source blocks
(``source_ids``) that were in the snapshot and are still active memories, and its
names, numbers and dates appear in them, with no instruction-like text
(:mod:`memvault.grounded_text`). One that does not is refused and counted
(``insights_refused``, by reason). A stored insight keeps what it cites in its tags
(``cites:<block id>``), so recall can mark it and rank it below its sources.

A knowledge gap the LLM names is checked too (:func:`supported_gaps`): a recall gap must be
a failing signature the snapshot holds, a structural gap a central entity it lists, and
its reason must say only what the snapshot says (no instruction, no name, number or word
it does not hold). One that is not is refused and counted (``gaps_refused``, by reason).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from memvault.dream.orient import OrientStats, last_dream
from memvault.errors import JudgeError
from memvault.grounded_text import REASONS, check
from memvault.ids import stable_id
from memvault.judge.base import Judge
from memvault.judge.tasks import JudgeTask
from memvault.normalize import utcnow
from memvault.profile.gaps import recall_gaps, record_gaps
from memvault.recall.result import CITES
from memvault.store import Store
from memvault.store.queries.blocks import active_non_insight_texts, memories_mentioning
from memvault.store.queries.graph import first_communities, most_central_entities
from memvault.store.queries.triples import superseded_by_predicate

STATISTICAL_LABEL = "[statistical reflection: heuristic judge, no LLM]"
#: Source blocks given to the judge: per central entity, and in all; text clipped to this.
SOURCES_PER_ENTITY = 3
MAX_SOURCES = 24
SOURCE_CHARS = 500
#: Why an insight was refused: it cites nothing, cites a block that was not given or is no
#: longer an active memory, or says what its sources do not (:mod:`memvault.grounded_text`).
INSIGHT_REFUSALS: tuple[str, ...] = ("no_sources", "unknown_sources", *REASONS)
#: Why a gap was refused: its signature is no failing recall signature (or central entity)
#: of the snapshot, or its reason says what the snapshot does not.
GAP_REFUSALS: tuple[str, ...] = ("unknown_signature", *REASONS)
#: Words a gap's reason may use besides the snapshot's own (how the rules word a gap).
GAP_WORDING = (
    "recall failed failing fails times question questions answer answered unanswered asked "
    "central entity entities known unknown missing no fact facts gap gaps knowledge held hold "
    "holds among most least nothing about"
)


class SourceBlock(BaseModel):
    """A memory block the reflection may cite."""

    id: str
    text: str


class CentralEntity(BaseModel):
    name: str
    entity_type: str
    pagerank: float
    ppr: float
    facts: int


class CommunitySummary(BaseModel):
    community: int
    size: int
    members: list[str] = Field(description="Up to five member names, most central first")


class RecallFailure(BaseModel):
    signature: str
    intent_label: str | None
    entities: list[str]
    fail_count: int
    last_fail_at: dt.datetime


class StatisticsSnapshot(BaseModel):
    """What reflect may read: aggregates only."""

    model_config = ConfigDict(extra="forbid")

    new_since_last_dream: dict[str, int]
    totals: dict[str, int]
    active_triples: int
    superseded_by_predicate: dict[str, int] = Field(
        description="Facts retired as superseded, per predicate (volatility seen in the data)"
    )
    central_entities: list[CentralEntity]
    communities: list[CommunitySummary]
    recall_failures: list[RecallFailure]
    open_reviews: int
    sources: list[SourceBlock] = Field(
        default_factory=list,
        description="Memory blocks about the central entities: the only blocks an insight may cite",
    )


class InsightItem(BaseModel):
    text: str = Field(
        min_length=1, description="One insight, one or two sentences, about the owner's memory"
    )
    entities: list[str] = Field(description="Names of the entities the insight is about")
    confidence: float = Field(ge=0.0, le=1.0, description="How well the statistics support it")
    source_ids: list[str] = Field(
        default_factory=list,
        description="The ids of the source blocks (from `sources`) that say what the insight "
        "says: every name, number and date in it must appear in them",
    )


class GapItem(BaseModel):
    signature: str = Field(
        min_length=1, description="The failing recall signature, or the entity name"
    )
    kind: Literal["recall", "structural"] = Field(
        description="recall: a question that keeps failing; structural: something central with no facts"
    )
    reason: str = Field(description="Why this is a gap, in one sentence")


class ReflectionReply(BaseModel):
    """Insights and knowledge gaps read off a statistics snapshot."""

    insights: list[InsightItem] = Field(description="At most five insights, most useful first")
    gaps: list[GapItem] = Field(description="Knowledge gaps worth filling")


def _statistical_reflection(snapshot: StatisticsSnapshot) -> ReflectionReply:
    """What the numbers say, and nothing they do not."""
    insights: list[InsightItem] = []
    if snapshot.central_entities:
        top = snapshot.central_entities[:3]
        insights.append(
            InsightItem(
                text=f"{STATISTICAL_LABEL} Most central in recent sessions (personalized PageRank): "
                + ", ".join(f"{e.name} ({e.entity_type}, {e.ppr:.3f})" for e in top)
                + ".",
                entities=[e.name for e in top],
                confidence=0.6,
            )
        )
    if snapshot.communities:
        big = snapshot.communities[0]
        insights.append(
            InsightItem(
                text=f"{STATISTICAL_LABEL} {len(snapshot.communities)} communities; the largest has "
                f"{big.size} entities around {', '.join(big.members[:3])}.",
                entities=big.members[:3],
                confidence=0.5,
            )
        )
    if snapshot.superseded_by_predicate:
        predicate, count = max(
            snapshot.superseded_by_predicate.items(), key=lambda kv: (kv[1], kv[0])
        )
        insights.append(
            InsightItem(
                text=f"{STATISTICAL_LABEL} The most volatile predicate is {predicate}: "
                f"{count} fact(s) superseded so far.",
                entities=[],
                confidence=0.6,
            )
        )
    new = snapshot.new_since_last_dream
    if any(new.values()):
        insights.append(
            InsightItem(
                text=f"{STATISTICAL_LABEL} New since the last dream: "
                + ", ".join(f"{n} {table}" for table, n in new.items() if n)
                + ".",
                entities=[],
                confidence=0.9,
            )
        )
    gaps = [
        GapItem(
            signature=f.signature,
            kind="recall",
            reason=f"recall failed {f.fail_count} times (last {f.last_fail_at:%Y-%m-%d})",
        )
        for f in snapshot.recall_failures
    ]
    gaps += [
        GapItem(
            signature=e.name,
            kind="structural",
            reason=f"{e.name} is among the most central entities but no fact about it is known",
        )
        for e in snapshot.central_entities
        if e.facts == 0
    ]
    return ReflectionReply(insights=insights, gaps=gaps)


REFLECT: JudgeTask[StatisticsSnapshot, ReflectionReply] = JudgeTask(
    "reflect",
    request_model=StatisticsSnapshot,
    reply_model=ReflectionReply,
    description="Write insights and knowledge gaps from a statistics snapshot of the memory store.",
    heuristic=_statistical_reflection,
)


def recall_failures(store: Store, min_fails: int = 2) -> list[RecallFailure]:
    """Signatures (intent | sorted entity ids) with at least ``min_fails`` INCORRECT verdicts,
    by the knowledge-gap rule (:func:`memvault.profile.gaps.recall_gaps`), most failing first."""
    gaps = sorted(recall_gaps(store, min_fails), key=lambda g: (-g["fail_count"], g["signature"]))
    return [
        RecallFailure(
            signature=g["signature"],
            intent_label=g["detail"]["intent"],
            entities=g["detail"]["entities"],
            fail_count=g["fail_count"],
            last_fail_at=g["last_fail_at"],
        )
        for g in gaps
    ]


def statistics_snapshot(store: Store, stats: OrientStats, *, top: int = 10) -> StatisticsSnapshot:
    central = most_central_entities(store, top)
    communities = first_communities(store, top)
    summaries = []
    if not communities.is_empty():
        for part in communities.sort(
            ["community", "ppr", "name"], descending=[False, True, False]
        ).partition_by("community", maintain_order=True):
            summaries.append(
                CommunitySummary(
                    community=int(part["community"][0]),
                    size=int(part["size"][0]),
                    members=part["name"].head(5).to_list(),
                )
            )
        summaries.sort(key=lambda s: (-s.size, s.community))
    sources = source_blocks(store, [str(i) for i in central["id"].to_list()])
    superseded = superseded_by_predicate(store)
    return StatisticsSnapshot(
        new_since_last_dream=stats.new,
        totals=stats.totals,
        active_triples=stats.active_triples,
        superseded_by_predicate={k: int(v) for k, v in sorted(superseded.items())},
        central_entities=[
            CentralEntity(**{k: v for k, v in row.items() if k != "id"})
            for row in central.iter_rows(named=True)
        ],
        communities=summaries,
        recall_failures=recall_failures(store),
        open_reviews=stats.open_reviews,
        sources=sources,
    )


def source_blocks(
    store: Store, entity_ids: list[str], *, per_entity: int = SOURCES_PER_ENTITY
) -> list[SourceBlock]:
    """The newest active memory blocks (insights excluded) that mention each entity, in the
    entities' order: what the reflection may cite."""
    if not entity_ids:
        return []
    rows = memories_mentioning(store, entity_ids)
    if rows.is_empty():
        return []
    order = {e: k for k, e in enumerate(entity_ids)}
    picked = (
        rows.unique(["entity_id", "id"])
        .with_columns(rank=pl.col("entity_id").replace_strict(order, return_dtype=pl.Int64))
        .sort(["rank", "created_at", "id"], descending=[False, True, False])
        .group_by("entity_id", maintain_order=True)
        .head(per_entity)
        .unique("id", keep="first", maintain_order=True)
        .head(MAX_SOURCES)
    )
    return [
        SourceBlock(id=r["id"], text=str(r["text"])[:SOURCE_CHARS])
        for r in picked.iter_rows(named=True)
    ]


@dataclass
class ReflectResult:
    insights: list[InsightItem] = field(default_factory=list)
    gaps: list[GapItem] = field(default_factory=list)
    insights_written: int = 0
    gaps_opened: int = 0
    gaps_updated: int = 0
    #: Gaps the reflection named that the data had answered since (recorded as answered).
    gaps_answered: int = 0
    #: LLM insights not stored, per reason (:data:`INSIGHT_REFUSALS`).
    refused_by: dict[str, int] = field(default_factory=dict)
    #: LLM gaps not stored, per reason (:data:`GAP_REFUSALS`).
    gaps_refused_by: dict[str, int] = field(default_factory=dict)
    #: Why the judge gave no reflection (the dream goes on without one).
    failure: str | None = None

    @property
    def insights_refused(self) -> int:
        return sum(self.refused_by.values())

    @property
    def gaps_refused(self) -> int:
        return sum(self.gaps_refused_by.values())


def dreamed_before(store: Store) -> bool:
    return last_dream(store)[0] is not None


def insight_id(insight: InsightItem) -> str:
    """Keyed by the insight's text and the evidence (entities) it rests on, never by the run."""
    return stable_id("insight", insight.text.strip(), *sorted(set(insight.entities)))


def supported_insights(
    store: Store,
    snapshot: StatisticsSnapshot,
    insights: list[InsightItem],
    refused_by: dict[str, int],
) -> list[InsightItem]:
    """The insights that rest on the data: each cites source blocks that were in the snapshot
    and are active memories now, and says nothing (names, numbers, dates, instructions) that
    those blocks do not. The others are counted in ``refused_by`` by reason."""
    given = {s.id for s in snapshot.sources}
    cited = sorted({b for i in insights for b in i.source_ids if b in given})
    texts = active_non_insight_texts(store, cited)
    kept = []
    for insight in insights:
        ids = list(dict.fromkeys(insight.source_ids))
        if not ids:
            reason: str | None = "no_sources"
        elif any(b not in given or b not in texts for b in ids):
            reason = "unknown_sources"
        else:
            reason = check(
                insight.text, [str(texts[b]) for b in ids], names_too=insight.entities
            ).reason
        if reason is None:
            kept.append(insight.model_copy(update={"source_ids": ids}))
        else:
            refused_by[reason] = refused_by.get(reason, 0) + 1
    return kept


def supported_gaps(
    snapshot: StatisticsSnapshot, gaps: list[GapItem], refused_by: dict[str, int]
) -> list[GapItem]:
    """The gaps that rest on the snapshot: a recall gap names a failing signature it holds, a
    structural gap a central entity it lists, and the reason says nothing the snapshot does
    not (no instruction, no name, number or content word it lacks). The others are counted in
    ``refused_by`` by reason."""
    failing = {f.signature for f in snapshot.recall_failures}
    central = {e.name for e in snapshot.central_entities}
    said = [snapshot.model_dump_json(exclude={"sources"}), GAP_WORDING]
    kept = []
    for gap in gaps:
        known = failing if gap.kind == "recall" else central
        reason = (
            "unknown_signature" if gap.signature not in known else check(gap.reason, said).reason
        )
        if reason is None:
            kept.append(gap)
        else:
            refused_by[reason] = refused_by.get(reason, 0) + 1
    return kept


def reflect(
    store: Store,
    judge: Judge,
    snapshot: StatisticsSnapshot,
    run_id: str,
    *,
    max_insights: int = 5,
    dry_run: bool = False,
) -> ReflectResult:
    """Ask the judge once; store its insights (as blocks) and gaps.

    A dream with no new input since the last successful one reflects on nothing and
    asks nothing (its snapshot would only restate what the last dream consolidated).

    An insight's id is derived from what it says and the entities it rests on, so an
    unchanged insight is never written twice (a dream with nothing new writes nothing),
    and a resumed run does not repeat what it wrote before the crash.
    """
    if not any(snapshot.new_since_last_dream.values()) and dreamed_before(store):
        return ReflectResult()  # nothing new since the last dream: nothing new to reflect on
    try:
        reply = judge.ask(REFLECT, snapshot)
    except (
        JudgeError
    ) as exc:  # after the judge's retries: no reflection this time, the dream goes on
        return ReflectResult(failure=str(exc))
    result = ReflectResult(gaps=reply.gaps)
    if judge.kind == "heuristic":  # memvault's own arithmetic on the snapshot, not an LLM's
        result.insights = reply.insights[:max_insights]
    else:
        result.insights = supported_insights(store, snapshot, reply.insights, result.refused_by)
        result.gaps = supported_gaps(snapshot, reply.gaps, result.gaps_refused_by)
        result.insights = result.insights[:max_insights]
    if dry_run:
        return result
    now = utcnow()
    label = "statistical" if judge.kind == "heuristic" else "llm"
    insights = pl.DataFrame(
        {
            "id": [insight_id(i) for i in result.insights],
            "kind": ["insight"] * len(result.insights),
            "text": [i.text for i in result.insights],
            "importance": [round(0.3 + 0.4 * i.confidence, 3) for i in result.insights],
            "tags": [
                json.dumps(["dream-insight", label, *(CITES + b for b in i.source_ids)])
                for i in result.insights
            ],
            "created_at": [now] * len(result.insights),
            "updated_at": [now] * len(result.insights),
        },
        schema_overrides={"created_at": pl.Datetime("us"), "updated_at": pl.Datetime("us")},
    ).unique("id", keep="first", maintain_order=True)
    known = {g["signature"]: g for g in recall_gaps(store)}
    gaps = [reflected_gap(gap, known.get(gap.signature)) for gap in result.gaps]
    with store.mutation(run_id, "dream_reflect") as m:
        result.insights_written = len(m.insert("blocks", insights, reason="dream reflect"))
        written = record_gaps(
            store, run_id, gaps, phase="dream_reflect", reason="dream reflect", into=m
        )
    result.gaps_opened, result.gaps_updated, result.gaps_answered = (
        written.opened,
        written.updated,
        written.answered,
    )
    return result


def reflected_gap(gap: GapItem, failing: dict[str, Any] | None) -> dict[str, Any]:
    """A gap the reflection named, as the gap rules write it: a recall signature that is
    failing carries the log's counts and dates, and its answer when one came since (the
    reflection reads failures, not answers); anything else carries the reflection's reason."""
    if failing is not None and gap.kind == "recall":
        return failing | {"detail": failing["detail"] | {"reason": gap.reason}}
    return {
        "signature": gap.signature,
        "kind": gap.kind,
        "fail_count": 0,
        "first_fail_at": None,
        "last_fail_at": None,
        "answered_at": None,
        "detail": {"reason": gap.reason},
    }
