"""L3 semantic: facts that are well-formed but mean something contradictory.

Cheap first: only facts the store learned since the last lint are looked at, each
paired with the other current facts with the same subject and predicate (a predicate
that may hold several values: one that holds one value at a time is the dream's
conflict resolution's), and a pair goes to the judge only when the two are near in
embedding space but not the same wording. At most ``pairs_per_100`` pairs per 100 new
facts are asked about.

A contradiction is a finding; when the judge also says how to resolve it (one
statement supersedes or restates the other), that change goes to L4 for a second,
independent judgment — it is never applied on this judgment alone. With the offline
heuristic judge only what a rule can honestly see is reported (one statement negating
the other) and nothing is proposed.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from memvault.embed import Embedder
from memvault.embed.base import normalize_rows
from memvault.judge.base import Judge, ask_each
from memvault.judge.tasks import JudgeTask
from memvault.lint.findings import Finding, LintReport
from memvault.store import Store
from memvault.store.queries.triples import (
    active_facts_in_groups_of,
    active_triples_written_since,
    facts_with_subject_names,
)
from memvault.store.queries.verdicts import judged_pairs
from memvault.temporal.conflict.judge import ConflictReply
from memvault.temporal.grounding import Grounding
from memvault.text_tokens import normalized, normalized_words

RULES = ("contradiction",)
#: Pairs asked about per 100 new facts (L4 asks at most as many again: ≤ 10 calls per 100).
PAIRS_PER_100 = 5
#: At most this many pairs per run, and this many new facts looked at (the newest).
MAX_PAIRS = 50
MAX_NEW = 5000
#: Earlier facts of one subject and predicate each new fact is compared with (the most recent).
OTHERS_PER_GROUP = 500
NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor"})


class SemanticStatement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    triple_id: str
    predicate: str
    object: str
    valid_at: dt.datetime | None = None
    created_at: dt.datetime


class ContradictionRequest(BaseModel):
    """Two current facts about one subject that read alike but are not the same."""

    model_config = ConfigDict(extra="forbid")

    subject: str
    a: SemanticStatement
    b: SemanticStatement


class ContradictionReply(BaseModel):
    contradicts: bool = Field(description="True when both cannot be true at the same time")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure, from 0 to 1")
    reason: str = Field(description="One or two sentences, citing the facts and dates")
    resolution: Literal["SUPERSEDE", "MERGE", "NONE"] = Field(
        description="SUPERSEDE: the newer one replaces the other; MERGE: they are one fact; "
        "NONE: a person must look"
    )
    newer: Literal["a", "b"] | None = Field(default=None, description="For SUPERSEDE")


def _negated(a: str, b: str) -> bool:
    wa, wb = set(normalized_words(a)), set(normalized_words(b))
    return wa != wb and (wa - NEGATIONS) == (wb - NEGATIONS) and bool((wa ^ wb) & NEGATIONS)


def detect_contradiction_heuristic(request: ContradictionRequest) -> ContradictionReply:
    """Only a negation is visible to rules; anything else is not claimed either way."""
    if _negated(request.a.object, request.b.object):
        return ContradictionReply(
            contradicts=True,
            confidence=0.6,
            reason="rules: one statement negates the other",
            resolution="NONE",
        )
    return ContradictionReply(
        contradicts=False,
        confidence=0.3,
        reason="rules cannot tell whether these contradict (no LLM configured)",
        resolution="NONE",
    )


DETECT_CONTRADICTION: JudgeTask[ContradictionRequest, ContradictionReply] = JudgeTask(
    "detect_contradiction",
    request_model=ContradictionRequest,
    reply_model=ContradictionReply,
    description="Decide whether two current facts about the same subject contradict each other.",
    heuristic=detect_contradiction_heuristic,
)


@dataclass
class Proposal:
    """A change L3 would make, for L4 to confirm: the pair and the first judgment."""

    triple_a: str
    triple_b: str
    reply: ConflictReply


@dataclass
class SemanticResult:
    report: LintReport
    proposals: list[Proposal] = field(default_factory=list)
    new_triples: int = 0
    candidates: int = 0
    asked: int = 0
    rules_only: bool = False

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows: the mode, and how the layer narrowed the facts down."""
        return {
            "mode": "rules only: no LLM configured, only negations are reported"
            if self.rules_only
            else "llm",
            "new_facts": self.new_triples,
            "candidate_pairs": self.candidates,
            "pairs_asked": self.asked,
            "proposed_changes": len(self.proposals),
        }


def new_triples(store: Store, since: dt.datetime | None) -> list[str]:
    """Current facts the store learned after ``since`` (store time, from the audit log),
    newest first."""
    return active_triples_written_since(store, since)


