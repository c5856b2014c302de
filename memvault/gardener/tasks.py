"""The gardener's judge tasks: dedup (cluster, validate, confirmed) and bloat (scan, split).

Each task is a prompt in ``prompts/<name>.md`` (written by us), a reply model
whose field descriptions are what the model reads, and a heuristic answer for
the offline judge. The heuristics are deliberately timid: two records are the
same only when they are near-identical (normalized text equal, token Jaccard
≥ 0.9, or one contains the other but for a short lead-in such as "Context:"),
anything in between is *uncertain* (proposed, never executed), and everything
else is kept apart — a wrong merge destroys information, two kept records do not.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memvault.judge.tasks import JudgeTask
from memvault.text_tokens import ANY_SCRIPT_WORD, folded_words

#: Merge only when at least this share of core meaning is shared (the curator's rule).
SHARED_CORE_MIN = 0.85
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")


#: What two memory texts are compared by: their words in any script, case-folded.
tokens = folded_words


def normalized(text: str) -> str:
    return " ".join(tokens(text))


def jaccard(a: str, b: str) -> float:
    sa, sb = set(tokens(a)), set(tokens(b))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def sentences(text: str) -> list[str]:
    """Sentences (and paragraphs) of a text, stripped; joining them keeps every word."""
    parts: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        parts.extend(s.strip() for s in _SENTENCE.split(paragraph.strip()) if s.strip())
    return parts


# --------------------------------------------------------------------------- shared models


class MemoryRecord(BaseModel):
    """One memory item as the judge sees it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    importance: float | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None


class ScoredPair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    a: str
    b: str
    similarity: float


# --------------------------------------------------------------------------- dedup_validate


class DedupValidateRequest(BaseModel):
    """Exactly two records that an index found similar: the newer one and an existing one."""

    model_config = ConfigDict(extra="forbid")

    new: MemoryRecord
    existing: MemoryRecord
    similarity: float


class DedupValidateReply(BaseModel):
    """Whether two records are the same memory. The default is to keep both."""

    verdict: Literal["merge", "keep_both", "uncertain"] = Field(
        description=(
            "merge only if both records say the same thing (at least 85% of their core meaning "
            "is shared) and merging loses nothing; keep_both when they differ in any fact that "
            "matters; uncertain when you cannot tell."
        )
    )
    shared_core: float = Field(
        ge=0.0, le=1.0, description="Share of core meaning the two records have in common, 0 to 1."
    )
    confidence: float = Field(
        ge=0.0, le=1.0, description="How sure you are of the verdict, 0 to 1."
    )
    reason: str = Field(description="One sentence: what is shared or what differs.")


def _pair_verdict(a: str, b: str) -> tuple[str, float, float, str]:
    """(verdict, shared_core, confidence, reason) by the near-identical rules."""
    na, nb = normalized(a), normalized(b)
    if na == nb:
        return "merge", 1.0, 0.97, "the normalized texts are identical"
    overlap = jaccard(a, b)
    if overlap >= 0.9:
        return "merge", overlap, 0.9, f"token overlap {overlap:.2f}"
    ta, tb = set(tokens(a)), set(tokens(b))
    small, large = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    if small <= large and len(large - small) <= 3:
        # The shorter record's meaning is wholly inside the longer one.
        return "merge", 0.9, 0.85, "one record repeats the other with a short lead-in"
    if overlap >= 0.7:
        return (
            "uncertain",
            overlap,
            0.5,
            f"similar wording (overlap {overlap:.2f}), details may differ",
        )
    return "keep_both", overlap, 0.8, "different wording; a merge could lose a detail"


def _validate_heuristic(request: DedupValidateRequest) -> DedupValidateReply:
    verdict, shared, confidence, reason = _pair_verdict(request.new.text, request.existing.text)
    return DedupValidateReply(
        verdict=verdict,
        shared_core=round(shared, 3),
        confidence=confidence,
        reason=reason,
    )


DEDUP_VALIDATE: JudgeTask[DedupValidateRequest, DedupValidateReply] = JudgeTask(
    "dedup_validate",
    request_model=DedupValidateRequest,
    reply_model=DedupValidateReply,
    description="Decide whether two similar memory records are the same memory (default: keep both).",
    heuristic=_validate_heuristic,
)


# --------------------------------------------------------------------------- dedup_cluster


