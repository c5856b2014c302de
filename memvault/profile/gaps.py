"""Knowledge gaps (G1–G3): what the owner is missing, recorded and never filled by invention.

Two rules open a gap; the dream's reflect stage reads the recall rule from here
(:func:`recall_gaps`), and both write through :func:`record_gaps` (one row per gap id,
answered gaps recorded as answered), so both paths meet in one row per gap:

* **recall** — the same query signature (intent plus the sorted entity ids)
  failing twice or more (verdict ``INCORRECT``). Once is not a gap.
* **structural** — neighbour-visit bias inside a Leiden community: the owner
  talks often about A (their own turns and recall queries, in distinct
  sessions) but never about B, though B sits next to A (a connected edge) in
  the same community. The graph says B belongs to what the owner works on; the
  owner's attention says it is never visited. This reads the graph's structure,
  not what other people did (no collaborative filtering).

A gap is never filled automatically. It becomes ``answered`` when the data
shows an answer — a later recall of the signature judged ``CORRECT``, or the
owner talking about B — and stays in the table with ``answered_at``. Every
change goes through the audited write path.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.ids import stable_id
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.audit import Mutation
from memvault.store.queries.entities import entity_labels
from memvault.store.queries.profile import (
    community_neighbours,
    gap_of_signature,
    gap_states,
    gaps_recorded,
    open_structural_gaps,
    owner_visits,
    recall_outcomes,
)

#: The owner talks about A "often": in at least this many distinct sessions.
MIN_VISITS = 5
#: Structural gaps opened per run at most (the strongest first).
MAX_STRUCTURAL = 20


def gap_id(kind: str, signature: str) -> str:
    """The id the dream's reflect stage gives the same gap (one row per gap, whoever finds it)."""
    return stable_id("gap", kind, signature)


@dataclass
class GapReport:
    opened: int = 0
    updated: int = 0
    answered: int = 0
    open_by_kind: dict[str, int] = field(default_factory=dict)
    answered_total: int = 0
    candidates: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "rows"}

    def metadata(self) -> dict[str, Any]:
        """The refresh's figures, and the first 20 gaps still open (kind, gap, why)."""
        open_rows = [r for r in self.rows if r["status"] == "open"]
        return {
            "gaps_opened": self.opened,
            "gaps_updated": self.updated,
            "gaps_answered": self.answered,
            "open_recall": self.open_by_kind.get("recall", 0),
            "open_structural": self.open_by_kind.get("structural", 0),
            "answered_total": self.answered_total,
            "open_gaps": [
                {
                    "kind": r["kind"],
                    "gap": r["detail"].get("entity") or r["query_signature"],
                    "why": r["detail"].get("reason", ""),
                }
                for r in open_rows[:20]
            ],
        }


def _recalls(store: Store) -> pl.DataFrame:
    log = recall_outcomes(store)
    if log.is_empty():
        return pl.DataFrame(
            schema={
                "signature": pl.Utf8,
                "intent_label": pl.Utf8,
                "ents": pl.List(pl.Utf8),
                "verdict": pl.Utf8,
                "created_at": pl.Datetime("us"),
            }
        )
    return log.with_columns(
        pl.col("entities").str.json_decode(pl.List(pl.Utf8)).list.sort().alias("ents")
    ).with_columns(
        (pl.col("intent_label").fill_null("-") + "|" + pl.col("ents").list.join(",")).alias(
            "signature"
        )
    )


def recall_gaps(store: Store, min_fails: int = 2) -> list[dict[str, Any]]:
    """Signatures failing ``min_fails`` times or more, each with whether it was answered since."""
    log = _recalls(store)
    fails = (
        log.filter(pl.col("verdict") == "INCORRECT")
        .group_by("signature")
        .agg(
            pl.col("intent_label").first(),
            pl.col("ents").first(),
            pl.len().alias("fail_count"),
            pl.col("created_at").min().alias("first_fail_at"),
            pl.col("created_at").max().alias("last_fail_at"),
        )
        .filter(pl.col("fail_count") >= min_fails)
    )
    correct = log.filter(pl.col("verdict") == "CORRECT").select("signature", "created_at")
    answered = (
        fails.select("signature", "last_fail_at")
        .join(correct, on="signature")
        .filter(pl.col("created_at") > pl.col("last_fail_at"))
        .group_by("signature")
        .agg(pl.col("created_at").min().alias("answered_at"))
    )
    out = fails.join(answered, on="signature", how="left").sort("signature")
    return [
        {
            "signature": r["signature"],
            "kind": "recall",
            "fail_count": int(r["fail_count"]),
            "first_fail_at": r["first_fail_at"],
            "last_fail_at": r["last_fail_at"],
            "answered_at": r["answered_at"],
            "detail": {
                "rule": "recall_failed_twice",
                "intent": r["intent_label"],
                "entities": r["ents"],
                "reason": f"this recall failed {r['fail_count']} times",
            },
        }
        for r in out.iter_rows(named=True)
    ]