def candidate_pairs(
    store: Store,
    embedder: Embedder,
    fresh: list[str],
    grounding: Grounding,
    *,
    threshold: float,
    limit: int,
    others: int = OTHERS_PER_GROUP,
) -> tuple[pl.DataFrame, int]:
    """The ``limit`` most similar pairs (a new fact, another current fact with the same
    subject and predicate), and how many pairs qualified.

    Facts are compared within one subject and one predicate that may hold several values
    (a predicate holding one value at a time is the dream's conflict resolution's), against
    at most ``others`` of the group's most recent earlier facts, so a subject with a hundred
    thousand facts costs no more than a small one. Each distinct wording is embedded once."""
    if not fresh or limit <= 0:
        return pl.DataFrame(), 0
    functional = sorted(p.name for p in grounding.predicates.values() if p.is_functional)
    facts = active_facts_in_groups_of(store, fresh, functional)
    if facts.height < 2:
        return pl.DataFrame(), 0
    facts = (
        facts.with_columns(pl.col("id").is_in(fresh).alias("fresh"))
        .sort("subject_id", "predicate", "fresh", "created_at", "id", descending=[False, False, True, True, False])
        .with_columns(pl.int_range(pl.len()).over("subject_id", "predicate").alias("rank"))
        .filter(pl.col("fresh") | (pl.col("rank") < others + pl.col("fresh").sum().over("subject_id", "predicate")))
        # Normalized wordings of the facts kept only (a hub subject's group may hold thousands).
        .with_columns(pl.col("object").map_elements(normalized, return_dtype=pl.Utf8).alias("key"))
    )  # fmt: skip
    texts = (
        facts.select(pl.col("predicate").str.replace_all("_", " ") + " " + pl.col("object"))
        .to_series()
        .to_list()
    )
    unique, index = np.unique(np.array(texts, dtype=object), return_inverse=True)
    vectors = normalize_rows(embedder.embed(list(unique)))
    vectors = vectors[index]
    ids = np.array(facts["id"].to_list(), dtype=object)
    keys = np.array(facts["key"].to_list(), dtype=object)
    is_fresh = facts["fresh"].to_numpy()
    group = (facts["subject_id"] + "\x00" + facts["predicate"]).to_numpy()
    bounds = np.flatnonzero(np.r_[True, group[1:] != group[:-1], True])
    rows = []
    for lo, hi in itertools.pairwise(bounds):
        if hi - lo < 2 or not is_fresh[lo]:  # the group's new facts come first
            continue
        span = slice(lo, hi)
        sims = vectors[span] @ vectors[span].T
        wanted = np.triu(sims >= threshold, k=1)
        wanted &= is_fresh[span][:, None] | is_fresh[span][None, :]
        wanted &= keys[span][:, None] != keys[span][None, :]  # the same wording is no conflict
        for x, y in zip(*np.nonzero(wanted), strict=True):
            a, b = sorted((ids[lo + x], ids[lo + y]))
            rows.append({"a": a, "b": b, "similarity": float(sims[x, y])})
    if rows:  # pairs judged before (a verdict of the dream's or an earlier lint's) are left
        known = judged_pairs(store, [f"{r['a']}|{r['b']}" for r in rows])
        rows = [r for r in rows if f"{r['a']}|{r['b']}" not in known]
    if not rows:
        return pl.DataFrame(), 0
    ranked = pl.DataFrame(rows).sort("similarity", "a", "b", descending=[True, False, False])
    return ranked.head(limit), ranked.height


def lint_semantic(
    store: Store,
    judge: Judge,
    embedder: Embedder,
    since: dt.datetime | None,
    grounding: Grounding | None = None,
    *,
    threshold: float = 0.6,
    pairs_per_100: int = PAIRS_PER_100,
    max_new: int = MAX_NEW,
) -> SemanticResult:
    """Ask the judge about the most similar new pairs; the report holds the contradictions
    found, ``proposals`` the changes the judge would make (for L4)."""
    grounding = grounding or Grounding.load()
    fresh = new_triples(store, since)
    result = SemanticResult(LintReport("L3"), new_triples=len(fresh))
    result.rules_only = judge.kind == "heuristic"
    if len(fresh) > max_new:
        result.report.notes.append(f"{len(fresh)} new facts: the newest {max_new} were looked at")
        fresh = fresh[:max_new]
    limit = min(MAX_PAIRS, math.ceil(len(fresh) * pairs_per_100 / 100)) if fresh else 0
    pairs, result.candidates = candidate_pairs(
        store, embedder, fresh, grounding, threshold=threshold, limit=limit
    )
    if pairs.is_empty():
        return result
    ids = sorted(set(pairs["a"].to_list()) | set(pairs["b"].to_list()))
    facts = {r["id"]: r for r in facts_with_subject_names(store, ids).iter_rows(named=True)}

    def statement(fid: str) -> SemanticStatement:
        row = facts[fid]
        return SemanticStatement(
            triple_id=fid,
            predicate=row["predicate"],
            object=row["object"],
            valid_at=row["valid_at"],
            created_at=row["created_at"],
        )

    requests = [
        ContradictionRequest(subject=str(facts[a]["subject"] or a), a=statement(a), b=statement(b))
        for a, b in pairs.select("a", "b").rows()
    ]
    result.asked = len(requests)
    for request, reply in zip(
        requests, ask_each(judge, DETECT_CONTRADICTION, requests), strict=True
    ):
        if isinstance(reply, Exception):
            result.report.notes.append(f"{request.a.triple_id}|{request.b.triple_id}: {reply}")
            continue
        if not reply.contradicts:
            continue
        result.report.findings.append(
            Finding(
                layer="L3",
                rule="contradiction",
                subject=request.a.triple_id,
                evidence={
                    "a": request.a.model_dump(mode="json"),
                    "b": request.b.model_dump(mode="json"),
                    "confidence": reply.confidence,
                    "reason": reply.reason,
                    "resolution": reply.resolution,
                    "newer": reply.newer,
                },
                severity="warning",
            )
        )
        if reply.resolution != "NONE":
            result.proposals.append(
                Proposal(
                    request.a.triple_id,
                    request.b.triple_id,
                    ConflictReply(
                        verdict=reply.resolution,
                        confidence=reply.confidence,
                        reason=reply.reason,
                        newer=reply.newer,
                    ),
                )
            )
    return result
