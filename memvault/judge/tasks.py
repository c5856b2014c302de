"""Typed LLM tasks: a prompt, a request model, a reply model and an offline answer.

A :class:`JudgeTask` is everything a judge needs to ask one kind of question:
the prompt (``prompts/<name>.md``, written by us), the reply schema the model
must fill (the reply model's ``Field`` descriptions are what the model reads),
and a heuristic that answers offline when no LLM is configured.

Memory text is data, never instructions: :func:`fence_data` serializes the
request as JSON, escapes ``<``, ``>`` and backticks so no memory can close the
fence or open a code block, and wraps it in ``<memvault-data>`` lines; the
system prompt says that everything inside the fence is data.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, Literal, TypeVar, cast, get_args

from pydantic import BaseModel, ConfigDict, Field

from memvault.paths import data_dir

RequestT = TypeVar("RequestT", bound=BaseModel)
ReplyT = TypeVar("ReplyT", bound=BaseModel)

FENCE_OPEN = "<memvault-data>"
FENCE_CLOSE = "</memvault-data>"
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "`": "\\u0060"}
_SECTION = re.compile(r"^## (system|user)\s*$", re.MULTILINE)


def fence_data(payload: Any) -> str:
    """``payload`` as JSON inside the data fence, escaped so it cannot leave it.

    The escapes are JSON escapes, so the fenced text still parses back to the
    same value.
    """
    text = json.dumps(payload, ensure_ascii=False, indent=2)
    for char, escape in _ESCAPES.items():
        text = text.replace(char, escape)
    return f"{FENCE_OPEN}\n{text}\n{FENCE_CLOSE}"


@dataclass(frozen=True)
class Prompt:
    """A task's prompt: the system message and the user template with ``{data}``."""

    system: str
    user_template: str

    @classmethod
    def parse(cls, text: str, *, source: str = "prompt") -> Prompt:
        """Split a prompt file at its ``## system`` and ``## user`` headings."""
        parts = _SECTION.split(text)
        sections = dict(zip(parts[1::2], (p.strip() for p in parts[2::2]), strict=True))
        if set(sections) != {"system", "user"} or len(parts) != 5:
            raise ValueError(f"{source}: needs exactly one '## system' and one '## user' section")
        if sections["user"].count("{data}") != 1:
            raise ValueError(f"{source}: the user section must contain '{{data}}' exactly once")
        return cls(system=sections["system"], user_template=sections["user"])


class JudgeTask(Generic[RequestT, ReplyT]):
    """One kind of question for a judge, with its prompt, schema and offline answer."""

    def __init__(
        self,
        name: str,
        *,
        request_model: type[RequestT],
        reply_model: type[ReplyT],
        description: str,
        heuristic: Callable[[RequestT], ReplyT],
    ) -> None:
        self.name = name
        self.request_model = request_model
        self.reply_model = reply_model
        self.description = description
        self._heuristic = heuristic

    def __repr__(self) -> str:
        return f"JudgeTask({self.name!r})"

    @cached_property
    def prompt(self) -> Prompt:
        """The prompt, read once from ``prompts/<name>.md``."""
        path = data_dir("prompts") / f"{self.name}.md"
        return Prompt.parse(path.read_text(encoding="utf-8"), source=str(path))

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The reply's JSON schema, as the model sees it."""
        return self.reply_model.model_json_schema()

    def render(self, request: RequestT) -> list[dict[str, str]]:
        """Chat messages for ``request``: a fixed system message and the fenced data."""
        data = fence_data(request.model_dump(mode="json"))
        return [
            {"role": "system", "content": self.prompt.system},
            {"role": "user", "content": self.prompt.user_template.replace("{data}", data)},
        ]

    def heuristic(self, request: RequestT) -> ReplyT:
        """The offline, deterministic answer."""
        return self._heuristic(request)


# --- extract_memory ---------------------------------------------------------------------

EntityType = Literal["person", "place", "organization", "project", "tool", "concept"]
ENTITY_TYPES: tuple[str, ...] = get_args(EntityType)


class MemoryText(BaseModel):
    """One memory block to extract from."""

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    created_at: dt.datetime | None = None


class ExtractMemoryRequest(BaseModel):
    """The memory blocks of one extraction call."""

    model_config = ConfigDict(extra="forbid")

    memories: list[MemoryText]


class ExtractedEntityItem(BaseModel):
    """An entity named in the memories."""

    name: str = Field(
        min_length=1, description="The entity's most complete name as the memories write it."
    )
    entity_type: EntityType = Field(description="What kind of thing the entity is.")
    block_ids: list[str] = Field(
        description="Ids of the memory blocks that mention the entity.", min_length=1
    )


class ExtractedFactItem(BaseModel):
    """A subject-predicate-object statement one memory makes."""

    subject: str = Field(min_length=1, description="Name of the entity the fact is about.")
    predicate: str = Field(
        pattern=r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$",
        description="Short verb phrase in snake_case, e.g. lives_in, works_at, prefers.",
    )
    object: str = Field(min_length=1, description="An entity name or a literal value.")
    object_is_entity: bool = Field(
        description="True when the object is an entity name, false for a literal value."
    )
    valid_at: dt.date | None = Field(
        description="Date (YYYY-MM-DD) from which the fact holds, or null when not stated."
    )
    block_id: str = Field(description="Id of the memory block that states the fact.")
    confidence: float = Field(
        ge=0.0, le=1.0, description="How surely the memory states the fact, from 0 to 1."
    )


class ExtractionReply(BaseModel):
    """Entities and facts extracted from a batch of memory blocks."""

    entities: list[ExtractedEntityItem] = Field(
        description="Every entity the memories name, each listed once."
    )
    facts: list[ExtractedFactItem] = Field(description="Facts the memories state about entities.")


def _extract_memory_heuristic(request: ExtractMemoryRequest) -> ExtractionReply:
    """Entities from the rule-based extractor; no facts, which rules cannot extract honestly."""
    from memvault.extract import HeuristicExtractor

    extractor = HeuristicExtractor()
    found: dict[tuple[str, str], ExtractedEntityItem] = {}
    for memory in request.memories:
        for entity in extractor.extract(memory.text):
            kind = cast(
                EntityType, entity.entity_type if entity.entity_type in ENTITY_TYPES else "concept"
            )
            item = found.setdefault(
                (entity.name.casefold(), kind),
                ExtractedEntityItem(name=entity.name, entity_type=kind, block_ids=[memory.id]),
            )
            if memory.id not in item.block_ids:
                item.block_ids.append(memory.id)
    return ExtractionReply(entities=list(found.values()), facts=[])


EXTRACT_MEMORY: JudgeTask[ExtractMemoryRequest, ExtractionReply] = JudgeTask(
    "extract_memory",
    request_model=ExtractMemoryRequest,
    reply_model=ExtractionReply,
    description="Report the entities named in the memory blocks and the facts they state.",
    heuristic=_extract_memory_heuristic,
)

#: Every task, by name (``python -m memvault.judge.schemas`` writes their schema files).
TASKS: dict[str, JudgeTask[Any, Any]] = {task.name: task for task in (EXTRACT_MEMORY,)}
