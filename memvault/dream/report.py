"""The dream-run report: each stage records its figures on the run; prune renders and stores them.

Stage figures live in the ``runs`` row of the dream (``cursor.stages``), so a
resumed run (re-executed from failure) keeps what its earlier stages found,
and the report of a run can be rebuilt at any time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.audit import audit_count
from memvault.store.queries.runs import save_run_cursor

STAGES: tuple[str, ...] = ("orient", "signal", "reflect", "consolidate", "prune")


def record_stage(store: Store, run_id: str, stage: str, figures: dict[str, Any]) -> None:
    """Keep one stage's figures on the run (replacing an earlier attempt's)."""
    run = store.run(run_id)
    if run is None:
        raise ValueError(f"no run {run_id}")
    cursor = run["cursor"]
    cursor.setdefault("stages", {})[stage] = figures
    save_run_cursor(store, run_id, cursor)


def stage_figures(store: Store, run_id: str) -> dict[str, dict[str, Any]]:
    run = store.run(run_id)
    return dict(run["cursor"].get("stages", {})) if run else {}


@dataclass
class DreamReport:
    run_id: str
    dry_run: bool
    judge: str
    stages: dict[str, dict[str, Any]]

    @property
    def actions(self) -> dict[str, int]:
        """Count per action type over every stage."""
        total: dict[str, int] = {}
        for figures in self.stages.values():
            for action, n in figures.get("actions", {}).items():
                total[action] = total.get(action, 0) + int(n)
        return dict(sorted(total.items()))

    @property
    def llm_calls(self) -> int:
        return sum(int(f.get("llm_calls", 0)) for f in self.stages.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "judge": self.judge,
            "actions": self.actions,
            "llm_calls": self.llm_calls,
            "stages": self.stages,
        }

    def render(self) -> str:
        lines = [
            f"# Dream report — {self.run_id}{' (dry run: nothing written)' if self.dry_run else ''}",
            f"Judge: {self.judge} · LLM calls: {self.llm_calls}",
            "Actions: " + (" · ".join(f"{k} {v}" for k, v in self.actions.items()) or "none"),
        ]
        for stage in STAGES:
            figures = self.stages.get(stage)
            if figures is None:
                lines.append(f"## {stage}: not run")
                continue
            lines.append(f"## {stage}")
            for key, value in figures.items():
                if key != "actions":
                    lines += _bullets(key, value)
        return "\n".join(lines) + "\n"


def _bullets(key: str, value: Any, depth: int = 0) -> list[str]:
    """A figure as markdown bullets: nested mappings and lists indented, never raw JSON."""
    pad = "  " * depth
    if isinstance(value, dict):
        if not value:
            return [f"{pad}- {key}: none"]
        return [f"{pad}- {key}:"] + [
            line for k, v in value.items() for line in _bullets(str(k), v, depth + 1)
        ]
    if isinstance(value, list):
        if not value:
            return [f"{pad}- {key}: none"]
        return [f"{pad}- {key}:"] + [f"{pad}  - {item}" for item in value]
    return [f"{pad}- {key}: {value}"]


def save_report(store: Store, report: DreamReport) -> str:
    """Store the rendered report as an artifact (kind ``dream-report``); returns its id."""
    artifact_id = f"dream-report:{report.run_id}"
    frame = pl.DataFrame(
        [
            {
                "id": artifact_id,
                "kind": "dream-report",
                "name": f"Dream report {report.run_id}",
                "content": report.render(),
                "run_id": report.run_id,
                "created_at": utcnow(),
            }
        ]
    )
    with store.mutation(report.run_id, "dream_prune") as m:
        if store.get_row("artifacts", artifact_id) is None:
            m.insert("artifacts", frame, reason="dream report")
        else:
            m.update(
                "artifacts",
                artifact_id,
                {"content": frame["content"][0]},
                action="update",
                reason="dream report (resumed run)",
            )
    return artifact_id


def rows_written(store: Store, run_id: str, phase: str) -> int:
    """Audited changes a run made in one phase (both attempts, for a resumed run)."""
    return audit_count(store, run_id, phase)
