"""What a lint layer re-checks: the rows that changed since the last lint that ran it (an
incremental night), or every row (the first lint, on demand, and once a week).

Each rule of the structure and grounding layers judges a few rows: a fact's shape the fact, its
grounding the fact and the types of its two entities, an orphan or a stale entity the entity
and what refers to it, a reference the row that holds it and the row it names, a loop or a
volatile predicate the facts of one predicate. A row no audited change touched since the layer
last ran cannot have changed its findings, so an incremental lint re-checks what the audit log
names since then, keeps the open findings of everything else, and resolves only findings of
what it re-checked and did not find again. What it cannot see (a row changed behind the store's
back) the whole-store pass sees: it runs when no lint ran the layer over the whole store in the
last ``full_every_days`` days, when the change is most of the store, or when asked (``full``).

The scope is recorded with the layer's figures on the lint's run (``scope``): the audit log's
high-water mark it read up to, which the next lint starts from, and whether it was whole.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.audit import changes_in, latest_audit_id
from memvault.store.queries.lint import (
    blocks_under_as_text,
    edge_ends_as_text,
    facts_at_entities_as_text,
    facts_by_id_as_text,
    mentions_touching_as_text,
)
from memvault.store.queries.runs import last_run_with_stage, succeeded_run_ids_since
from memvault.store.queries.triples import triple_count

#: The tables whose rows the structure and grounding rules judge or follow, and the columns
#: they read where not every change counts: an edge only when it appeared, went or changed
#: status (the graph's nightly refresh rewrites thousands of weights, which change no
#: entity's standing); a block only when it appeared, went, or changed status or what it
#: refers to (tiering rewrites every block's tier and text, which no rule reads).
WATCHED: dict[str, tuple[str, ...] | None] = {
    "triples": None,
    "entities": None,
    "mentions": None,
    "blocks": ("status", "session_id", "parent_id"),
    "edges": ("status",),
    "sessions": None,
}
#: The tables whose before-images the scope reads (what a fact, mention or edge named).
WITH_IMAGES = ("triples", "mentions", "edges")
#: Past this share of the store's facts changed, a whole pass costs no more than the scope.
FULL_WHEN_SHARE = 0.5


@dataclass(frozen=True)
class Changed:
    """What an incremental lint re-checks, by what the rules judge."""

    #: Facts written, and facts of an entity written (its type decides grounding).
    triples: frozenset[str]
    #: Entities written, and entities a written fact, mention or edge names (now or before).
    entities: frozenset[str]
    #: Rows holding a reference (facts, mentions, blocks) written or naming a row written.
    references: frozenset[str]
    #: Predicates of facts written (now or before).
    predicates: frozenset[str]


@dataclass(frozen=True)
class LintScope:
    """The rows a layer reads: ``changed`` (None: every row), up to ``audit_id``."""

    changed: Changed | None
    audit_id: int
    since_audit_id: int | None
    reason: str

    @property
    def full(self) -> bool:
        return self.changed is None

    def figures(self) -> dict[str, Any]:
        """What the lint's run keeps (and the next lint reads)."""
        counts = (
            {}
            if self.changed is None
            else {
                "facts": len(self.changed.triples),
                "entities": len(self.changed.entities),
                "references": len(self.changed.references),
                "predicates": len(self.changed.predicates),
            }
        )
        return {
            "scope": "full" if self.full else "changed",
            "reason": self.reason,
            "audit_id": self.audit_id,
            "since_audit_id": self.since_audit_id,
            **counts,
        }


def _scope_of(run: dict[str, Any] | None, layer: str) -> dict[str, Any]:
    found = (run or {}).get("cursor", {}).get("stages", {}).get(layer, {}).get("scope")
    return found if isinstance(found, dict) else {}


