"""What an LLM extracts from imported memories goes in only as far as the memories say it:
entities named by the blocks they cite, facts whose block, subject, object and date the
blocks support; the rest is refused and counted (a scripted judge, no server)."""

from __future__ import annotations

import datetime as dt

from memvault.grounded_text import Vocabulary
from memvault.importers.enrich import (
    DENIED_OR_HEDGED,
    RELATION_NOT_STATED,
    SUBJECT_NOT_IN_BLOCK,
    WRONG_SIDES,
    date_supported,
    fact_doubt,
    llm_records,
)
from memvault.judge import ScriptedJudge
from memvault.judge.tasks import ExtractedEntityItem, ExtractedFactItem, ExtractionReply
from memvault.records import BlockRecord, EntityRecord, MentionRecord, TripleRecord
from memvault.temporal.grounding import Grounding

SAID = dt.datetime(2025, 4, 10, 9, 0)
TEXTS = {
    "b0": "Ada: hi, it's Ada from the data team.",
    "b1": "Ada: I started at Acme in March, after Tyrell.",
    "b2": "Ada: the deploy of billing-api went fine.",
}
BLOCKS = [BlockRecord(id=b, session_id="s", text=t, created_at=SAID) for b, t in TEXTS.items()]


def _entity(name: str, kind: str, *blocks: str) -> ExtractedEntityItem:
    return ExtractedEntityItem(name=name, entity_type=kind, block_ids=list(blocks))  # type: ignore[arg-type]


def _fact(subject: str, predicate: str, obj: str, block: str, valid_at: dt.date | None = None, entity: bool = True) -> ExtractedFactItem:  # fmt: skip
    return ExtractedFactItem(subject=subject, predicate=predicate, object=obj, object_is_entity=entity, valid_at=valid_at, block_id=block, confidence=0.9)  # fmt: skip


REPLY = ExtractionReply(
    entities=[
        _entity("Ada", "person", "b0", "b1"),
        _entity("Acme", "organization", "b1"),
        _entity("Tyrell Systems", "organization", "b1", "b2"),  # b1 says "Tyrell" only
        _entity("Tyrell", "organization", "b1", "b2"),  # named by b1, not by b2
        _entity("EvilCorp", "organization", "b1"),  # named by no block
        _entity("Initech", "organization", "b9"),  # a block it was never shown
    ],
    facts=[
        _fact("Ada", "works_at", "Acme", "b1", dt.date(2025, 3, 1)),  # "in March", said in April
        _fact("Ada", "works_at", "Acme", "b1", dt.date(2019, 3, 1)),  # a year nobody said
        _fact("Ada", "works_at", "EvilCorp", "b1"),  # an object no block names
        _fact("Ada", "lives_in", "Madrid", "b1", entity=False),  # a literal its block does not say
        _fact("Mallory", "works_at", "Acme", "b1"),  # a subject that is no kept entity
        _fact("Ada", "works_at", "Acme", "b7"),  # a block that was not shown
        _fact("Ada", "deploys", "billing-api", "b2", SAID.date(), entity=False),
    ],
)


def test_only_what_the_memories_say_goes_in() -> None:
    judge = ScriptedJudge({"extract_memory": [REPLY]})
    got = llm_records(judge, BLOCKS, "s")
    names = {r.name for r in got.records if isinstance(r, EntityRecord)}
    assert names == {"Ada", "Acme", "Tyrell"}
    tyrell = next(r for r in got.records if isinstance(r, EntityRecord) and r.name == "Tyrell")
    mentions = {(m.entity, m.block_id) for m in got.records if isinstance(m, MentionRecord)}
    assert (str(tyrell.id), "b1") in mentions and (str(tyrell.id), "b2") not in mentions
    facts = [(t.predicate, t.object, t.valid_at) for t in got.records if isinstance(t, TripleRecord)]  # fmt: skip
    assert facts == [
        ("works_at", "Acme", dt.datetime(2025, 3, 1)),
        ("deploys", "billing-api", dt.datetime(2025, 4, 10)),
    ]
    assert dict(got.refused) == {
        "unnamed_entity": 3,  # Tyrell Systems, EvilCorp, Initech
        "unsupported_date": 1,
        "unnamed_object": 2,
        "unknown_subject": 1,
        "unknown_block": 1,
    }


