"""The JSONL interchange format: one pydantic model per record ``type``.

``memvault ingest`` reads these and ``memvault export`` writes them, so the
models are the contract between memvault and whatever feeds it (see
docs/format.md). Every model normalizes its text and times on the way in and
derives a stable id when none is given, so ingesting a file twice adds nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)

from memvault.normalize import (
    EARLIEST,
    canonical_name,
    check_time,
    iso,
    normalize_text,
    to_utc_naive,
    utcnow,
)

#: A predicate names a relation in snake_case (after lower-casing and joining words with "_").
PREDICATE_PATTERN = re.compile(r"[a-z][a-z0-9_]*")

Tier = Literal["hot", "warm", "cold", "frozen"]
Verdict = Literal["CORRECT", "INCORRECT", "AMBIGUOUS"]
TripleStatus = Literal["active", "superseded", "merged", "invalidated", "archived", "held"]
ItemStatus = Literal["active", "archived"]

#: The ten attitude categories (A1). The first five come from the spec; the
#: rest are ours, documented in docs/format.md.
ATTITUDE_CATEGORIES: tuple[str, ...] = (
    "writing_style",
    "tech_choice",
    "design_principle",
    "pace",
    "aesthetic",
    "communication",
    "workflow",
    "tooling",
    "learning",
    "values",
)

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


def stable_id(prefix: str, *parts: object) -> str:
    """A deterministic id from the parts that make a record what it is."""
    key = "\x1f".join(
        "" if p is None else ((iso(p) or "") if isinstance(p, dt.datetime) else str(p))
        for p in parts
    )
    return f"{prefix}_{hashlib.sha256(key.encode()).hexdigest()[:20]}"


class Record(BaseModel):
    """Common behaviour: unknown fields are errors, texts and times are normalized."""

    # NaN and Infinity are not JSON, and no field of ours can hold them: refused on the way in.
    model_config = ConfigDict(
        extra="forbid", str_strip_whitespace=False, validate_default=True, allow_inf_nan=False
    )

    #: Fields that hold valid time (may lie in the future); other datetimes are observation times.
    valid_time_fields: ClassVar[frozenset[str]] = frozenset()
    #: Fields that must not be empty after normalization.
    text_fields: ClassVar[tuple[str, ...]] = ()
    id_prefix: ClassVar[str] = ""

    #: Filled per subclass: which fields hold times and which hold text.
    _time_fields: ClassVar[tuple[str, ...]] = ()
    _str_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        times, texts = [], []
        for name, info in cls.model_fields.items():
            text = str(info.annotation)
            if "datetime" in text:
                times.append(name)
            elif info.annotation in (str, str | None) and name != "type":
                texts.append(name)
        cls._time_fields, cls._str_fields = tuple(times), tuple(texts)

    @model_validator(mode="after")
    def _normalize(self, info: ValidationInfo) -> Record:
        # Hot path of ingest (100k+ records): plain loops over precomputed field lists.
        values = self.__dict__
        now = info.context["now"] if info.context else utcnow()
        for name in self._time_fields:
            value = values[name]
            if value is None:
                continue
            if value.tzinfo is not None:
                try:
                    value = values[name] = to_utc_naive(value)
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
            if value < EARLIEST or value > now:
                problem = check_time(
                    value, field=name, valid_time=name in self.valid_time_fields, now=now
                )
                if problem:
                    raise ValueError(problem)
        for name in self._str_fields:
            value = values[name]
            if value is not None:
                values[name] = normalize_text(value)
        for name in self.text_fields:
            if not values[name]:
                raise ValueError(f"{name} is empty")
        if values.get("id", "missing") is None:
            values["id"] = self.derive_id()
        elif values.get("id", "missing") == "":
            raise ValueError("id is empty (leave the field out and a stable id is derived)")
        return self

    def derive_id(self) -> str:  # pragma: no cover - every record with an optional id overrides it
        raise NotImplementedError

    def to_json_dict(self) -> dict[str, Any]:
        """The record as written by ``export``: defaults included, times in one spelling."""
        out: dict[str, Any] = {}
        for name, value in self:
            out[name] = iso(value) if isinstance(value, dt.datetime) else value
        return out


class SessionRecord(Record):
    type: Literal["session"] = "session"
    id: str
    source: str = "jsonl"
    started_at: dt.datetime
    ended_at: dt.datetime | None = None
    title: str | None = None
    project: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    text_fields: ClassVar[tuple[str, ...]] = ("id",)

    @model_validator(mode="after")
    def _ordered(self) -> SessionRecord:
        if self.ended_at is not None and self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        return self


class BlockRecord(Record):
    type: Literal["block"] = "block"
    id: str | None = None
    session_id: str | None = None
    kind: str = "memory"
    role: str | None = None
    text: str
    importance: Unit = 0.5
    pinned: bool = False
    tier: Tier = "hot"
    summary: str | None = None
    #: Which digest (``llm``, ``extractive``, ``headline``) stands in for the text since
    #: tiering; its original text travels as an ``original`` record.
    digest_kind: str | None = None
    status: ItemStatus = "active"
    parent_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: dt.datetime
    updated_at: dt.datetime | None = None
    last_accessed_at: dt.datetime | None = None
    #: When the tier last changed.
    tiered_at: dt.datetime | None = None
    access_count: int = Field(default=0, ge=0, le=2**31 - 1)  # an INTEGER column
    feedback_score: float = 0.0
    text_fields: ClassVar[tuple[str, ...]] = ("text",)

    def derive_id(self) -> str:
        return stable_id("blk", self.session_id, self.created_at, self.text)

    @model_validator(mode="after")
    def _updated_defaults_to_created(self) -> BlockRecord:
        if self.updated_at is None:
            object.__setattr__(self, "updated_at", self.created_at)
        return self


class OriginalRecord(Record):
    """The text a block had before tiering made it a digest (``block_originals``).

    ``id`` is the block's id: one original per block, the first kept. Recall searches it;
    without it an exported digest could only be found by its digest's words.
    """

    type: Literal["original"] = "original"
    id: str
    text: str
    digested_at: dt.datetime
    #: The tiering run that kept it, in the store it came from (provenance only).
    run_id: str | None = None
    text_fields: ClassVar[tuple[str, ...]] = ("id", "text")


class EntityRecord(Record):
    type: Literal["entity"] = "entity"
    id: str | None = None
    name: str
    canonical_name: str | None = None
    entity_type: str = "concept"
    aliases: list[str] = Field(default_factory=list)
    status: ItemStatus = "active"
    created_at: dt.datetime | None = None
    text_fields: ClassVar[tuple[str, ...]] = ("name",)

    @model_validator(mode="after")
    def _canonical(self) -> EntityRecord:
        if not self.canonical_name:
            object.__setattr__(self, "canonical_name", canonical_name(self.name))
        if not self.canonical_name:
            raise ValueError(f"entity name {self.name!r} has no letters or digits")
        object.__setattr__(self, "entity_type", canonical_name(self.entity_type) or "concept")
        return self

    def derive_id(self) -> str:
        return stable_id(
            "ent", canonical_name(self.name), canonical_name(self.entity_type) or "concept"
        )


class MentionRecord(Record):
    """``entity`` is an entity id or a name that resolves to exactly one entity."""

    type: Literal["mention"] = "mention"
    id: str | None = None
    entity: str
    block_id: str | None = None
    session_id: str | None = None
    mentioned_at: dt.datetime
    text_fields: ClassVar[tuple[str, ...]] = ("entity",)

    def derive_id(self) -> str:
        return stable_id("men", self.entity, self.block_id, self.session_id, self.mentioned_at)


class TripleRecord(Record):
    """A bi-temporal fact. ``subject`` (and ``object_id``) are entity ids or unique names."""

    type: Literal["triple"] = "triple"
    id: str | None = None
    subject: str
    predicate: str
    object: str
    object_id: str | None = None
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    created_at: dt.datetime
    expired_at: dt.datetime | None = None
    source_session: str | None = None
    source_block: str | None = None
    confidence: Unit = 1.0
    status: TripleStatus = "active"
    superseded_by: str | None = None
    valid_time_fields: ClassVar[frozenset[str]] = frozenset({"valid_at", "invalid_at"})
    text_fields: ClassVar[tuple[str, ...]] = ("subject", "predicate", "object")

    @field_validator("predicate")
    @classmethod
    def _predicate_is_snake_case(cls, value: str) -> str:
        name = "_".join(normalize_text(value).lower().split())
        if not PREDICATE_PATTERN.fullmatch(name):
            raise ValueError(
                f"{value!r} is not a snake_case word (lowercase letters, digits and "
                "underscores, starting with a letter, e.g. works_at)"
            )
        return name

    @model_validator(mode="after")
    def _valid_interval(self) -> TripleRecord:
        if self.valid_at and self.invalid_at and self.invalid_at < self.valid_at:
            raise ValueError("invalid_at is before valid_at")
        return self

    def derive_id(self) -> str:
        return stable_id(
            "tri",
            self.subject,
            self.predicate,
            self.object,
            self.object_id,
            self.valid_at,
            self.source_session,
        )


class RecallRecord(Record):
    type: Literal["recall"] = "recall"
    id: str | None = None
    query: str
    intent_label: str | None = None
    entities: list[str] = Field(default_factory=list)
    result_ids: list[str] = Field(default_factory=list)
    verdict: Verdict | None = None
    session_id: str | None = None
    created_at: dt.datetime
    text_fields: ClassVar[tuple[str, ...]] = ("query",)

    def derive_id(self) -> str:
        return stable_id("rec", self.query, self.session_id, self.created_at)


class FeedbackRecord(Record):
    type: Literal["feedback"] = "feedback"
    id: str | None = None
    target_id: str
    kind: Literal["thumbs", "click", "verdict"] = "thumbs"
    value: float = Field(ge=-1.0, le=1.0)
    session_id: str | None = None
    note: str | None = None
    created_at: dt.datetime
    text_fields: ClassVar[tuple[str, ...]] = ("target_id",)

    def derive_id(self) -> str:
        return stable_id("fb", self.target_id, self.kind, self.session_id, self.created_at)


class AttitudeRecord(Record):
    type: Literal["attitude"] = "attitude"
    id: str | None = None
    category: Literal[ATTITUDE_CATEGORIES]  # type: ignore[valid-type]
    #: Narrower than the category: a new statement replaces the current version of the same
    #: (category, topic); empty means the category itself.
    topic: str | None = None
    statement: str
    confidence: Unit = 0.7
    weight: Unit = 1.0
    evidence: list[str] = Field(default_factory=list)
    created_at: dt.datetime
    superseded_at: dt.datetime | None = None
    previous_id: str | None = None
    text_fields: ClassVar[tuple[str, ...]] = ("statement",)

    def derive_id(self) -> str:
        return stable_id("att", self.category, self.statement, self.created_at)


class SkillUseRecord(Record):
    type: Literal["skill_use"] = "skill_use"
    id: str | None = None
    skill: str
    proficiency: Unit = 0.5
    session_id: str | None = None
    evidence: str | None = None
    used_at: dt.datetime
    text_fields: ClassVar[tuple[str, ...]] = ("skill",)

    def derive_id(self) -> str:
        return stable_id("sku", canonical_name(self.skill), self.session_id, self.used_at)


AnyRecord = Annotated[
    SessionRecord
    | BlockRecord
    | OriginalRecord
    | EntityRecord
    | MentionRecord
    | TripleRecord
    | RecallRecord
    | FeedbackRecord
    | AttitudeRecord
    | SkillUseRecord,
    Field(discriminator="type"),
]

RECORD_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyRecord)

#: Record types in the order they are written (referenced things first).
RECORD_TYPES: tuple[str, ...] = (
    "session",
    "entity",
    "block",
    "original",
    "mention",
    "triple",
    "recall",
    "feedback",
    "attitude",
    "skill_use",
)
