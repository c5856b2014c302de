"""Import Claude Code transcripts (``~/.claude/projects/<project-dir>/<session-uuid>.jsonl``).

Claude Code is where many people already talk with an agent all day, so its
transcripts are the session source memvault can read without anyone changing
how they work. The format has no official spec; what this module relies on:

* one JSON object per line; ``type`` is "user", "assistant", "summary",
  "system", "file-history-snapshot" or something newer (ignored);
* user and assistant lines carry ``uuid``, ``sessionId``, ``timestamp``,
  ``cwd``, ``gitBranch``, ``version``, ``isSidechain`` and ``message``;
  ``isMeta``, ``isCompactSummary`` and ``isApiErrorMessage`` lines were written
  by Claude Code itself, not by the person or the model, and are skipped;
* user content is a string or a list of parts (text, tool_result, image);
  assistant content is a list of parts (text, thinking, tool_use), often one
  part per line, the lines sharing ``message.id``: their text is one turn;
* ``summary`` lines (``summary``, ``leafUuid``) title the session;
* subagents write ``agent-<id>.jsonl`` files (beside the session, or under
  ``<session>/subagents/``) whose lines have ``isSidechain: true``.

The layout is pinned by the fixtures in tests/fixtures/claude_code/.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.errors import IngestError, LineProblem, MemvaultError
from memvault.extract import Extractor, HeuristicExtractor, extract_records
from memvault.normalize import check_time, normalize_text, to_utc_naive, utcnow
from memvault.records import BlockRecord, EntityRecord, MentionRecord, SessionRecord

SOURCE = "claude-code"
TITLE_CHARS = 80
#: At most this many problems are listed per file (the error still says how many there were).
MAX_PROBLEMS = 20

#: User text that Claude Code wrote around slash commands, shell escapes and interrupts.
NOISE_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "Caveat: The messages below were generated",
    "[Request interrupted",
)
#: Flags of lines that Claude Code wrote itself.
GENERATED_FLAGS = ("isMeta", "isCompactSummary", "isApiErrorMessage")
#: Line context copied into the session's metadata (first non-empty value wins).
METADATA_FIELDS = ("gitBranch", "version")

ImportedRecord = SessionRecord | BlockRecord | EntityRecord | MentionRecord


@dataclass
class ImportedSession:
    """One session file's records: the session, its blocks, then entities and mentions."""

    location: str
    records: list[ImportedRecord]


def read_claude_code(
    root: Path,
    *,
    include_subagents: bool = False,
    extractor: Extractor | None = None,
) -> Iterator[ImportedSession]:
    """Sessions under ``root``: ``~/.claude/projects``, one project directory or one .jsonl file.

    Files are read in sorted order; a file with no usable text yields nothing.
    Raises ``IngestError`` naming file and line for a malformed line.
    """
    extractor = extractor or HeuristicExtractor()
    for path in session_files(root, include_subagents=include_subagents):
        session = read_session_file(path, include_subagents=include_subagents, extractor=extractor)
        if session is not None:
            yield session