class DedupClusterRequest(BaseModel):
    """Three or more records that an index found mutually similar."""

    model_config = ConfigDict(extra="forbid")

    records: list[MemoryRecord]
    pairs: list[ScoredPair]


class MergeGroup(BaseModel):
    ids: list[str] = Field(min_length=2, description="Ids of records that are one memory.")
    shared_core: float = Field(ge=0.0, le=1.0, description="Core meaning the group shares, 0 to 1.")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are, 0 to 1.")
    reason: str = Field(description="One sentence on what they share.")


class DedupClusterReply(BaseModel):
    """Which records of the cluster to merge; every record not in a group is kept as it is."""

    merge_groups: list[MergeGroup] = Field(
        description="Groups whose records share at least 85% of their core meaning; may be empty."
    )
    uncertain_groups: list[MergeGroup] = Field(
        description="Groups that might be one memory but you are not sure; they go to a human."
    )


def _cluster_heuristic(request: DedupClusterRequest) -> DedupClusterReply:
    texts = {r.id: r.text for r in request.records}
    parent = {i: i for i in texts}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    uncertain: list[MergeGroup] = []
    ids = sorted(texts)
    for n, a in enumerate(ids):
        for b in ids[n + 1 :]:
            verdict, shared, confidence, reason = _pair_verdict(texts[a], texts[b])
            if verdict == "merge":
                parent[find(b)] = find(a)
            elif verdict == "uncertain":
                uncertain.append(
                    MergeGroup(
                        ids=[a, b],
                        shared_core=round(shared, 3),
                        confidence=confidence,
                        reason=reason,
                    )
                )
    groups: dict[str, list[str]] = {}
    for i in ids:
        groups.setdefault(find(i), []).append(i)
    merged = [g for g in groups.values() if len(g) > 1]
    in_merge = {i for g in merged for i in g}
    return DedupClusterReply(
        merge_groups=[
            MergeGroup(ids=g, shared_core=0.9, confidence=0.85, reason="near-identical texts")
            for g in merged
        ],
        uncertain_groups=[u for u in uncertain if not set(u.ids) <= in_merge],
    )


DEDUP_CLUSTER: JudgeTask[DedupClusterRequest, DedupClusterReply] = JudgeTask(
    "dedup_cluster",
    request_model=DedupClusterRequest,
    reply_model=DedupClusterReply,
    description="Curate a cluster of similar memory records: which are one memory, losing no data.",
    heuristic=_cluster_heuristic,
)


# --------------------------------------------------------------------------- dedup_confirmed


class DedupConfirmedRequest(BaseModel):
    """A merge already decided: write the one record that replaces them all."""

    model_config = ConfigDict(extra="forbid")

    survivor: MemoryRecord
    absorbed: list[MemoryRecord] = Field(min_length=1)


class DedupConfirmedReply(BaseModel):
    """The merged record."""

    text: str = Field(
        min_length=1,
        description=(
            "The merged memory: the survivor's wording, plus every unique detail of the "
            "absorbed records (names, numbers, dates, reasons). Nothing may be lost."
        ),
    )
    tags: list[str] = Field(description="The union of the records' tags.")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are nothing was lost.")


def _confirmed_heuristic(request: DedupConfirmedRequest) -> DedupConfirmedReply:
    """The survivor's text, then each absorbed sentence whose words it does not already hold."""
    parts = [request.survivor.text.strip()]
    have = set(tokens(request.survivor.text))
    for record in request.absorbed:
        for sentence in sentences(record.text):
            words = set(tokens(sentence))
            if words and not words <= have:
                parts.append(sentence)
                have |= words
    tags = list(
        dict.fromkeys([*request.survivor.tags, *(t for r in request.absorbed for t in r.tags)])
    )
    return DedupConfirmedReply(text=" ".join(parts), tags=tags, confidence=0.9)


DEDUP_CONFIRMED: JudgeTask[DedupConfirmedRequest, DedupConfirmedReply] = JudgeTask(
    "dedup_confirmed",
    request_model=DedupConfirmedRequest,
    reply_model=DedupConfirmedReply,
    description="Write the merged memory record for a confirmed merge, keeping every unique detail.",
    heuristic=_confirmed_heuristic,
)


# --------------------------------------------------------------------------- bloat_scan


class BloatScanRequest(BaseModel):
    """One over-long memory item."""

    model_config = ConfigDict(extra="forbid")

    record: MemoryRecord
    max_chars: int


