"""Entities and dated facts from an LLM, for imported sessions, when an endpoint is configured.

The offline extractor finds names; only a language model can honestly read
"I started at Acme in March" as ``works_at(owner, Acme, valid_at=March)``.
The judge's replies are turned into interchange records: entities (merged
with what the offline extractor found), mentions, and triples whose subject
and object resolve to those entities by canonical name.

Nothing the model says goes in unchecked against the memories it was shown
(:func:`memvault.grounded_text.says`):

* an entity is kept only when a block it cites names it (every word of the name
  in the block's text), and is a mention only of the blocks that do;
* a fact is kept only when its block was shown, its subject is a kept entity,
  its object is named by its block (an entity object must be a kept entity
  too), and its date, if it gives one, is the day the block was written (or
  the day before or after), or a month and year the block says (its relative
  dates resolved: "last March", "three days ago").

What fails is refused and counted by reason (:data:`REFUSALS`); the rest of the
reply is used.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from memvault.grounded_text import Vocabulary, says
from memvault.judge import EXTRACT_MEMORY, ExtractMemoryRequest, Judge, MemoryText
from memvault.judge.tasks import ExtractedFactItem
from memvault.normalize import canonical_name
from memvault.recall.dates import with_dates
from memvault.records import BlockRecord, EntityRecord, MentionRecord, Record, TripleRecord

#: Blocks per extraction call: enough context, small enough for a small model's window.
BLOCKS_PER_CALL = 12

#: Why an extracted entity or fact was refused.
UNNAMED_ENTITY = "unnamed_entity"
UNKNOWN_BLOCK = "unknown_block"
UNKNOWN_SUBJECT = "unknown_subject"
UNNAMED_OBJECT = "unnamed_object"
UNSUPPORTED_DATE = "unsupported_date"
REFUSALS: tuple[str, ...] = (
    UNNAMED_ENTITY,
    UNKNOWN_BLOCK,
    UNKNOWN_SUBJECT,
    UNNAMED_OBJECT,
    UNSUPPORTED_DATE,
)


@dataclass
class Extraction:
    """The records an LLM's extraction gave, and what of it was refused (by reason)."""

    records: list[Record] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)


def llm_records(judge: Judge, blocks: Sequence[BlockRecord], session_id: str) -> Extraction:
    """Entity, mention and triple records the judge extracts from ``blocks``, each checked
    against the blocks it rests on."""
    requests = [
        ExtractMemoryRequest(
            memories=[MemoryText(id=str(b.id), text=b.text, created_at=b.created_at) for b in chunk]
        )
        for chunk in (
            blocks[i : i + BLOCKS_PER_CALL] for i in range(0, len(blocks), BLOCKS_PER_CALL)
        )
    ]
    replies = judge.ask_many(EXTRACT_MEMORY, requests)
    by_id = {str(b.id): b for b in blocks}
    said = {bid: Vocabulary.of([b.text]) for bid, b in by_id.items()}
    out = Extraction()
    entities: dict[str, EntityRecord] = {}
    mentions: list[Record] = []
    for reply in replies:
        for item in reply.entities:
            naming = [b for b in item.block_ids if b in said and says(item.name, said[b])]
            if not naming:  # no block it cites names it (or it cites blocks it was not shown)
                out.refused[UNNAMED_ENTITY] += 1
                continue
            entity = entities.setdefault(
                canonical_name(item.name),
                EntityRecord(name=item.name, entity_type=item.entity_type),
            )
            mentions += [
                MentionRecord(
                    entity=str(entity.id),
                    block_id=b,
                    session_id=session_id,
                    mentioned_at=by_id[b].created_at,
                )
                for b in naming
            ]
    triples: list[Record] = []
    for reply in replies:
        for fact in reply.facts:
            problem = _fact_problem(fact, by_id, said, entities)
            if problem is not None:
                out.refused[problem] += 1
                continue
            block = by_id[fact.block_id]
            subject = entities[canonical_name(fact.subject)]
            target = entities.get(canonical_name(fact.object)) if fact.object_is_entity else None
            triples.append(
                TripleRecord(
                    subject=str(subject.id),
                    predicate=fact.predicate,
                    object=fact.object,
                    object_id=str(target.id) if target else None,
                    valid_at=dt.datetime.combine(fact.valid_at, dt.time())
                    if fact.valid_at
                    else block.created_at,
                    created_at=block.created_at,
                    source_session=session_id,
                    source_block=str(block.id),
                    confidence=fact.confidence,
                )
            )
    out.records = [*entities.values(), *mentions, *triples]
    return out


def _fact_problem(
    fact: ExtractedFactItem,
    blocks: dict[str, BlockRecord],
    said: dict[str, Vocabulary],
    entities: dict[str, EntityRecord],
) -> str | None:
    """Why a fact the model extracted is not what its block says (None: it is)."""
    block = blocks.get(fact.block_id)
    if block is None:
        return UNKNOWN_BLOCK
    if canonical_name(fact.subject) not in entities:
        return UNKNOWN_SUBJECT
    if fact.object_is_entity and canonical_name(fact.object) not in entities:
        return UNNAMED_OBJECT
    if not says(fact.object, said[fact.block_id]):
        return UNNAMED_OBJECT
    if fact.valid_at is not None and not date_supported(fact.valid_at, block):
        return UNSUPPORTED_DATE
    return None


def date_supported(day: dt.date, block: BlockRecord) -> bool:
    """A fact's date is the block's (said that day, give or take one), or a month and year
    the block says, relative dates resolved against when it was written (the year may be
    left to the time it was written, or the year before or after)."""
    written = block.created_at
    if written is not None and abs((day - written.date()).days) <= 1:
        return True
    vocabulary = Vocabulary.of([with_dates(block.text, written)])
    if str(day.month) not in vocabulary.numbers:
        return False
    near = written is not None and abs(day.year - written.year) <= 1
    return near or str(day.year) in vocabulary.numbers