def session_files(root: Path, *, include_subagents: bool = False) -> list[Path]:
    """The transcript files under ``root``, sorted; subagent files only when asked for."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise MemvaultError(
            f"{root}: no such file or directory; pass ~/.claude/projects, "
            "one of its project directories or a session .jsonl file"
        )
    files = sorted(path for path in root.rglob("*.jsonl") if path.is_file())
    return [path for path in files if include_subagents or not is_subagent_file(path)]


def is_subagent_file(path: Path) -> bool:
    """``agent-<id>.jsonl`` beside the sessions, or anything under ``<session>/subagents/``."""
    return path.name.startswith("agent-") or path.parent.name == "subagents"


def read_session_file(
    path: Path, *, include_subagents: bool, extractor: Extractor
) -> ImportedSession | None:
    """The records of one transcript file, or None when it holds no usable text."""
    transcript = _Transcript(path, include_subagents=include_subagents)
    for number, entry in _json_lines(path, transcript.problems):
        transcript.add(number, entry)
    if transcript.problems:
        problems = transcript.problems
        raise IngestError(problems[:MAX_PROBLEMS], total=len(problems))
    blocks = transcript.blocks()
    if not blocks:
        return None
    entities, mentions = extract_records(blocks, extractor)
    return ImportedSession(str(path), [transcript.session(blocks), *blocks, *entities, *mentions])


def _json_lines(path: Path, problems: list[LineProblem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line as a JSON object; bad lines go to ``problems`` instead."""
    source = str(path)
    try:
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, start=1):
                if not raw.strip():
                    continue
                try:
                    entry = json.loads(raw.decode("utf-8", errors="strict"))
                except UnicodeDecodeError as exc:
                    message = f"not valid UTF-8 (byte {exc.start + 1} of the line)"
                    problems.append(LineProblem(source, number, message))
                    continue
                except json.JSONDecodeError as exc:
                    message = f"not valid JSON ({exc.msg} at column {exc.colno})"
                    problems.append(LineProblem(source, number, message))
                    continue
                if not isinstance(entry, dict):
                    problems.append(LineProblem(source, number, "expected a JSON object"))
                    continue
                yield number, entry
    except OSError as exc:
        raise MemvaultError(f"{path}: cannot read ({exc.strerror})") from exc


def _is_noise(text: str) -> bool:
    return text.lstrip().startswith(NOISE_PREFIXES)