class BuriedTopic(BaseModel):
    phrase: str = Field(
        min_length=1, description="A short search phrase (3-8 words) naming one buried topic."
    )
    about_person: bool = Field(description="True when the topic is a detail about a person.")
    passes_coffee_shop_test: bool = Field(
        description=(
            "For details about a person: would this still matter if you met them by chance in "
            "six months? False for trivia. Always true for topics not about a person."
        )
    )


class BloatScanReply(BaseModel):
    """The gist of the item and the distinct topics buried in it. Changes nothing."""

    gist: str = Field(
        min_length=1, description="One or two sentences: what the item is really about."
    )
    topics: list[BuriedTopic] = Field(description="The distinct topics, in the order they appear.")


def _topic_phrase(sentence: str) -> str:
    words = [w for w in ANY_SCRIPT_WORD.findall(sentence) if len(w) > 2][:6]
    return " ".join(words) or sentence[:40]


def _person_sentence(sentence: str) -> bool:
    return bool(re.search(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b", sentence))


def _scan_heuristic(request: BloatScanRequest) -> BloatScanReply:
    parts = sentences(request.record.text)
    gist = parts[0] if parts else request.record.text[: request.max_chars // 2]
    topics = [
        BuriedTopic(
            phrase=_topic_phrase(s), about_person=_person_sentence(s), passes_coffee_shop_test=True
        )
        for s in parts[1:]
    ]
    return BloatScanReply(gist=gist, topics=topics)


BLOAT_SCAN: JudgeTask[BloatScanRequest, BloatScanReply] = JudgeTask(
    "bloat_scan",
    request_model=BloatScanRequest,
    reply_model=BloatScanReply,
    description="Find the gist and the buried topics of an over-long memory item (changes nothing).",
    heuristic=_scan_heuristic,
)


# --------------------------------------------------------------------------- bloat_split


class TopicMatches(BaseModel):
    model_config = ConfigDict(extra="forbid")

    phrase: str
    matches: list[MemoryRecord]


class BloatSplitRequest(BaseModel):
    """The over-long item, its topics, and the existing records each topic's search found."""

    model_config = ConfigDict(extra="forbid")

    record: MemoryRecord
    gist: str
    topics: list[TopicMatches]
    max_chars: int


class SplitPiece(BaseModel):
    text: str = Field(
        min_length=1, description="The detail, in the item's own words (whole sentences)."
    )
    existing_id: str | None = Field(
        description=(
            "Id of a matching existing record this detail belongs to (it is appended there), "
            "or null to make a new record linked to the parent."
        )
    )


class BloatSplitReply(BaseModel):
    """The trimmed parent and where every other sentence of the item goes."""

    parent_text: str = Field(min_length=1, description="The parent trimmed to its gist.")
    pieces: list[SplitPiece] = Field(
        description="Every sentence not in parent_text, grouped by topic; none may be dropped."
    )
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are nothing was lost.")


#: A new child holds at most about this many characters.
CHILD_CHARS = 400


def _split_heuristic(request: BloatSplitRequest) -> BloatSplitReply:
    parts = sentences(request.record.text)
    if not parts:
        return BloatSplitReply(parent_text=request.record.text, pieces=[], confidence=0.0)
    parent, rest = parts[0], parts[1:]
    pieces: list[SplitPiece] = []
    current: list[str] = []
    for sentence in rest:
        if current and len(" ".join([*current, sentence])) > CHILD_CHARS:
            pieces.append(SplitPiece(text=" ".join(current), existing_id=None))
            current = []
        current.append(sentence)
    if current:
        pieces.append(SplitPiece(text=" ".join(current), existing_id=None))
    return BloatSplitReply(parent_text=parent, pieces=pieces, confidence=0.85)


BLOAT_SPLIT: JudgeTask[BloatSplitRequest, BloatSplitReply] = JudgeTask(
    "bloat_split",
    request_model=BloatSplitRequest,
    reply_model=BloatSplitReply,
    description="Trim an over-long memory item to its gist and move its details into linked records.",
    heuristic=_split_heuristic,
)

#: The gardener's tasks by name (the coordinator adds them to ``memvault.judge.tasks.TASKS``).
GARDEN_TASKS: dict[str, JudgeTask[Any, Any]] = {
    task.name: task
    for task in (DEDUP_CLUSTER, DEDUP_VALIDATE, DEDUP_CONFIRMED, BLOAT_SCAN, BLOAT_SPLIT)
}
