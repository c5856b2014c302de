"""What an LLM extracts from imported memories goes in only as far as the memories say it:
entities named by the blocks they cite, facts whose block, subject, object and date the
blocks support; the rest is refused and counted (a scripted judge, no server)."""

from __future__ import annotations

import datetime as dt

from memvault.importers.enrich import date_supported, llm_records
from memvault.judge import ScriptedJudge
from memvault.judge.tasks import ExtractedEntityItem, ExtractedFactItem, ExtractionReply
from memvault.records import BlockRecord, EntityRecord, MentionRecord, TripleRecord

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