def _shorten(text: str, limit: int = TITLE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class _Turn:
    """One user or assistant turn, gathered from one or more lines."""

    uuid: str
    role: str
    created_at: dt.datetime
    parts: list[str] = field(default_factory=list)


class _Transcript:
    """What one transcript file says, gathered line by line."""

    def __init__(self, path: Path, *, include_subagents: bool) -> None:
        self.path = path
        self.include_subagents = include_subagents
        self.problems: list[LineProblem] = []
        self.context: dict[str, str] = {}  # sessionId, cwd, gitBranch, version: first seen
        self.summaries: list[tuple[str | None, str]] = []  # (leafUuid, summary)
        self.uuids: set[str] = set()
        self.turns: list[_Turn] = []
        self._assistant_turns: dict[str, _Turn] = {}  # by message.id
        self._user_turns: set[str] = set()  # their uuids
        self._first: dt.datetime | None = None
        self._last: dt.datetime | None = None
        self._previous: dt.datetime | None = None  # for lines without a timestamp
        self._now = utcnow()

    def _problem(self, line: int, message: str) -> None:
        self.problems.append(LineProblem(str(self.path), line, message))

    def add(self, line: int, entry: dict[str, Any]) -> None:
        kind = entry.get("type")
        if kind == "summary":
            summary, leaf = entry.get("summary"), entry.get("leafUuid")
            if isinstance(summary, str) and summary.strip():
                self.summaries.append((leaf if isinstance(leaf, str) else None, summary))
            return
        if kind not in ("user", "assistant", "system"):
            return  # file-history-snapshot, queue-operation and whatever comes next
        if entry.get("isSidechain") is True and not self.include_subagents:
            return
        when = self._timestamp(line, entry)
        if when is None:
            return
        self._remember_context(entry)
        if kind == "system" or any(entry.get(flag) is True for flag in GENERATED_FLAGS):
            return
        uuid, message = entry.get("uuid"), entry.get("message")
        if not isinstance(uuid, str) or not uuid:
            self._problem(line, f"a {kind} line without a uuid")
        elif not isinstance(message, dict):
            self._problem(line, f"a {kind} line whose message is not an object")
        elif kind == "user":
            self._add_user(line, uuid, when, message.get("content"))
        else:
            key = message.get("id")
            self._add_assistant(line, uuid, key if isinstance(key, str) else uuid, when, message)

    def _timestamp(self, line: int, entry: dict[str, Any]) -> dt.datetime | None:
        raw = entry.get("timestamp")
        if raw is None:
            if self._previous is None:
                self._problem(line, "no timestamp, and no earlier line has one")
            return self._previous
        try:
            when = to_utc_naive(dt.datetime.fromisoformat(raw))
        except (TypeError, ValueError, OverflowError):  # OverflowError: out of range in UTC
            self._problem(line, f"timestamp {raw!r} is not an ISO 8601 time within range")
            return None
        issue = check_time(when, field="timestamp", valid_time=False, now=self._now)
        if issue:
            self._problem(line, issue)
            return None
        self._previous = when
        self._first = when if self._first is None else min(self._first, when)
        self._last = when if self._last is None else max(self._last, when)
        return when

    def _remember_context(self, entry: dict[str, Any]) -> None:
        for name in ("sessionId", "cwd", *METADATA_FIELDS):
            value = entry.get(name)
            if isinstance(value, str) and value and name not in self.context:
                self.context[name] = value
        if isinstance(entry.get("uuid"), str):
            self.uuids.add(entry["uuid"])

    def _texts(self, line: int, content: Any) -> list[str]:
        """The text parts of a message's content; tool calls, results, images and thinking are not."""
        if isinstance(content, str):
            return [content]
        if not isinstance(content, list):
            self._problem(line, "message content is neither a string nor a list of parts")
            return []
        texts = []
        for part in content:
            if not isinstance(part, dict):
                self._problem(line, "a message content part is not an object")
            elif part.get("type") == "text":
                text = part.get("text")
                if isinstance(text, str):
                    texts.append(text)
                else:
                    self._problem(line, "a text part without a text string")
        return texts

    def _add_user(self, line: int, uuid: str, when: dt.datetime, content: Any) -> None:
        texts = [text for text in self._texts(line, content) if not _is_noise(text)]
        if texts and uuid not in self._user_turns:  # a line written twice is one turn
            self._user_turns.add(uuid)
            self.turns.append(_Turn(uuid, "user", when, texts))

    def _add_assistant(
        self, line: int, uuid: str, key: str, when: dt.datetime, message: dict[str, Any]
    ) -> None:
        turn = self._assistant_turns.get(key)
        if turn is None:
            turn = self._assistant_turns[key] = _Turn(uuid, "assistant", when)
            self.turns.append(turn)
        for text in self._texts(line, message.get("content")):
            if text not in turn.parts:  # a line written twice adds nothing
                turn.parts.append(text)

    @property
    def session_id(self) -> str:
        session = f"cc:{self.context.get('sessionId') or self.path.stem}"
        # A subagent file shares its parent's sessionId; its own session must not.
        return f"{session}:{self.path.stem}" if is_subagent_file(self.path) else session

    def blocks(self) -> list[BlockRecord]:
        blocks = []
        for turn in self.turns:
            text = normalize_text("\n\n".join(turn.parts))
            if text:
                blocks.append(
                    BlockRecord(
                        id=f"cc:{turn.uuid}",
                        session_id=self.session_id,
                        kind=f"{turn.role}_turn",
                        role=turn.role,
                        text=text,
                        created_at=turn.created_at,
                    )
                )
        return blocks

    def _title(self, blocks: list[BlockRecord]) -> str | None:
        own = [summary for leaf, summary in self.summaries if leaf in self.uuids]
        summaries = own or [summary for _, summary in self.summaries]
        if summaries:
            return summaries[0]
        first_user = next((block.text for block in blocks if block.role == "user"), None)
        return _shorten(first_user) if first_user else None

    def session(self, blocks: list[BlockRecord]) -> SessionRecord:
        assert self._first is not None  # every block has a time
        metadata: dict[str, Any] = {
            name: self.context[name] for name in METADATA_FIELDS if name in self.context
        }
        metadata["file"] = self.path.name
        if is_subagent_file(self.path) and "sessionId" in self.context:
            metadata["parent_session"] = f"cc:{self.context['sessionId']}"
        return SessionRecord(
            id=self.session_id,
            source=SOURCE,
            started_at=self._first,
            ended_at=self._last,
            title=self._title(blocks),
            project=self.context.get("cwd"),
            metadata=metadata,
        )
