"""Lint findings: what a layer found, kept in ``lint_findings`` until it is gone."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, Field

from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.lint import (
    open_finding_counts,
    open_findings_of_rules,
    reopen_findings,
    resolve_findings,
)

Severity = Literal["error", "warning", "info"]


class Finding(BaseModel):
    """One thing a lint layer found."""

    layer: Literal["L1", "L2", "L3", "L4"]
    rule: str = Field(description="The rule that found it, e.g. cycle, dangling_reference")
    subject: str | None = Field(default=None, description="What it is about (an id)")
    evidence: dict[str, Any] = Field(default_factory=dict)
    severity: Severity = "warning"

    @property
    def id(self) -> str:
        key = json.dumps(
            [self.layer, self.rule, self.subject, self.evidence], sort_keys=True, default=str
        )
        return f"lint:{self.layer}:{hashlib.sha1(key.encode()).hexdigest()[:16]}"


@dataclass
class LintReport:
    """What one layer did: its findings, counted, and what it proposed or asked."""

    layer: str
    findings: list[Finding] = field(default_factory=list)
    new: int = 0
    resolved: int = 0
    proposed: int = 0
    auto_applied: int = 0
    queued: int = 0
    notes: list[str] = field(default_factory=list)
    #: Proposals the data check refused, by counter (L4: invalid_verdicts, refused_merges, ...).
    refused: dict[str, int] = field(default_factory=dict)
    #: An incremental lint's keys re-checked per rule (see :func:`scope_key`; a rule mapped to
    #: None re-checked everything); None: every rule of the layer looked at everything.
    checked: dict[str, frozenset[str] | None] | None = None

    def by_rule(self) -> dict[str, int]:
        return dict(sorted(Counter(f.rule for f in self.findings).items()))

    def by_severity(self) -> dict[str, int]:
        return dict(Counter(f.severity for f in self.findings))

    def metadata(self, sample: int = 20) -> dict[str, Any]:
        """What an orchestrator shows for the layer: flat counts, then the findings by rule and
        a sample of them (as records)."""
        return {
            "findings": len(self.findings),
            "new_findings": self.new,
            "resolved_findings": self.resolved,
            **{f"severity_{k}": v for k, v in sorted(self.by_severity().items())},
            "by_rule": [{"rule": rule, "findings": n} for rule, n in self.by_rule().items()],
            "sample": [
                {
                    "rule": f.rule,
                    "subject": f.subject or "",
                    "severity": f.severity,
                    "evidence": ", ".join(f"{k}={v}" for k, v in f.evidence.items()),
                }
                for f in self.findings[:sample]
            ],
        }


#: Rules whose findings are re-checked by an evidence field, not by their subject (a loop is
#: found again by reading its predicate's facts, whichever entity names it).
KEYED_BY_EVIDENCE = {"cycle": "predicate"}


def scope_key(rule: str, subject: str | None, evidence: str | None) -> str | None:
    """What an incremental lint must have re-checked to resolve a stored finding of ``rule``
    (``evidence`` as stored: JSON text)."""
    field_ = KEYED_BY_EVIDENCE.get(rule)
    return subject if field_ is None else str(json.loads(evidence or "{}").get(field_))


def _rechecked(
    checked: Mapping[str, Collection[str] | None] | None,
    rule: str,
    subject: str | None,
    evidence: str | None,
) -> bool:
    """Whether this lint re-checked what a stored open finding is about."""
    if checked is None:
        return True
    if rule not in checked:
        return False
    keys = checked[rule]
    return keys is None or scope_key(rule, subject, evidence) in keys


def record_findings(
    store: Store,
    layer: str,
    findings: Sequence[Finding],
    run_id: str,
    *,
    rules: Sequence[str],
    checked: Mapping[str, Collection[str] | None] | None = None,
) -> tuple[int, int]:
    """Keep this run's findings of ``layer``: new ones are added, open ones of the same
    ``rules`` not found again are resolved. Returns (new, resolved).

    ``checked`` (an incremental lint): the keys each rule re-checked (:func:`scope_key`; None:
    all of them); an open finding is resolved only when its rule re-checked its key, the
    others (and those of a rule not in ``checked``) are kept.

    Findings are derived data (the lint reads the store, it does not change memories), so
    they are written directly, not through the audited path.
    """
    now = utcnow()
    frame = pl.DataFrame(
        [
            {
                "id": f.id,
                "layer": f.layer,
                "rule": f.rule,
                "subject": f.subject,
                "evidence": json.dumps(f.evidence, sort_keys=True, default=str),
                "severity": f.severity,
                "status": "open",
                "run_id": run_id,
                "found_at": now,
            }
            for f in findings
        ],
        schema={
            "id": pl.Utf8,
            "layer": pl.Utf8,
            "rule": pl.Utf8,
            "subject": pl.Utf8,
            "evidence": pl.Utf8,
            "severity": pl.Utf8,
            "status": pl.Utf8,
            "run_id": pl.Utf8,
            "found_at": pl.Datetime("us"),
        },
    ).unique("id", keep="first")
    with store.transaction():
        open_rows = open_findings_of_rules(store, layer, rules)
        open_ids = {r[0] for r in open_rows if _rechecked(checked, r[1], r[2], r[3])}
        seen = set(frame["id"].to_list())
        gone = sorted(open_ids - seen)
        if gone:
            resolve_findings(store, gone, now)
        if frame.height:
            reopen_findings(store, sorted(seen), run_id)
        inserted = store.backend.insert_df("lint_findings", frame)
    return len(inserted), len(gone)


def open_findings(store: Store, layer: str | None = None) -> dict[str, int]:
    """Open findings per rule (of one layer, or all): what the last lint left unresolved."""
    return open_finding_counts(store, layer)
