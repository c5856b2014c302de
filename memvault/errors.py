"""Errors a user can act on: each says what went wrong, where, and what to do."""

from __future__ import annotations

from dataclasses import dataclass


class MemvaultError(Exception):
    """Base of every error memvault raises on purpose (the CLI prints it as one line)."""


class StoreError(MemvaultError):
    """The store could not be opened, migrated or written."""


class QueryError(MemvaultError):
    """A recall query memvault refuses (empty, too long, or not text); nothing is recorded."""


class UndoError(MemvaultError):
    """A run cannot be undone as asked."""


class JudgeError(MemvaultError):
    """The LLM endpoint failed or kept answering outside the reply schema."""


@dataclass(frozen=True)
class LineProblem:
    """One bad line of an input file."""

    source: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.message}"


class IngestError(MemvaultError):
    """Input that cannot be ingested; nothing of the file was written."""

    def __init__(self, problems: list[LineProblem], total: int | None = None) -> None:
        self.problems = problems
        self.total = total if total is not None else len(problems)
        first = problems[0] if problems else "no detail"
        more = f" (and {self.total - 1} more problems)" if self.total > 1 else ""
        super().__init__(f"{first}{more}; nothing from this input was written")
