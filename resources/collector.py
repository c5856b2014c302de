"""Where the collector looks for new sessions: a JSONL inbox and Claude Code transcripts."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field, PrivateAttr

from memvault.config import claude_projects_dir, inbox_dir
from memvault.owners import run_owner


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
    by_owner: bool = Field(
        default=False,
        description="Many owners: each owner's inbox is the folder named for them in the inbox "
        "(inbox/NAME); one machine's Claude Code transcripts belong to no owner and are not read",
    )
    _owner: str | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        if self.by_owner:
            run = context.run
            self._owner = run_owner(run.tags if run is not None else {})

    def inbox_path(self) -> Path:
        base = Path(self.inbox).expanduser()
        if self.by_owner:
            if self._owner is None:
                from memvault.errors import MemvaultError

                raise MemvaultError("this run names no owner: whose inbox is unknown")
            return base / self._owner
        return base

    def claude_path(self) -> Path | None:
        if self.by_owner:
            return None
        return Path(self.claude_projects).expanduser() if self.claude_projects else None
