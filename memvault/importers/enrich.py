"""Entities and dated facts from an LLM, for imported sessions, when an endpoint is configured.

The offline extractor finds names; only a language model can honestly read
"I started at Acme in March" as ``works_at(owner, Acme, valid_at=March)``.
The judge's replies are turned into interchange records: entities (merged
with what the offline extractor found), mentions, and triples whose subject
and object resolve to those entities by canonical name.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from memvault.judge import EXTRACT_MEMORY, ExtractMemoryRequest, Judge, MemoryText
from memvault.normalize import canonical_name
from memvault.records import BlockRecord, EntityRecord, MentionRecord, Record, TripleRecord

#: Blocks per extraction call: enough context, small enough for a small model's window.
BLOCKS_PER_CALL = 12


def llm_records(judge: Judge, blocks: Sequence[BlockRecord], session_id: str) -> list[Record]:
    """Entity, mention and triple records the judge extracts from ``blocks``."""
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
    entities: dict[str, EntityRecord] = {}
    out: list[Record] = []
    mentions: list[Record] = []
    for reply in replies:
        for item in reply.entities:
            entity = entities.setdefault(
                canonical_name(item.name),
                EntityRecord(name=item.name, entity_type=item.entity_type),
            )
            for block_id in item.block_ids:
                block = by_id.get(block_id)
                if block is None:  # the model cited a block it was not shown
                    continue
                mentions.append(
                    MentionRecord(
                        entity=str(entity.id),
                        block_id=block_id,
                        session_id=session_id,
                        mentioned_at=block.created_at,
                    )
                )
    triples: list[Record] = []
    for reply in replies:
        for fact in reply.facts:
            block = by_id.get(fact.block_id)
            subject = entities.get(canonical_name(fact.subject))
            if block is None or subject is None:
                continue
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
    out.extend(entities.values())
    out.extend(mentions)
    out.extend(triples)
    return out
