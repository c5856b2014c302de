"""What a recall answers: the ranked blocks, how the query was understood, and any warning.

Each hit carries the block's ``tier`` and ``digest_kind``: a cold block's text
is a digest and a frozen one's a headline, so the caller knows it reads less
than the original. The block was found by its original text all the same, and
``original_archived`` says that text is kept (``memvault show BLOCK --original``). A hit of ``kind`` ``insight``
is something the dream read into the memories it ``cites``, not a memory itself: it is
marked so wherever it is shown and never ranks above the memories it cites. A hit whose facts
have all been superseded since carries ``superseded_since`` and ranks below one that states
what holds now.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, Field

#: The tag prefix under which an insight block keeps each block id it cites.
CITES = "cites:"


class RecallHit(BaseModel):
    block_id: str
    text: str
    tier: str
    digest_kind: str | None = None
    #: The text is a digest and the original it stands in for is archived (and searched).
    original_archived: bool = False
    kind: str | None = None  # the block's kind; 'insight' for what the dream wrote
    cites: list[str] = Field(default_factory=list)  # an insight's source blocks
    score: float
    session_id: str | None = None
    created_at: dt.datetime | None = None
    # Set when every fact the block states (that the question asks about) has been superseded:
    # the date the last of them stopped holding. Such a block ranks below what holds now.
    superseded_since: dt.datetime | None = None
    # A later memory states another value of what the question asks (the editor, the city,
    # the employer: see slots.py): this one is older, ``superseded_by`` that memory's id.
    older: bool = False
    superseded_by: str | None = None


class GapHint(BaseModel):
    """This question (same intent and entities) failed before; nothing is filled in."""

    signature: str
    status: str  # open | answered (a recorded knowledge gap) | failed_before (not yet a gap)
    fail_count: int
    last_failed_at: dt.datetime | None = None
    message: str


class Fact(BaseModel):
    """A current fact (not expired, not invalidated) about an entity the query named."""

    subject_id: str
    predicate: str
    object: str
    valid_at: dt.datetime | None = None


class RecallResult(BaseModel):
    recall_id: str
    query: str
    signature: str
    intent: str | None = None
    entities: list[str] = Field(default_factory=list)
    entity_names: dict[str, str] = Field(default_factory=dict)
    results: list[RecallHit] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)
    served_from_prefetch: bool = False
    prefetch_id: str | None = None
    search_mode: str = "hybrid"  # hybrid (vectors + keywords) | keywords (no vectors of the model)
    gap_hint: GapHint | None = None
    #: No memory found matches the query well (see relevance.py): the hits are the nearest,
    #: not an answer.
    weak_match: bool = False
    latency_ms: float = 0.0  # what the caller waited, an index build included
    index_build_ms: float = 0.0  # the part spent building the search index (first recall)

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