def test_a_date_is_the_blocks_or_one_it_says() -> None:
    block = BlockRecord(id="b", session_id="s", text="We moved last month, on a Friday.", created_at=SAID)  # fmt: skip
    assert date_supported(dt.date(2025, 4, 11), block)  # the day after it was said
    assert date_supported(dt.date(2025, 3, 14), block)  # "last month": March 2025
    assert not date_supported(dt.date(2025, 7, 1), block)
    assert not date_supported(dt.date(2021, 4, 10), block)
    told = BlockRecord(id="c", session_id="s", text="Back in May 2019 I joined.", created_at=SAID)  # fmt: skip
    assert date_supported(dt.date(2019, 5, 1), told)
    assert not date_supported(dt.date(2018, 5, 1), told)


def _doubt(text: str, subject: str, predicate: str, obj: str) -> str | None:
    block = BlockRecord(id="b", session_id="s", text=text, created_at=SAID)
    found = fact_doubt(
        _fact(subject, predicate, obj, "b"), block, Vocabulary.of([text]), Grounding.load()
    )
    return found[0] if found else None


def test_a_fact_is_doubted_unless_its_block_names_the_subject_and_states_the_relation() -> None:
    offer = "Mallory from Globex emailed again about their job offer; I turned it down."
    assert _doubt(offer, "Ada", "works_at", "Globex") == SUBJECT_NOT_IN_BLOCK
    assert _doubt(offer, "Ada", "lives_in", "Globex") == SUBJECT_NOT_IN_BLOCK
    assert _doubt(f"Ada: {offer}", "Ada", "works_at", "Globex") == DENIED_OR_HEDGED  # her own turn
    assert (
        _doubt("Ada: Globex has a job for me. I said no.", "Ada", "works_at", "Globex")
        == DENIED_OR_HEDGED
    )
    assert _doubt("Ada: I might join Globex.", "Ada", "works_at", "Globex") == DENIED_OR_HEDGED
    assert _doubt("Ada: Globex is great.", "Ada", "works_at", "Globex") == RELATION_NOT_STATED
    assert (
        _doubt("ada loves the globex office.", "Ada", "lives_in", "Globex") == RELATION_NOT_STATED
    )
    # stated: in any case, in any form of the word, or by the subject's own turn
    assert _doubt("ada joined globex in march.", "Ada", "works_at", "Globex") is None
    assert _doubt("Ada Lovelace: I moved to Lisbon.", "Ada", "lives_in", "Lisbon") is None
    assert (
        _doubt("Ada: I started at Acme, after Tyrell.", "Ada Lovelace", "works_at", "Acme") is None
    )


def test_a_doubted_fact_goes_to_the_doubts_not_the_records() -> None:
    reply = ExtractionReply(
        entities=[_entity("Ada", "person", "b0"), _entity("Acme", "organization", "b1")],
        facts=[_fact("Ada", "works_at", "Acme", "b1"),  # b1 is Ada's own turn: stated
               _fact("Ada", "lives_in", "Acme", "b1"),  # an organization where a place belongs
               _fact("Ada", "deploys", "Acme", "b1")],  # nothing in b1 says she deploys it
    )  # fmt: skip
    got = llm_records(ScriptedJudge({"extract_memory": [reply]}), BLOCKS, "s")
    assert [t.predicate for t in got.records if isinstance(t, TripleRecord)] == ["works_at"]
    assert got.doubted == {WRONG_SIDES: 1, RELATION_NOT_STATED: 1}
    doubt = got.doubts[0]
    assert doubt.proposal()["fact"]["object"] == "Acme" and doubt.triple.source_block == "b1"