def structural_gaps(
    store: Store, *, min_visits: int = MIN_VISITS, limit: int = MAX_STRUCTURAL
) -> tuple[list[dict[str, Any]], set[str]]:
    """Entities next to a much-visited one in its community, never visited by the owner.

    Returns the gaps (strongest first, at most ``limit``) and the entities the owner does
    talk about (a structural gap on one of them is answered)."""
    visits = owner_visits(store)
    visited = {str(k) for k, v in visits.items() if int(v) > 0}
    edges = community_neighbours(store)
    if edges.is_empty():
        return [], visited
    both = pl.concat(
        [
            edges.select(a="source_id", b="target_id", weight="weight", community="community"),
            edges.select(a="target_id", b="source_id", weight="weight", community="community"),
        ]
    )
    frame = both.with_columns(
        a_visits=pl.col("a").replace_strict(visits, default=0, return_dtype=pl.Int64),
        b_visits=pl.col("b").replace_strict(visits, default=0, return_dtype=pl.Int64),
    ).filter((pl.col("a_visits") >= min_visits) & (pl.col("b_visits") == 0))
    if frame.is_empty():
        return [], visited
    names = {i: name for i, (name, _) in entity_labels(store).items()}
    grouped = (
        frame.with_columns(score=pl.col("a_visits") * pl.col("weight"))
        .sort(["score", "a"], descending=[True, False])
        .group_by("b", maintain_order=True)
        .agg(
            pl.col("score").sum(),
            pl.col("community").first(),
            pl.col("a").head(3).alias("next_to"),
            pl.col("a_visits").head(3).alias("next_to_visits"),
        )
        .sort(["score", "b"], descending=[True, False])
        .head(limit)
    )
    gaps = []
    for r in grouped.iter_rows(named=True):
        near = [names.get(a, a) for a in r["next_to"]]
        gaps.append(
            {
                "signature": f"entity:{r['b']}",
                "kind": "structural",
                "fail_count": 0,
                "first_fail_at": None,
                "last_fail_at": None,
                "answered_at": None,
                "detail": {
                    "rule": "neighbour_visit_bias",
                    "entity_id": r["b"],
                    "entity": names.get(r["b"], r["b"]),
                    "community": int(r["community"]),
                    "next_to": near,
                    "next_to_visits": [int(v) for v in r["next_to_visits"]],
                    "score": round(float(r["score"]), 4),
                    "reason": f"you often talk about {', '.join(near)} but never about "
                    f"{names.get(r['b'], r['b'])}, which sits next to them in the same cluster",
                },
            }
        )
    return gaps, visited


@dataclass
class GapWrites:
    """What one :func:`record_gaps` call changed."""

    opened: int = 0
    updated: int = 0
    answered: int = 0


def record_gaps(
    store: Store,
    run_id: str,
    gaps: list[dict[str, Any]],
    *,
    phase: str,
    reason: str,
    answered_ids: Iterable[str] = (),
    into: Mutation | None = None,
) -> GapWrites:
    """The one way a gap is written, whoever found it (the profile's rules, the dream's
    reflection): one row per gap id; a new gap opens (``answered`` already when the data
    answered it), a recall gap's fail count follows the log, an open gap the data now
    answers (``answered_at``, or its id in ``answered_ids``) is marked answered. Nothing is
    filled in. ``gaps`` are dicts as :func:`recall_gaps` returns them; ``into``: a caller's
    open mutation to write in (one transaction with what it writes), else one of our own."""
    now = utcnow()
    existing = {
        r["id"]: r
        for r in gap_states(store, [gap_id(g["kind"], g["signature"]) for g in gaps]).iter_rows(
            named=True
        )
    }
    plan = _plan_gap_writes(gaps, existing, run_id, now)
    for gid in answered_ids:
        plan.answers.setdefault(gid, now)
    with nullcontext(into) if into is not None else store.mutation(run_id, phase) as m:
        return _write_gaps(m, plan, reason)


@dataclass
class _GapPlan:
    """The rows one :func:`record_gaps` call inserts, the fail counts it updates, and the gaps
    it marks answered (id → when)."""

    inserts: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, dt.datetime] = field(default_factory=dict)


