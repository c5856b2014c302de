"""GD8: the one machine-readable line a workflow runner reads after the report.

``SUBSTRATE_OUTCOME_V1={...}`` is printed only in workflow mode
(``--workflow-outcome``), exactly once, as the last non-empty line. It says
"succeeded" only when the run stayed in budget, every skipped phase is listed,
every mutation is audited (audit rows of the run counted against the changes
made) and the report was saved and read back where the store can save
artifacts; anything else — a failed mandatory backup, an unreported partial
mutation, a failed report save, blocked work — is "failed".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

PREFIX = "SUBSTRATE_OUTCOME_V1="


@dataclass
class Outcome:
    outcome: Literal["succeeded", "failed"]
    summary: str
    checks: list[tuple[str, bool]] = field(default_factory=list)  # (evidence command, passed)

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "outcome": self.outcome,
            "summary": self.summary,
            "evidence": {
                "changes": {
                    "status": "notApplicable",
                    "reason": "Memory-store mutations are not Git changes",
                },
                "verification": {
                    "status": "passed" if all(ok for _, ok in self.checks) else "failed",
                    "commands": [command for command, _ in self.checks],
                },
            },
        }

    def line(self) -> str:
        return outcome_line(self.as_dict())


def outcome_line(outcome: dict[str, Any]) -> str:
    """The one ``SUBSTRATE_OUTCOME_V1=`` line of an outcome object (as ``Outcome.as_dict``)."""
    order = ("version", "outcome", "summary", "evidence")
    ordered = {k: outcome[k] for k in order if k in outcome} | outcome
    return PREFIX + json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def parse_outcome_line(text: str) -> dict[str, Any]:
    """The outcome object of the last non-empty line of ``text`` (raises if it is not one)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[-1].startswith(PREFIX):
        raise ValueError("the last non-empty line is not a SUBSTRATE_OUTCOME_V1 line")
    if sum(line.startswith(PREFIX) for line in lines) != 1:
        raise ValueError("more than one SUBSTRATE_OUTCOME_V1 line")
    value: dict[str, Any] = json.loads(lines[-1][len(PREFIX) :])
    return value
