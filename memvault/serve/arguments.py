"""The arguments each tool takes: their JSON schema, and a strict check of what a caller sent.

An agent reads the schema to know what to send, so it says every limit (``maxLength``,
``minimum``/``maximum``, the allowed words) and that nothing else is taken
(``additionalProperties: false``). The check holds the call to that schema and takes no
liberties: ``true`` is no number, ``"10"`` is no number, an argument the tool does not take
is refused, not dropped. A refusal is one line naming the tool and the argument, in the
tool's own terms, and nothing is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memvault.errors import MemvaultError
from memvault.normalize import MAX_TEXT_CHARS
from memvault.recall.recaller import MAX_QUERY_CHARS

#: The most hits one recall returns.
MAX_LIMIT = 100
#: Hits a recall returns when ``limit`` is not given.
DEFAULT_LIMIT = 10
#: The longest memory ``remember`` takes in one call (a text past the block size is split
#: into consecutive parts; bulk input belongs to ``memvault ingest``).
MAX_REMEMBER_CHARS = 4 * MAX_TEXT_CHARS
#: The longest id, name, speaker, time or note taken.
MAX_NAME_CHARS = 200
MAX_NOTE_CHARS = 2000


class ArgumentError(MemvaultError):
    """A tool call whose arguments do not fit the tool's schema (nothing was done)."""


@dataclass(frozen=True)
class Arg:
    """One argument: its JSON type, limits and what it means (said to the agent)."""

    name: str
    kind: str  # "string" | "integer"
    description: str
    required: bool = False
    max_length: int | None = None
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    default: Any = None
    #: Free text (a query, a memory, a note): a NUL in it is dropped, as the store drops it
    #: from every text; in a name or id (which no record in memory holds) it is refused.
    free_text: bool = False

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "description": self.description}
        if not self.required and self.default is None:
            out["type"] = [self.kind, "null"]  # null: the same as leaving it out
        if self.choices:
            out["enum"] = list(self.choices)
        if self.max_length is not None:
            out["minLength"] = 1
            out["maxLength"] = self.max_length
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.default is not None:
            out["default"] = self.default
        return out

    def check(self, tool: str, value: Any) -> Any:
        """``value`` as the tool takes it, or :class:`ArgumentError` (never converted)."""
        if self.kind == "integer":
            # JSON has one number type: 10.0 is the whole number 10; true and "10" are not.
            whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
            if isinstance(value, bool) or not whole:
                raise ArgumentError(
                    f"{tool}: {self.name} must be a whole number from {self.minimum} to "
                    f"{self.maximum}, not {_shown(value)}"
                )
            number = int(value)
            if not self.minimum <= number <= self.maximum:  # type: ignore[operator]
                raise ArgumentError(
                    f"{tool}: {self.name} must be from {self.minimum} to {self.maximum}, "
                    f"not {number}"
                )
            return number
        if not isinstance(value, str):
            raise ArgumentError(f"{tool}: {self.name} must be text, not {_shown(value)}")
        if "\x00" in value:
            if not self.free_text:
                raise ArgumentError(
                    f"{tool}: {self.name} holds a NUL character (\\u0000); send it without one"
                )
            value = value.replace("\x00", "")
        if self.choices and value.strip().lower() not in self.choices:
            raise ArgumentError(
                f"{tool}: {self.name} must be one of {', '.join(self.choices)}, not {_shown(value)}"
            )
        if self.max_length is not None and len(value) > self.max_length:
            raise ArgumentError(
                f"{tool}: {self.name} has {len(value):,} characters; it takes at most "
                f"{self.max_length:,}"
            )
        return value


