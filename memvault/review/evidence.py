"""What a person needs to see to decide a review item: the memories it is about.

A queued item keeps the ids of what it would change (and, for a conflict, what the
judge was shown). The texts are read from the store when someone looks — the
facts with subject, predicate and object, their dates (valid from, until,
recorded) and the source text they were taken from; the memory blocks with their
text; the entity with its facts; the current preference — so the review page and
``memvault review show`` show what a decision would act on. Two memories side by
side carry a word diff: what only the first says, what only the second says.

Everything here is plain text taken from conversations and LLM replies: whoever
shows it escapes it (the page's templates escape every value).
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, Field

from memvault.review.queue import ReviewItem
from memvault.store import Store
from memvault.store.queries.blocks import blocks_as_shown
from memvault.store.queries.entities import entities_as_shown
from memvault.store.queries.layers import attitudes_as_shown
from memvault.store.queries.triples import facts_as_shown, facts_of_entity_as_shown

#: Longer texts are shown cut (with " …"): the page stays readable and the diff cheap.
MAX_CHARS = 20_000
#: At most this many facts of an entity proposed for archiving are shown.
MAX_RELATED = 20


class Memory(BaseModel):
    """One memory an item is about, as the store holds it now."""

    role: str = Field(description="what it is to the item: a, b, kept, merged away, ...")
    table: str
    id: str
    found: bool = True
    text: str = ""
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    status: str | None = None
    confidence: float | None = None
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    recorded_at: dt.datetime | None = None
    expired_at: dt.datetime | None = None
    source_session: str | None = None
    source_block: str | None = None
    source_text: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_fact(self) -> bool:
        return self.table == "triples"


class Segment(BaseModel):
    """A run of words of a diff: the same on both sides, only in the first, only in the second."""

    op: Literal["same", "del", "ins"]
    text: str


class Evidence(BaseModel):
    """The memories of one item: shown side by side (with ``diff`` when there are two),
    then what else belongs to it (an entity's facts, a split's pieces)."""

    memories: list[Memory] = Field(default_factory=list)
    diff: tuple[list[Segment], list[Segment]] | None = None
    related: list[Memory] = Field(default_factory=list)
    related_title: str | None = None


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_CHARS:
        return text
    return text[:MAX_CHARS] + " …"


def word_diff(a: str, b: str) -> tuple[list[Segment], list[Segment]]:
    """``a`` and ``b`` as segments: words both share, words only ``a`` has (``del``), words
    only ``b`` has (``ins``). Words are compared without their spacing; each keeps the
    whitespace after it, so two changed words in a row are one change, and the segments
    join back to the texts."""
    left_words, right_words = re.findall(r"\s*\S+\s*|\s+", a), re.findall(r"\s*\S+\s*|\s+", b)
    matcher = difflib.SequenceMatcher(
        None, [w.strip() for w in left_words], [w.strip() for w in right_words], autojunk=False
    )
    left: list[Segment] = []
    right: list[Segment] = []

    def add(side: list[Segment], op: Literal["same", "del", "ins"], words: list[str]) -> None:
        if not words:
            return
        if side and side[-1].op == op:
            side[-1].text += "".join(words)
        else:
            side.append(Segment(op=op, text="".join(words)))

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add(left, "same", left_words[i1:i2])
            add(right, "same", right_words[j1:j2])
        else:
            add(left, "del", left_words[i1:i2])
            add(right, "ins", right_words[j1:j2])
    return left, right


def when(value: dt.datetime | None) -> str:
    """A stored time as shown to a person: the date alone at midnight, "—" when none."""
    if value is None:
        return "—"
    return f"{value:%Y-%m-%d}" if value.time() == dt.time() else f"{value:%Y-%m-%d %H:%M}"


def _fact(row: dict[str, Any], role: str) -> Memory:
    subject = row["subject"] or ""
    return Memory(
        role=role,
        table="triples",
        id=row["id"],
        text=" ".join(p for p in (subject, row["predicate"], row["object"]) if p),
        subject=row["subject"],
        predicate=row["predicate"],
        object=row["object"],
        status=row["status"],
        confidence=row["confidence"],
        valid_at=row["valid_at"],
        invalid_at=row["invalid_at"],
        recorded_at=row["created_at"],
        expired_at=row["expired_at"],
        source_session=row["source_session"],
        source_block=row["source_block"],
        source_text=_cut(row["source_text"]),
    )


Reader = Callable[[Store, Sequence[str]], pl.DataFrame]


def _rows(store: Store, read: Reader, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    return {r["id"]: r for r in read(store, ids).iter_rows(named=True)}


def _facts(store: Store, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    return _rows(store, facts_as_shown, ids)


#: How a block, an entity and a preference are read (by id) …
_READ: dict[str, Reader] = {
    "blocks": blocks_as_shown,
    "entities": entities_as_shown,
    "attitudes": attitudes_as_shown,
}


def _block(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "text": _cut(row["text"]) or "",
        "status": row["status"],
        "recorded_at": row["created_at"],
        "source_session": row["session_id"],
        "detail": {"kind": row["kind"], "speaker": row["role"], "pinned": row["pinned"]},
    }


def _entity(row: dict[str, Any]) -> dict[str, Any]:
    aliases = row["aliases"] if row["aliases"] not in ("", "[]") else None
    return {
        "text": row["name"],
        "status": row["status"],
        "recorded_at": row["created_at"],
        "detail": {"type": row["entity_type"], "aliases": aliases},
    }


def _preference(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "text": row["statement"],
        "confidence": row["confidence"],
        "recorded_at": row["created_at"],
        "invalid_at": row["superseded_at"],
        "detail": {"category": row["category"]},
    }


#: … and what of its row a person is shown.
_SHOWN = {"blocks": _block, "entities": _entity, "attitudes": _preference}


def _lookup(store: Store, table: str, item_id: str, role: str) -> Memory:
    """The memory ``item_id`` of ``table`` (a block, fact, entity or preference); one that is
    not in this store (an external store the gardener tends) comes back ``found=False``."""
    if table == "triples":
        row = _facts(store, [item_id]).get(item_id)
        return _fact(row, role) if row else Memory(role=role, table=table, id=item_id, found=False)
    if table in _READ:
        row = _rows(store, _READ[table], [item_id]).get(item_id)
        if row is None:
            return Memory(role=role, table=table, id=item_id, found=False)
        return Memory(role=role, table=table, id=item_id, **_SHOWN[table](row))
    for other in ("blocks", "triples", "entities"):  # e.g. the gardener's "item" / "entity"
        found = _lookup(store, other, item_id, role)
        if found.found:
            return found
    return Memory(role=role, table=table, id=item_id, found=False)


def _pair(first: Memory, second: Memory) -> Evidence:
    diff = word_diff(first.text, second.text) if first.text and second.text else None
    return Evidence(memories=[first, second], diff=diff)


def _conflict(store: Store, item: ReviewItem) -> Evidence:
    proposal = item.proposal
    ids = [str(proposal.get(k)) for k in ("triple_a", "triple_b") if proposal.get(k)]
    rows = _facts(store, ids)
    memories = []
    for side, triple in zip(("a", "b"), ids, strict=False):
        if triple in rows:
            memories.append(_fact(rows[triple], side))
        else:
            shown = proposal.get("statements", {}).get(side, {})
            memories.append(
                Memory(
                    role=side,
                    table="triples",
                    id=triple,
                    found=False,
                    text=str(shown.get("object") or ""),
                )
            )
    return _pair(*memories) if len(memories) == 2 else Evidence(memories=memories)


def _archive(store: Store, item: ReviewItem) -> Evidence:
    entity = _lookup(store, "entities", item.target_id or "", "entity")
    if not entity.found:
        entity.text = str(item.proposal.get("entity") or "")
    frame = facts_of_entity_as_shown(store, item.target_id, MAX_RELATED)
    facts = {r["id"]: r for r in frame.iter_rows(named=True)}
    return Evidence(
        memories=[entity],
        related=[_fact(r, "fact") for r in facts.values()],
        related_title=f"its facts (at most {MAX_RELATED})",
    )


def _garden(store: Store, item: ReviewItem) -> Evidence:
    proposal = item.proposal
    action = item.kind.removeprefix("garden:")
    table = item.target_table or ""
    related = [str(r) for r in proposal.get("related") or []]
    roles = {
        "merge": ("merged away", "kept"),
        "invalidate": ("retired", "newer"),
        "reconnect": ("orphan", "linked to"),
    }.get(action, ("target", "related"))
    target = _lookup(store, table, item.target_id or "", roles[0])
    if not target.found and proposal.get("preview"):
        target.text = str(proposal["preview"])
    if action == "split":
        parent = Memory(role="after the split", table="proposal", id=target.id,
                        text=_cut(str(proposal.get("parent_text") or "")) or "")  # fmt: skip
        pieces = [
            Memory(
                role=f"piece {n}",
                table="proposal",
                id=str(p.get("existing_id") or ""),
                text=_cut(str(p.get("text") or "")) or "",
            )
            for n, p in enumerate(proposal.get("pieces") or [], start=1)
        ]
        evidence = _pair(target, parent)
        evidence.related, evidence.related_title = pieces, "the pieces moved out"
        return evidence
    if not related:
        return Evidence(memories=[target])
    other_table = table if action in ("merge", "invalidate") else ""
    return _pair(target, _lookup(store, other_table, related[0], roles[1]))


def _attitude(store: Store, item: ReviewItem) -> Evidence:
    proposal = item.proposal
    current = _lookup(store, "attitudes", item.target_id or "", "current")
    if not current.found:
        current.text = str(proposal.get("current") or "")
    stated = proposal.get("stated_at")
    proposed = Memory(
        role="proposed",
        table="proposal",
        id=item.id,
        text=str(proposal.get("statement") or ""),
        confidence=proposal.get("confidence"),
        recorded_at=dt.datetime.fromisoformat(str(stated).rstrip("Z")) if stated else None,
        detail={"category": proposal.get("category"), "evidence": proposal.get("evidence")},
    )
    return _pair(current, proposed)


def _extracted(store: Store, item: ReviewItem) -> Evidence:
    """A doubted extracted fact beside the memory it was read from."""
    fact = item.proposal.get("fact") or {}
    block = item.proposal.get("block") or {}
    valid = fact.get("valid_at")
    proposed = Memory(
        role="proposed fact",
        table="proposal",
        id=item.id,
        text=f"{fact.get('subject')} {fact.get('predicate')} {fact.get('object')}",
        subject=fact.get("subject"),
        predicate=fact.get("predicate"),
        object=fact.get("object"),
        confidence=item.confidence,
        valid_at=dt.datetime.fromisoformat(str(valid).rstrip("Z")) if valid else None,
        source_block=block.get("id"),
        source_text=_cut(block.get("text")),
    )
    return Evidence(memories=[proposed, _lookup(store, "blocks", item.target_id or "", "memory")])


def evidence(store: Store, item: ReviewItem) -> Evidence:
    """The memories ``item`` is about, read from ``store`` now."""
    from memvault.review.intake import ARCHIVE_KIND, GROUNDING_KIND, MEMORY_KIND

    if item.prefix == "conflict":
        return _conflict(store, item)
    if item.kind in (MEMORY_KIND, GROUNDING_KIND):
        return Evidence(memories=[_lookup(store, "triples", item.target_id or "", "the fact")])
    if item.kind == ARCHIVE_KIND:
        return _archive(store, item)
    if item.prefix == "garden":
        return _garden(store, item)
    if item.prefix == "attitude":
        return _attitude(store, item)
    if item.prefix == "extract":
        return _extracted(store, item)
    if item.target_table and item.target_id:
        return Evidence(memories=[_lookup(store, item.target_table, item.target_id, "target")])
    return Evidence()
