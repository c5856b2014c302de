"""Where the collector looks for new sessions: a JSONL inbox and Claude Code transcripts."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field

from memvault.config import claude_projects_dir, inbox_dir


def _claude_default() -> str | None:
    found = claude_projects_dir()
    return str(found) if found else None


class CollectorSourcesResource(dg.ConfigurableResource):
    inbox: str = Field(
        default_factory=lambda: str(inbox_dir()), description="JSONL inbox (MEMVAULT_INBOX)"
    )
    claude_projects: str | None = Field(
        default_factory=_claude_default,
        description="Claude Code projects dir (MEMVAULT_CLAUDE_PROJECTS)",
    )
    include_subagents: bool = False

    def inbox_path(self) -> Path:
        return Path(self.inbox).expanduser()

    def claude_path(self) -> Path | None:
        return Path(self.claude_projects).expanduser() if self.claude_projects else None
