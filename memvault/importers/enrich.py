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
reply is used. A fact that passes is still doubted (:func:`fact_doubt`, reasons
:data:`DOUBTS`) when its block does not tie it to what it says: the block names neither
its subject nor is the subject's own turn (``Ada: ...``), holds no word that states the
relation (the predicate's name or its evidence words in the grounding definitions,
compared stemmed in any case), or denies or hedges it where it names the object ("I
turned it down", "not", "might"). A doubted fact never goes to the store: it waits in the
review queue (kind :data:`REVIEW_KIND`), where a person's "correct" writes it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.grounded_text import Vocabulary, content_words, instructions, says
from memvault.judge import EXTRACT_MEMORY, ExtractMemoryRequest, Judge, MemoryText
from memvault.judge.tasks import ExtractedFactItem
from memvault.normalize import canonical_name, utcnow
from memvault.recall.dates import with_dates
from memvault.recall.speakers import speaker
from memvault.records import BlockRecord, EntityRecord, MentionRecord, Record, TripleRecord
from memvault.review.impact import impact_score, target_inputs
from memvault.review.queue import ReviewItem, Verdict, enqueue_row
from memvault.store import Mutation, Store
from memvault.temporal.grounding import Grounding
from memvault.text_tokens import stems

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
#: Why an extracted fact was doubted (sent to review instead of the store).
SUBJECT_NOT_IN_BLOCK = "subject_not_in_block"
RELATION_NOT_STATED = "relation_not_stated"
DENIED_OR_HEDGED = "denied_or_hedged"
WRONG_SIDES = "wrong_sides"
INSTRUCTIONS_IN_BLOCK = "instructions_in_block"
DOUBTS: tuple[str, ...] = (
    WRONG_SIDES,
    SUBJECT_NOT_IN_BLOCK,
    RELATION_NOT_STATED,
    DENIED_OR_HEDGED,
    INSTRUCTIONS_IN_BLOCK,
)
#: The review queue's kind for a doubted fact.
REVIEW_KIND = "extract:fact"

#: Words of a predicate's name that state nothing by themselves ("has_role": the role does).
_GENERIC_PREDICATE_WORDS = frozenset(stems("has have is are be of at in on to for with the a an"))
#: What denies or hedges a statement: a negation, a refusal, an offer not taken, a maybe.
_DENIAL = re.compile(
    r"\b(?:not|never|no|nor|neither|none|cannot|no longer|formerly|former|ex|used to)\b"
    r"|n['’]t\b|\b(?:declin|refus|reject|quit|resign|fired|laid off|left\b|leaving\b)\w*"
    r"|\bturn(?:s|ed|ing)?\s+(?:[\w'’]+\s+){0,2}down\b|\bpass(?:es|ed|ing)?\s+on\b"
    r"|\b(?:offer|offers|offered|interview\w*|appl(?:y|ied|ying)|consider\w*|might|maybe|"
    r"perhaps|would|could|if|whether|hope|hoping|wish|thinking about|plan(?:s|ned|ning)? to)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass
class Extraction:
    """The records an LLM's extraction gave, and what of it was refused (by reason)."""

    records: list[Record] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    #: Facts whose block does not tie them to what they say: for review, not the store.
    doubts: list[Doubt] = field(default_factory=list)

    @property
    def doubted(self) -> Counter[str]:
        return Counter(d.reason for d in self.doubts)


@dataclass(frozen=True)
class Doubt:
    """A fact the model extracted that its block does not clearly state, and why."""

    triple: TripleRecord
    subject: str
    reason: str
    detail: str
    block_text: str

    def proposal(self) -> dict[str, Any]:
        """What the review item shows and, when a person says "correct", writes."""
        return {
            "question": "The model read this fact in the memory below, but the memory does not "
            "clearly say it. correct stores the fact; wrong drops it.",
            "fact": {
                "subject": self.subject,
                "predicate": self.triple.predicate,
                "object": self.triple.object,
                "valid_at": self.triple.valid_at,
            },
            "record": self.triple.model_dump(mode="json", exclude_none=True),
            "block": {"id": self.triple.source_block, "text": self.block_text[:2000]},
        }


def llm_records(
    judge: Judge,
    blocks: Sequence[BlockRecord],
    session_id: str,
    grounding: Grounding | None = None,
) -> Extraction:
    """Entity, mention and triple records the judge extracts from ``blocks``, each checked
    against the blocks it rests on; the facts a block does not tie to what it says are
    doubts (:func:`fact_doubt`), for review."""
    grounding = grounding or Grounding.load()
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
    types = {name: e.entity_type for name, e in entities.items()}
    for reply in replies:
        for fact in reply.facts:
            problem = _fact_problem(fact, by_id, said, entities)
            if problem is not None:
                out.refused[problem] += 1
                continue
            block = by_id[fact.block_id]
            subject = entities[canonical_name(fact.subject)]
            target = entities.get(canonical_name(fact.object)) if fact.object_is_entity else None
            triple = TripleRecord(
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
            doubt = fact_doubt(fact, block, said[fact.block_id], grounding, types)
            if doubt is None:
                triples.append(triple)
            else:
                reason, detail = doubt
                out.doubts.append(Doubt(triple, fact.subject, reason, detail, block.text))
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


def _named_in(name: str, block: BlockRecord, said: Vocabulary) -> bool:
    """Whether ``block`` names ``name`` (all of it, or one of its words: "Ada" for "Ada
    Lovelace"), or is that person's own turn (``Ada: ...``)."""
    if says(name, said):
        return True
    wanted = [w for w in name.split() if says(w, said) and content_words(w)]
    if wanted:
        return True
    label = speaker(block.text)
    return label is not None and bool(set(stems(label)) & set(stems(name)))


def _evidence(predicate: str, grounding: Grounding) -> frozenset[str]:
    """The stems that state ``predicate``: the words of its name and its evidence words."""
    definition = grounding.get(predicate)
    words = predicate.replace("_", " ") + " " + " ".join(definition.evidence if definition else ())
    return frozenset(stems(words)) - _GENERIC_PREDICATE_WORDS


def _object_window(block: BlockRecord, obj: str) -> str:
    """The sentence of ``block`` that names ``obj``, and the one after it (a refusal often
    follows: "Globex made me an offer. I turned it down."); the whole block when no one
    sentence names it."""
    sentences = [s for s in _SENTENCE.split(block.text) if s.strip()]
    for k, sentence in enumerate(sentences):
        if says(obj, [sentence]):
            return " ".join(sentences[k : k + 2])
    return block.text


def fact_doubt(
    fact: ExtractedFactItem,
    block: BlockRecord,
    said: Vocabulary,
    grounding: Grounding,
    types: dict[str, str] | None = None,
) -> tuple[str, str] | None:
    """Why ``block`` does not clearly state ``fact`` (reason of :data:`DOUBTS`, detail), or
    None: the subject and object are of the kinds the predicate joins (``types``: entity
    type by canonical name, as the model gave them; "Globex works_at Ada" has them the wrong
    way round, "Ada lives_in Globex" puts an organization where a place belongs), the block
    names the subject (or is the subject's own turn), holds a word that states the relation,
    does not deny or hedge it where it names the object nor name the object as what came
    before ("from Acme", "after Acme"), and holds no instruction-like text (a memory that tells
    a model what to record is no witness)."""
    definition = grounding.get(fact.predicate)
    types = types or {}
    subject_type = types.get(canonical_name(fact.subject))
    object_type = types.get(canonical_name(fact.object)) if fact.object_is_entity else None
    if definition is not None and (
        (subject_type is not None and subject_type not in definition.domain)
        or (object_type is not None and object_type not in definition.range)
    ):
        return WRONG_SIDES, (
            f"{fact.predicate!r} joins {'/'.join(definition.domain)} to "
            f"{'/'.join(definition.range)}, not {subject_type} to {object_type or 'a value'}"
        )
    if not _named_in(fact.subject, block, said):
        return SUBJECT_NOT_IN_BLOCK, f"the memory does not name {fact.subject!r}"
    wanted = _evidence(fact.predicate, grounding)
    if not wanted & set(stems(block.text)):
        return RELATION_NOT_STATED, f"no word of the memory states {fact.predicate!r}"
    window = _object_window(block, fact.object)
    denial = _DENIAL.search(window)
    if denial is not None:
        return DENIED_OR_HEDGED, f"the memory says {denial.group().strip()!r} about it"
    if re.search(
        rf"\b(?:from|after|until|left|quit)\s+(?:the\s+)?{re.escape(fact.object)}\b",
        window,
        re.IGNORECASE,
    ):
        return DENIED_OR_HEDGED, f"the memory names {fact.object!r} as what came before"
    if instructions(block.text):
        return INSTRUCTIONS_IN_BLOCK, "the memory tells a model what to do"
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


def queue_doubts(store: Store, doubts: Sequence[Doubt], run_id: str) -> Counter[str]:
    """Queue each doubted fact for review (kind :data:`REVIEW_KIND`, once per fact), in the
    run that imported its memories; returns how many were queued, by reason."""
    now = utcnow()
    # Storing a doubted fact adds to its subject: weighed by the subject's standing.
    impacts = {
        d.triple.id: target_inputs(store, "entities", d.triple.subject, retires_current=False)
        for d in doubts
    }
    rows = {
        f"extract:{doubt.triple.id}": enqueue_row(
            item_id=f"extract:{doubt.triple.id}",
            kind=REVIEW_KIND,
            target_table="blocks",
            target_id=doubt.triple.source_block,
            proposal=doubt.proposal(),
            reason=f"{doubt.reason}: {doubt.detail}",
            confidence=doubt.triple.confidence,
            impact=impact_score(impacts[doubt.triple.id]),
            impact_inputs=impacts[doubt.triple.id].model_dump(),
            deadline=None,
            run_id=run_id,
            now=now,
        )
        for doubt in doubts
    }
    reasons = {f"extract:{d.triple.id}": d.reason for d in doubts}
    with store.mutation(run_id, "extract_review") as m:
        queued = m.insert(
            "review_queue",
            pl.DataFrame(list(rows.values()), infer_schema_length=None),
            action="queue",
            reason="a fact its memory does not clearly state",
        )
    return Counter(reasons[i] for i in queued)


def apply_extracted(store: Store, m: Mutation, item: ReviewItem, verdict: Verdict) -> str:
    """A person's decision on a doubted fact: "correct" writes it (its subject and object
    resolved as an import would), "wrong" leaves the store as it is."""
    if verdict == "wrong":
        return "the fact was not stored"
    from memvault.ingest import Numbered, checked_frames

    record = TripleRecord.model_validate(item.proposal["record"])
    frames = checked_frames(store, [Numbered(1, record)], f"review {item.id}")
    inserted = m.insert(
        "triples",
        frames["triple"],
        action="insert",
        reason=f"review {item.id}: a person confirmed it",
    )
    fact = item.proposal.get("fact", {})
    what = f"{fact.get('subject')} {fact.get('predicate')} {fact.get('object')}"
    return f"stored {what}" if inserted else f"{what} was already stored"
