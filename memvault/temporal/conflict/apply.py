"""Writing a conflict plan: audited batches, each its own transaction, safe to resume.

Every action first checks whether its effect is already in the store (a run
resumed after a crash, or a plan applied twice) and is then skipped, so no
change and no audit row is made twice. MERGE keeps one survivor and appends the
merged statement (and everything it had absorbed) to the survivor's
``lineage``; SUPERSEDE dates the old statement and keeps it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from typing import TYPE_CHECKING, Any

import polars as pl

from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.audit import Mutation
from memvault.store.queries.triples import triples_with_object_names
from memvault.temporal.conflict.judge import ConflictStatement, entity_names, merge_refusal
from memvault.temporal.conflict.model import (
    ConflictAction,
    ConflictConfig,
    ConflictPlan,
    proposal_json,
    typed,
)

if TYPE_CHECKING:
    pass

#: The triple columns a conflict action may change.
CHANGED: dict[str, pl.DataType] = {
    "id": pl.Utf8(),
    "object": pl.Utf8(),
    "invalid_at": pl.Datetime("us"),
    "expired_at": pl.Datetime("us"),
    "status": pl.Utf8(),
    "superseded_by": pl.Utf8(),
    "confidence": pl.Float64(),
    "lineage": pl.Utf8(),
    "note": pl.Utf8(),
}
_READ: dict[str, pl.DataType] = {
    **CHANGED,
    "object_id": pl.Utf8(),
    "valid_at": pl.Datetime("us"),
    "created_at": pl.Datetime("us"),
    "source_session": pl.Utf8(),
    "source_block": pl.Utf8(),
}
_LINEAGE_FIELDS = (
    "id",
    "object",
    "object_id",
    "valid_at",
    "invalid_at",
    "created_at",
    "source_session",
    "source_block",
    "confidence",
)


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.datetime) else value


def lineage_entry(row: dict[str, Any]) -> dict[str, Any]:
    """What a merged statement leaves in its survivor's lineage: every detail it carried."""
    return {name: _iso(row.get(name)) for name in _LINEAGE_FIELDS}


def parse_lineage(text: str | None) -> list[dict[str, Any]]:
    if not text:
        return []
    value = json.loads(text)
    return value if isinstance(value, list) else []


#: The order lineage entries are stored in (absent values sort first, as empty text).
_LINEAGE_ORDER = ("valid_at", "created_at", "id", "object")