def _shown(value: Any) -> str:
    """A caller's value as it was sent (JSON spelling), shortened."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_SESSION = Arg(
    "session_id",
    "string",
    "The id of the conversation this call belongs to, if the agent has one.",
    max_length=MAX_NAME_CHARS,
)

#: Every tool's arguments, in the order they are listed to the agent.
ARGUMENTS: dict[str, tuple[Arg, ...]] = {
    "recall": (
        Arg(
            "query",
            "string",
            "The question or topic, in plain words, naming who or what it is about "
            "(e.g. 'which editor does Ada use', 'status of the Quill project').",
            required=True,
            max_length=MAX_QUERY_CHARS,
            free_text=True,
        ),
        Arg(
            "limit",
            "integer",
            f"How many memories to return at most (default {DEFAULT_LIMIT}).",
            minimum=1,
            maximum=MAX_LIMIT,
            default=DEFAULT_LIMIT,
        ),
        _SESSION,
    ),
    "remember": (
        Arg(
            "text",
            "string",
            "The memory as one self-contained statement that names who and what it is about "
            "('Ada switched from Neovim to VS Code for its debugger'), not 'she switched'.",
            required=True,
            max_length=MAX_REMEMBER_CHARS,
            free_text=True,
        ),
        Arg(
            "speaker",
            "string",
            "Who said or wrote it: 'user' (the owner), 'assistant', or a name.",
            max_length=MAX_NAME_CHARS,
        ),
        _SESSION,
        Arg(
            "occurred_at",
            "string",
            "When it happened or was said, ISO 8601 ('2026-11-02' or '2026-11-02T09:30:00Z'); "
            "default now. Never in the future.",
            max_length=64,
        ),
    ),
    "feedback": (
        Arg(
            "recall_id",
            "string",
            "The recall_id of the recall being rated (every recall answer has one).",
            required=True,
            max_length=MAX_NAME_CHARS,
        ),
        Arg(
            "verdict",
            "string",
            "'correct' (the recall answered the question), 'incorrect' (it did not, or misled), "
            "'ambiguous'; or '+' / '-' to rank its memories higher / lower in future recalls.",
            required=True,
            choices=("correct", "incorrect", "ambiguous", "+", "-"),
        ),
        Arg(
            "block_id",
            "string",
            "With '+' or '-' only: rate just this memory of that recall's results.",
            max_length=MAX_NAME_CHARS,
        ),
        Arg(
            "note",
            "string",
            "Why, in a sentence (kept with the rating).",
            max_length=MAX_NOTE_CHARS,
            free_text=True,
        ),
    ),
    "asof": (
        Arg(
            "subject",
            "string",
            "Who or what: a name as recall takes it ('Ada', 'Ada Lovelace', a nickname; any "
            "case) or an entity id.",
            required=True,
            max_length=MAX_NAME_CHARS,
        ),
        Arg(
            "at",
            "string",
            "The time asked about, 'YYYY-MM-DD' or ISO 8601 (default now).",
            max_length=64,
        ),
        Arg(
            "predicate",
            "string",
            "Only facts of this kind (works_at, lives_in, uses_tool, ...); every answer lists "
            "the kinds known for the subject in 'predicates'.",
            max_length=MAX_NAME_CHARS,
        ),
        Arg(
            "known_at",
            "string",
            "Answer with what memory believed at this time, 'YYYY-MM-DD' or ISO 8601 "
            "(default: what it knows now).",
            max_length=64,
        ),
    ),
}


def input_schema(tool: str) -> dict[str, Any]:
    """The JSON schema of ``tool``'s arguments (nothing else is taken)."""
    args = ARGUMENTS[tool]
    return {
        "type": "object",
        "properties": {a.name: a.schema() for a in args},
        "required": [a.name for a in args if a.required],
        "additionalProperties": False,
    }


def check(tool: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments of a call to ``tool``, every one checked against its schema, the
    defaults filled in; :class:`ArgumentError` for the first that does not fit."""
    args = ARGUMENTS.get(tool)
    if args is None:
        raise ArgumentError(f"there is no tool {tool!r}: use {', '.join(ARGUMENTS)}")
    given = dict(arguments or {})
    known = {a.name: a for a in args}
    unknown = sorted(set(given) - known.keys())
    if unknown:
        takes = ", ".join(known)
        names = ", ".join(repr(u) for u in unknown)
        noun = "arguments" if len(unknown) > 1 else "argument"
        raise ArgumentError(f"{tool} takes no {noun} {names}; it takes {takes}")
    out: dict[str, Any] = {}
    for arg in args:
        value = given.get(arg.name)
        if value is None:
            if arg.required:
                raise ArgumentError(f"{tool}: {arg.name} is missing ({arg.description})")
            out[arg.name] = arg.default
            continue
        out[arg.name] = arg.check(tool, value)
    return out