def lint_scope(
    store: Store,
    layer: str,
    *,
    full: bool = False,
    full_every_days: float = 7.0,
    now: dt.datetime | None = None,
    read: Callable[[int, int], Changed] | None = None,
) -> LintScope:
    """The scope of this lint's ``layer`` (``L1`` or ``L2``): what changed since the last
    succeeded lint that ran it, or every row. ``read``: how the changes of an audit range are
    read (:func:`changed_since`)."""
    audit_id = latest_audit_id(store)
    if full:
        return LintScope(None, audit_id, None, "whole-store lint requested")
    last = _scope_of(last_run_with_stage(store, "lint", layer), layer)
    if "audit_id" not in last:
        return LintScope(None, audit_id, None, "no earlier lint recorded what it checked")
    if full_every_days <= 0:
        return LintScope(None, audit_id, None, "every lint checks the whole store")
    cut = (now or utcnow()) - dt.timedelta(days=full_every_days)
    recent = succeeded_run_ids_since(store, "lint", cut)
    if not any(_scope_of(store.run(r), layer).get("scope") == "full" for r in recent):
        return LintScope(
            None, audit_id, None, f"no whole-store lint in the last {full_every_days:g} days"
        )
    lo = int(last["audit_id"])
    changed = (read or (lambda a, b: changed_since(store, a, b)))(lo, audit_id)
    facts = triple_count(store)
    if len(changed.triples) > FULL_WHEN_SHARE * facts:
        share = f"{len(changed.triples):,} of {facts:,} facts changed"
        return LintScope(None, audit_id, lo, f"{share}: the whole store is checked")
    return LintScope(changed, audit_id, lo, "rows changed since the last lint")


class LintScopes:
    """The scopes of one lint's layers on one store. The changes of one audit range are read
    once: the structure and grounding layers of a lint usually start from the same mark."""

    def __init__(
        self,
        store: Store,
        *,
        full: bool = False,
        full_every_days: float = 7.0,
        now: dt.datetime | None = None,
    ) -> None:
        self.store, self.full, self.full_every_days, self.now = store, full, full_every_days, now
        self._read: dict[tuple[int, int], Changed] = {}

    def of(self, layer: str) -> LintScope:
        return lint_scope(
            self.store,
            layer,
            full=self.full,
            full_every_days=self.full_every_days,
            now=self.now,
            read=self._changed,
        )

    def _changed(self, lo: int, hi: int) -> Changed:
        if (lo, hi) not in self._read:
            self._read = {(lo, hi): changed_since(self.store, lo, hi)}  # keep the latest only
        return self._read[(lo, hi)]


def _ids(frame: pl.DataFrame, *columns: str) -> set[str]:
    return {str(v) for c in columns for v in frame[c].to_list() if v is not None}


def changed_since(store: Store, lo: int, hi: int) -> Changed:
    """What the audit log names in ``(lo, hi]``, widened to what the rules judge with it."""
    audit = changes_in(store, lo, hi, WATCHED, WITH_IMAGES)
    if audit.is_empty():
        return Changed(frozenset(), frozenset(), frozenset(), frozenset())
    audit = audit.cast({c: pl.Utf8 for c in audit.columns})
    written = {
        table: set(audit.filter(pl.col("target_table") == table)["target_id"].to_list())
        for table in WATCHED
    }
    before = audit.filter(pl.col("before_image").is_not_null())

    def was(table: str, *fields: str) -> set[str]:
        """The values ``fields`` held before this range's changes of ``table``'s rows."""
        images = before.filter(pl.col("target_table") == table)["before_image"]
        return {
            str(v)
            for f in fields
            for v in images.str.json_path_match(f"$.{f}").to_list()
            if v is not None
        }

    facts = facts_by_id_as_text(store, written["triples"])
    of_entities = facts_at_entities_as_text(store, written["entities"])
    mentions = mentions_touching_as_text(
        store, written["mentions"] | written["entities"] | written["blocks"]
    )
    edges = edge_ends_as_text(store, written["edges"])
    blocks = blocks_under_as_text(store, written["sessions"] | written["blocks"])
    entities = written["entities"] | was("triples", "subject_id", "object_id")
    entities |= was("mentions", "entity_id") | was("edges", "source_id", "target_id")
    if facts.height:
        entities |= _ids(facts, "subject_id", "object_id")
    if mentions.height:
        entities |= _ids(mentions, "entity_id")
    if edges.height:
        entities |= _ids(edges, "source_id", "target_id")
    triples = written["triples"] | (_ids(of_entities, "id") if of_entities.height else set())
    predicates = was("triples", "predicate") | (_ids(facts, "predicate") if facts.height else set())
    references = triples | written["mentions"] | written["blocks"]
    references |= (_ids(mentions, "id") if mentions.height else set()) | (
        _ids(blocks, "id") if blocks.height else set()
    )
    return Changed(
        frozenset(triples), frozenset(entities), frozenset(references), frozenset(predicates)
    )