def canonical_lineages(entries: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Lineage as stored, for many rows at once: each row's entries de-duplicated and in a
    fixed order, so the order of merges does not matter. Each entry is encoded once; the
    de-duplication, ordering and joining run as columns over the whole batch."""
    rows: list[str] = []
    texts: list[str] = []
    keys: dict[str, list[str]] = {k: [] for k in _LINEAGE_ORDER}
    for row_id, row_entries in entries.items():
        for e in row_entries:
            rows.append(row_id)
            texts.append(json.dumps(e, sort_keys=True, ensure_ascii=False))
            for k in _LINEAGE_ORDER:
                keys[k].append(str(e.get(k) or ""))
    if not rows:
        return dict.fromkeys(entries, "[]")
    frame = pl.DataFrame({"row": rows, "text": texts, **keys}, schema_overrides={"row": pl.Utf8})
    joined = (
        frame.unique(subset=["row", "text"], keep="first", maintain_order=True)
        .sort(["row", *_LINEAGE_ORDER], maintain_order=True)
        .group_by("row", maintain_order=True)
        .agg(pl.col("text").str.join(", "))
    )
    out = dict.fromkeys(entries, "[]")
    out.update({row: f"[{text}]" for row, text in joined.iter_rows()})
    return out


def apply_conflict_plan(
    store: Store, plan: ConflictPlan, run_id: str, *, phase: str = "dream_consolidate"
) -> Counter[str]:
    """Write the plan's decisions in audited batches; returns the actions applied, by type.

    A dry-run plan writes nothing (and returns an empty counter). Actions whose
    effect is already present are counted as ``already_applied``.
    """
    applied: Counter[str] = Counter()
    if plan.dry_run or not plan.actions:
        return applied
    size = plan.config.apply_batch_size
    for start in range(0, len(plan.actions), size):
        batch = plan.actions[start : start + size]
        with store.mutation(run_id, phase) as mutation:
            applied.update(_apply_batch(store, mutation, batch, plan, run_id))
    return applied


def apply_actions(store: Store, m: Mutation, actions: list[ConflictAction]) -> Counter[str]:
    """Apply a few decided actions inside an open mutation (a human's review decision)."""
    plan = ConflictPlan(
        actions=actions,
        stats=Counter(),
        judge_kind="human",
        judge_stats={},
        now=utcnow(),
        config=ConflictConfig(),
    )
    return _apply_batch(store, m, actions, plan, m.run_id)


_NAMES: dict[str, pl.DataType] = {"object_name": pl.Utf8(), "object_aliases": pl.Utf8()}


def _read(store: Store, ids: set[str]) -> dict[str, dict[str, Any]]:
    """The triples a batch touches, with their object entity's name and aliases (the merge
    check compares those too)."""
    if not ids:
        return {}
    frame = typed(triples_with_object_names(store, sorted(ids), list(_READ)), {**_READ, **_NAMES})
    return {r["id"]: r for r in frame.iter_rows(named=True)}


def _statement(row: dict[str, Any]) -> ConflictStatement:
    return ConflictStatement(
        triple_id=row["id"],
        object=row["object"],
        object_id=row["object_id"],
        created_at=row["created_at"],
        confidence=row["confidence"],
        status=row["status"],
        object_names=entity_names(row["object_name"], row["object_aliases"]),
    )


class _Batch:
    """The rows one batch touches, changed in memory first and written once at the end."""

    def __init__(self, rows: dict[str, dict[str, Any]], now: dt.datetime) -> None:
        self.before = rows
        self.rows = {k: dict(v) for k, v in rows.items()}
        self.labels: dict[str, tuple[str, str]] = {}
        self.now = now
        self.counts: Counter[str] = Counter()
        # Lineage parsed once per row and canonicalized once when written (a survivor that
        # absorbs many statements would otherwise re-serialize its whole lineage per merge).
        self.lineage: dict[str, list[dict[str, Any]]] = {}

    def lineage_of(self, row_id: str) -> list[dict[str, Any]]:
        if row_id not in self.lineage:
            self.lineage[row_id] = parse_lineage(self.rows[row_id]["lineage"])
        return self.lineage[row_id]

    def label(self, row_id: str, action: str, reason: str, *, weak: bool = False) -> None:
        if weak and row_id in self.labels:
            return
        self.labels[row_id] = (action, reason)

    def merge(self, action: ConflictAction) -> None:
        loser, survivor = self.rows.get(action.target_id), self.rows.get(action.other_id or "")
        if loser is None or survivor is None:
            self.counts["missing"] += 1
            return
        if loser["status"] == "merged" and loser["superseded_by"] == survivor["id"]:
            self.counts["already_applied"] += 1
            return
        if loser["status"] == "merged" or survivor["status"] == "merged":
            self.counts["stale"] += 1  # the store moved on since the plan; the next plan decides
            return
        if merge_refusal(_statement(loser), _statement(survivor)) is not None:
            # The last line of defence: whoever decided it, two different values are never
            # merged (a planned judgment was refused already; this catches anything else).
            self.counts["refused_merges"] += 1
            return
        entries = self.lineage_of(survivor["id"])
        entries += self.lineage_of(loser["id"])
        entries.append(lineage_entry(loser))
        wording = action.merged_object
        if wording and survivor["object_id"] is None and wording != survivor["object"]:
            entries.append(lineage_entry(survivor))  # the survivor's own wording survives too
            survivor["object"] = wording
        survivor["confidence"] = max(survivor["confidence"], loser["confidence"])
        loser.update(
            status="merged",
            superseded_by=survivor["id"],
            expired_at=loser["expired_at"] or self.now,
            note=f"merged into {survivor['id']}: {action.reason}",
        )
        reason = action.audit_reason()
        self.label(loser["id"], "merge", reason)
        self.label(survivor["id"], "absorb", reason, weak=True)
        self.counts["merge"] += 1

    def unmerge(self, action: ConflictAction) -> None:
        """Split a restatement off its survivor: it holds again on its own, and the survivor's
        lineage no longer carries it."""
        row, survivor = self.rows.get(action.target_id), self.rows.get(action.other_id or "")
        if row is None:
            self.counts["missing"] += 1
            return
        if row["status"] != "merged":
            self.counts["already_applied"] += 1
            return
        if survivor is None:
            self.counts["stale"] += 1
            return
        entries = self.lineage_of(survivor["id"])
        entries[:] = [e for e in entries if e.get("id") != row["id"]]
        row.update(
            status="active",
            superseded_by=None,
            expired_at=None,
            note=f"split off {survivor['id']}: {action.reason}",
        )
        reason = action.audit_reason()
        self.label(row["id"], "unmerge", reason)
        self.label(survivor["id"], "release", reason, weak=True)
        self.counts["unmerge"] += 1

    def supersede(self, action: ConflictAction) -> None:
        old = self.rows.get(action.target_id)
        if old is None or action.other_id not in self.rows:
            self.counts["missing"] += 1
            return
        if (
            old["status"] == "superseded"
            and old["invalid_at"] == action.invalid_at
            and old["superseded_by"] == action.other_id
        ):
            self.counts["already_applied"] += 1
            return
        if old["status"] not in ("active", "superseded"):
            self.counts["stale"] += 1
            return
        ends, began = action.invalid_at, old["valid_at"]
        if action.rule is None and ends is not None and began is not None and ends < began:
            # A judged supersede never ends a statement before it began, whoever decided it.
            self.counts["refused_by_definitions"] += 1
            return
        kind = "retime" if old["status"] == "superseded" else "supersede"
        old.update(
            status="superseded",
            invalid_at=action.invalid_at,
            superseded_by=action.other_id,
            expired_at=old["expired_at"] or self.now,
            note=f"superseded by {action.other_id}"
            + (f" from {action.invalid_at:%Y-%m-%d}" if action.invalid_at else "")
            + f": {action.reason}",
        )
        self.label(old["id"], kind, action.audit_reason())
        self.counts[kind] += 1

    def reopen(self, action: ConflictAction) -> None:
        row = self.rows.get(action.target_id)
        if row is None:
            self.counts["missing"] += 1
            return
        if row["status"] != "superseded":
            self.counts["already_applied"] += 1
            return
        row.update(
            status="active",
            invalid_at=None,
            superseded_by=None,
            expired_at=None,
            note=f"reopened: {action.reason}",
        )
        self.label(row["id"], "reopen", action.audit_reason())
        self.counts["reopen"] += 1

    def changes(self) -> pl.DataFrame:
        """The changed rows, each with its audit action and reason (``_action``, ``_reason``)."""
        touched = {r: e for r, e in self.lineage.items() if e or self.rows[r]["lineage"]}
        for row_id, text in canonical_lineages(touched).items():
            self.rows[row_id]["lineage"] = text
        changed: list[dict[str, Any]] = []
        for row_id, (action, reason) in self.labels.items():
            row = self.rows[row_id]
            if any(row[c] != self.before[row_id][c] for c in CHANGED):
                changed.append(
                    {**{c: row[c] for c in CHANGED}, "_action": action, "_reason": reason}
                )
        return pl.DataFrame(changed, schema={**CHANGED, "_action": pl.Utf8(), "_reason": pl.Utf8()})


def _apply_batch(
    store: Store, m: Mutation, batch: list[ConflictAction], plan: ConflictPlan, run_id: str
) -> Counter[str]:
    ids = {a.target_id for a in batch} | {a.other_id for a in batch if a.other_id}
    state = _Batch(_read(store, ids), plan.now)
    verdicts: list[dict[str, Any]] = []
    reviews: list[dict[str, Any]] = []
    for action in batch:
        if action.kind == "merge":
            state.merge(action)
        elif action.kind == "unmerge":
            state.unmerge(action)
        elif action.kind == "supersede":
            state.supersede(action)
        elif action.kind == "reopen":
            state.reopen(action)
        if action.pair_id is None:
            continue
        a, b = action.pair_id.split("|", 1)
        verdicts.append(
            {
                "id": action.pair_id,
                "triple_a": a,
                "triple_b": b,
                "verdict": action.verdict or "UNDECIDED",
                "confidence": action.confidence if action.confidence is not None else 0.0,
                "decided_by": action.decided_by,
                "reason": action.reason,
                "status": "review" if action.kind == "review" else "applied",
                "run_id": run_id,
                "decided_at": plan.now,
            }
        )
        if action.kind == "review":
            reviews.append(
                {
                    "id": f"conflict:{action.pair_id}",
                    "kind": action.review_kind or "conflict",
                    "target_table": "triples",
                    "target_id": action.target_id,
                    "proposal": proposal_json(action),
                    "reason": action.reason,
                    "confidence": action.confidence,
                    "impact_score": action.impact,
                    "impact_inputs": json.dumps(action.impact_inputs, sort_keys=True)
                    if action.impact_inputs
                    else None,
                    "status": "pending",
                    "deadline": plan.now + dt.timedelta(days=plan.config.review_deadline_days),
                    "run_id": run_id,
                    "created_at": plan.now,
                }
            )
    changed = state.changes()
    if changed.height:  # one statement and one audit append for the whole batch
        m.update_many(
            "triples",
            changed.drop("_action", "_reason"),
            action=changed["_action"],
            reason=changed["_reason"],
        )
    counts = state.counts
    if verdicts:
        inserted = set(m.insert("conflict_verdicts", pl.DataFrame(verdicts), action="verdict"))
        for action in batch:
            if action.kind in ("coexist", "review") and action.pair_id:
                counts[action.kind if action.pair_id in inserted else "already_applied"] += 1
    if reviews:
        m.insert(
            "review_queue",
            pl.DataFrame(reviews),
            action="queue",
            reason="unsure verdict: a human decides",
        )
    return counts