def _plan_gap_writes(
    gaps: list[dict[str, Any]],
    existing: dict[str, dict[str, Any]],
    run_id: str,
    now: dt.datetime,
) -> _GapPlan:
    """What to write for ``gaps`` given the rows already recorded (``existing``, by id), before
    anything is written: a gap listed twice opens one row."""
    plan = _GapPlan()
    opening: set[str] = set()
    for gap in gaps:
        gid = gap_id(gap["kind"], gap["signature"])
        old = existing.get(gid)
        if old is None:
            if gid not in opening:
                opening.add(gid)
                plan.inserts.append(_new_gap_row(gap, gid, run_id, now))
            continue
        count = gap["fail_count"]
        if gap["kind"] == "recall" and count and int(old["fail_count"] or 0) != count:
            plan.updates.append(
                {
                    "id": gid,
                    "fail_count": gap["fail_count"],
                    "last_fail_at": gap["last_fail_at"],
                }
            )
        if old["status"] == "open" and gap["answered_at"] is not None:
            plan.answers[gid] = gap["answered_at"]
    return plan


def _new_gap_row(gap: dict[str, Any], gid: str, run_id: str, now: dt.datetime) -> dict[str, Any]:
    """A gap's first row: answered already when the data answered it; a structural gap (no
    failures) dated ``now``; the finding run kept in its detail."""
    return {
        "id": gid,
        "query_signature": gap["signature"],
        "kind": gap["kind"],
        "fail_count": gap["fail_count"],
        "first_fail_at": gap["first_fail_at"] or now,
        "last_fail_at": gap["last_fail_at"] or now,
        "status": "answered" if gap["answered_at"] is not None else "open",
        "answered_at": gap["answered_at"],
        "detail": json.dumps(gap["detail"] | {"run_id": run_id}, sort_keys=True),
    }


def _write_gaps(m: Mutation, plan: _GapPlan, reason: str) -> GapWrites:
    """Write ``plan`` through the audited path (each change with its before-image)."""
    written = GapWrites()
    if plan.inserts:
        frame = pl.DataFrame(
            plan.inserts,
            schema_overrides={
                "first_fail_at": pl.Datetime("us"),
                "last_fail_at": pl.Datetime("us"),
                "answered_at": pl.Datetime("us"),
            },
        )
        written.opened = len(m.insert("knowledge_gap", frame, action="gap-open", reason=reason))
    if plan.updates:
        written.updated = m.update_many(
            "knowledge_gap",
            pl.DataFrame(plan.updates),
            action="update",
            reason="more recall failures",
        )
    if plan.answers:
        written.answered = m.update_many(
            "knowledge_gap",
            pl.DataFrame(
                [
                    {"id": gid, "status": "answered", "answered_at": at}
                    for gid, at in plan.answers.items()
                ],
                schema_overrides={"answered_at": pl.Datetime("us")},
            ),
            action="gap-answered",
            reason="the data now answers it (nothing was filled in)",
        )
    return written


def refresh_gaps(store: Store, run_id: str, *, min_visits: int = MIN_VISITS) -> GapReport:
    """Open new gaps, update fail counts, mark answered the ones the data answers."""
    report = GapReport()
    recall = recall_gaps(store)
    structural, visited = structural_gaps(store, min_visits=min_visits)
    report.candidates = {"recall": len(recall), "structural": len(structural)}
    # An open structural gap whose entity the owner now talks about is answered.
    answered = [
        r["id"]
        for r in open_structural_gaps(store).iter_rows(named=True)
        if (detail := json.loads(r["detail"] or "{}")).get("rule") == "neighbour_visit_bias"
        and detail.get("entity_id") in visited
    ]
    written = record_gaps(
        store,
        run_id,
        recall + structural,
        phase="knowledge_gaps",
        reason="knowledge gaps",
        answered_ids=answered,
    )
    report.opened, report.updated, report.answered = (
        written.opened,
        written.updated,
        written.answered,
    )
    report.rows = list_gaps(store)
    for row in report.rows:
        if row["status"] == "open":
            report.open_by_kind[row["kind"]] = report.open_by_kind.get(row["kind"], 0) + 1
        elif row["status"] == "answered":
            report.answered_total += 1
    return report


def list_gaps(store: Store, status: str | None = None) -> list[dict[str, Any]]:
    """Every gap (or those with ``status``), open first, then by kind and strength."""
    rows = gaps_recorded(store, status)
    out = []
    for row in rows.iter_rows(named=True):
        row["detail"] = json.loads(row["detail"] or "{}")
        out.append(row)
    return out


def gap_for(store: Store, signature: str) -> dict[str, Any] | None:
    """The gap recorded for a query signature (``intent|sorted entity ids``), open or answered:
    what a read path tells the caller who asks about that signature again (nothing is filled
    in; the caller learns that this question failed before)."""
    rows = gap_of_signature(store, signature)
    if rows.is_empty():
        return None
    row = rows.row(0, named=True)
    row["detail"] = json.loads(row["detail"] or "{}")
    return row
