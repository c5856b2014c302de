"""One-way digests: what stands in for a block's text once it is cold or frozen.

Demotion to cold replaces the text with a summary of at most 400 characters; demotion to
frozen with a one-line headline. The judge writes both (task ``tier_digest``, several
blocks per call, the memory text fenced as data); the heuristic judge cuts an extractive
summary from the text's sentences, labelled ``extractive``: the first ones, but never at the
cost of the names, numbers and dates the original holds (the sentences that carry them are
taken first, as far as the limit allows). A digest may only say what
the original says: a reply that is empty, too long, names a name or a number the original
does not hold, or carries instruction-like text (:mod:`memvault.grounded_text`) is rejected
and replaced by the extractive digest, counted by reason. Text that already fits
is its own digest and costs no call. The full text is kept beside the digest, for search
and for ``memvault show BLOCK --original`` (:mod:`memvault.lifecycle.originals`), and in
the audit log's before-image: undoing the tiering run brings it back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from memvault.errors import JudgeError
from memvault.grounded_text import REASONS, Vocabulary, check, key_terms
from memvault.judge.base import Judge, ask_each
from memvault.judge.tasks import JudgeTask

#: The longest summary a cold block may hold.
DIGEST_MAX_CHARS = 400
#: The longest headline a frozen block may hold (one line).
HEADLINE_MAX_CHARS = 120
#: Blocks per judge call.
BLOCKS_PER_CALL = 8

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: A speaker's label opening a turn ("Melanie: Thanks, Caroline!").
_LABEL = re.compile(r"^([^\W\d_][\w'’.-]*):\s+")


#: Why a digest the judge wrote was refused (the tiering asset reports each).
DIGEST_REFUSALS: tuple[str, ...] = ("missing", "length", *REASONS)


class DigestBlock(BaseModel):
    """One block to digest."""

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str


class DigestRequest(BaseModel):
    """Blocks to summarize, each on its own."""

    model_config = ConfigDict(extra="forbid")

    blocks: list[DigestBlock]
    max_summary_chars: int = DIGEST_MAX_CHARS
    max_headline_chars: int = HEADLINE_MAX_CHARS


class BlockDigest(BaseModel):
    id: str = Field(description="The id of the block, exactly as given")
    summary: str = Field(
        description="What the block says, in at most 400 characters: the facts, names, "
        "numbers and decisions a later reader needs; nothing that is not in the text"
    )
    headline: str = Field(
        description="One line of at most 120 characters naming what the block is about"
    )


class DigestReply(BaseModel):
    digests: list[BlockDigest] = Field(description="One entry per block, in any order")


def _clip(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters (with … when cut)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def _sentence_terms(sentences: list[str]) -> list[frozenset[str]]:
    """The names, numbers and dates (:func:`memvault.grounded_text.key_terms`) of each sentence.
    A capitalized word that opens a sentence (or follows a speaker's ``Name:`` label) is a
    name only when the text capitalizes it elsewhere too; a speaker's label is a name."""
    openers: list[str] = []
    bodies: list[frozenset[str]] = []
    for sentence in sentences:
        label = _LABEL.match(sentence)
        rest = sentence[label.end() :] if label else sentence
        first, _, tail = rest.partition(" ")
        openers.append(first)
        bodies.append(key_terms(f"{label.group(1) if label else ''} {tail}"))
    named = frozenset().union(*bodies)
    return [
        body | {t for t in key_terms(first) if t.startswith("#") or t in named}
        for first, body in zip(openers, bodies, strict=True)
    ]


def _extract(text: str, limit: int) -> str:
    """An extractive digest of at most ``limit`` characters (whitespace folded): the first
    sentence, then the sentences that carry the most names, numbers and dates it lacks, then
    the following sentences as far as they fit, in the order of the text."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    sentences = [s for s in _SENTENCE_END.split(flat) if s]
    terms = _sentence_terms(sentences)
    chosen: list[int] = []
    covered: set[str] = set()

    def fits(i: int) -> bool:
        return sum(len(sentences[j]) + 1 for j in chosen) + len(sentences[i]) <= limit

    def take(i: int) -> None:
        chosen.append(i)
        covered.update(terms[i])

    if fits(0):
        take(0)
    while True:
        gains = [(len(terms[i] - covered), -i) for i in range(len(sentences)) if i not in chosen and fits(i)]  # fmt: skip
        gain, at = max(gains, default=(0, 0))
        if gain == 0:
            break
        take(-at)
    for i in range(len(sentences)):
        if i in chosen:
            continue
        if not fits(i):
            break
        take(i)
    if not chosen:
        return _clip(flat, limit)
    return " ".join(sentences[i] for i in sorted(chosen))


def extractive_summary(text: str, limit: int = DIGEST_MAX_CHARS) -> str:
    """The text's sentences that fit in ``limit`` characters: the first ones, but the ones
    that carry the names, numbers and dates the first lack before the rest."""
    return _extract(text, limit)


def extractive_headline(text: str, limit: int = HEADLINE_MAX_CHARS) -> str:
    """One line of at most ``limit`` characters: the first sentence, and the sentences that
    carry the names, numbers and dates it lacks where they fit (else the first sentence, cut)."""
    return _extract(text, limit)


def heuristic_digest(request: DigestRequest) -> DigestReply:
    """The offline answer: extractive summaries and headlines."""
    return DigestReply(
        digests=[
            BlockDigest(
                id=b.id,
                summary=extractive_summary(b.text, request.max_summary_chars),
                headline=extractive_headline(b.text, request.max_headline_chars),
            )
            for b in request.blocks
        ]
    )


TIER_DIGEST: JudgeTask[DigestRequest, DigestReply] = JudgeTask(
    "tier_digest",
    request_model=DigestRequest,
    reply_model=DigestReply,
    description="Summarize memory blocks that move to cold storage (≤400 characters) and give "
    "each a one-line headline for frozen storage.",
    heuristic=heuristic_digest,
)


@dataclass(frozen=True)
class Digest:
    """What stands in for one block: the summary and the headline, and who wrote each."""

    summary: str
    summary_kind: str  # 'llm' or 'extractive'
    headline: str
    headline_kind: str  # 'llm' or 'extractive'


@dataclass
class DigestStats:
    asked: int = 0  # blocks sent to the judge
    calls: int = 0  # requests sent (one per BLOCKS_PER_CALL blocks)
    rejected: int = 0  # summaries or headlines refused (any reason in ``rejected_by``)
    failed: int = 0  # blocks whose request failed altogether
    kinds: dict[str, int] = field(default_factory=dict)
    #: Refusals per reason: ``missing`` (no digest for the block), ``length`` (empty, too
    #: long, not one line), ``instructions``, ``unsupported_names``, ``unsupported_numbers``.
    rejected_by: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.rejected_by[reason] = self.rejected_by.get(reason, 0) + 1


def _fits_summary(text: str) -> bool:
    if len(text) <= DIGEST_MAX_CHARS:
        return bool(text.strip())
    return 0 < len(" ".join(text.split())) <= DIGEST_MAX_CHARS


def _fits_headline(text: str) -> bool:
    return 0 < len(text.strip()) <= HEADLINE_MAX_CHARS and "\n" not in text.strip()


def _own_digest(text: str) -> Digest:
    return Digest(extractive_summary(text), "extractive", extractive_headline(text), "extractive")


def digest_blocks(
    judge: Judge,
    blocks: Sequence[tuple[str, str]],
    stats: DigestStats,
    *,
    per_call: int = BLOCKS_PER_CALL,
) -> dict[str, Digest]:
    """A digest for each ``(id, text)``. Text that already fits (≤ 400 characters, and one
    short line for the headline) is its own digest; the rest go to the judge ``per_call``
    blocks at a time. Anything the judge gets wrong falls back to the extractive digest."""
    out: dict[str, Digest] = {}
    todo: list[DigestBlock] = []
    for block_id, text in blocks:
        if _fits_summary(text) and _fits_headline(text):
            out[block_id] = Digest(text.strip(), "extractive", text.strip(), "extractive")
        else:
            todo.append(DigestBlock(id=block_id, text=text))
    if not todo:
        return out
    requests = [DigestRequest(blocks=todo[i : i + per_call]) for i in range(0, len(todo), per_call)]
    llm = judge.kind != "heuristic"
    stats.asked += len(todo)
    stats.calls += len(requests) if llm else 0
    for request, reply in zip(requests, ask_each(judge, TIER_DIGEST, requests), strict=True):
        if isinstance(reply, JudgeError):
            stats.failed += len(request.blocks)
            out.update({b.id: _own_digest(b.text) for b in request.blocks})
            continue
        given = {d.id: d for d in reply.digests}
        for block in request.blocks:
            out[block.id] = _accept(block, given.get(block.id), llm, stats)
    return out


def _refusal(text: str, fits: bool, original: Vocabulary) -> str | None:
    """Why a digest the judge wrote cannot stand in for the original, or None."""
    if not fits:
        return "length"
    return check(text, original).reason


def _accept(block: DigestBlock, reply: BlockDigest | None, llm: bool, stats: DigestStats) -> Digest:
    """The judge's digest where it is valid and says only what the block says, the extractive
    one where it is not."""
    if not llm:
        return _own_digest(block.text)
    if reply is None:
        stats.reject("missing")
        return _own_digest(block.text)
    original = Vocabulary.of([block.text])
    summary, summary_kind = reply.summary.strip(), "llm"
    refused = _refusal(summary, 0 < len(summary) <= DIGEST_MAX_CHARS, original)
    if refused:
        stats.reject(refused)
        summary, summary_kind = extractive_summary(block.text), "extractive"
    headline, headline_kind = reply.headline.strip(), "llm"
    refused = _refusal(headline, _fits_headline(headline), original)
    if refused:
        stats.reject(refused)
        headline, headline_kind = extractive_headline(block.text), "extractive"
    return Digest(summary, summary_kind, headline, headline_kind)
