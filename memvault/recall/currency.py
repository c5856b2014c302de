"""Currency: does a block state a fact that still holds, or one that was superseded since?

A block is linked to the facts it states by ``triples.source_block``. For a query, the facts
that count are those of the predicates its intent asks for (``works_at`` for an employer
question), or every fact the block states when the query has no intent:

* a block **states a current fact** when it is the source of a current fact (not expired,
  not invalidated, active) of a named entity that the intent asks for, or, when no fact is
  linked to it, its text holds the object of such a fact ("… joined Tyrell Systems");
* a block is **stale** when every fact that counts it is the source of has been superseded
  (``invalid_at`` or ``expired_at`` set, by a newer statement), or, when no fact that counts
  is linked to it, its text holds the object of a superseded fact of a named entity the
  intent asks for and of no current one. It is marked ``superseded_since``: the date its
  last such fact stopped holding.

Recall ranks with it (a stale block's score is multiplied by ``STALE_FACTOR``, a block that
states a current fact gets ``CURRENT_FACT_WEIGHT`` added), and a prefetched ranking records
the state of every fact it rests on (:meth:`Currency.basis`): when one of them changes, or a
new fact of the same entity and predicate is recorded, the entry is not served.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import ahocorasick

from memvault.store import Store
from memvault.store.queries.audit import last_audit_id
from memvault.store.queries.triples import (
    facts_from_blocks,
    facts_of_subjects,
    facts_with_source_block,
    triples_by_id,
)

#: A stale block's score is multiplied by this (it still shows, below what holds now).
STALE_FACTOR = 0.5
#: Added to the score of a block that states a current fact the query's intent asks for (the
#: owner's employer now, not the one of last spring).
CURRENT_FACT_WEIGHT = 0.3
#: An object shorter than this is not looked for in a block's text (too many false matches).
MIN_OBJECT_CHARS = 3

#: The predicates whose facts answer an intent, in the order they are listed.
INTENT_PREDICATES: dict[str, tuple[str, ...]] = {
    "employer_lookup": ("works_at", "has_role"),
    "location_lookup": ("lives_in", "located_in"),
    "project_status": ("project_status", "depends_on"),
    "person_lookup": ("has_role", "works_at", "lives_in", "knows"),
    "dependency_lookup": ("depends_on",),
    "preference_lookup": ("prefers", "interested_in"),
    "howto": ("depends_on", "uses_tool"),
    "tool_usage": ("uses_tool",),
    "concept_lookup": ("related_to",),
}

FACT_COLUMNS = "id, subject_id, predicate, object, object_id, source_block, status, invalid_at, expired_at, superseded_by"  # fmt: skip

CURRENT = "current"


#: How many merges deep a merged fact's survivor is followed.
MAX_MERGE_HOPS = 5


def state_of(row: dict[str, Any]) -> str:
    """``current``, ``superseded:<ISO date>`` or the triple's status (archived, …); a merged
    fact (a restatement folded into another) is in the state of the fact it was merged into."""
    row = row.get("survivor") or row
    since = row["invalid_at"] or row["expired_at"]
    if since is not None:
        return f"superseded:{since.isoformat()}"
    if row["status"] == "active":
        return CURRENT
    return str(row["status"])


def _since(state: str) -> dt.datetime | None:
    if not state.startswith("superseded:"):
        return None
    return dt.datetime.fromisoformat(state.split(":", 1)[1])


#: Where a text's sentences end.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def _in_text(folded: str, obj: str) -> bool:
    return len(obj) >= MIN_OBJECT_CHARS and obj.casefold() in folded


class _ObjectFinder:
    """Which of many fact objects a (case-folded) text holds, as :func:`_in_text` reads it.

    The owner can have ten thousand current facts of one predicate, many of whose objects
    begin alike; testing each object against each candidate block cost seconds a recall. The
    objects (case folded, once each) go into one Aho-Corasick automaton, which finds every one
    a text holds in a single pass over the text."""

    def __init__(self, objects: Iterable[str]) -> None:
        self.automaton: ahocorasick.Automaton | None = None
        kept = dict.fromkeys(o.casefold() for o in objects if len(o) >= MIN_OBJECT_CHARS)
        if kept:
            self.automaton = ahocorasick.Automaton()
            for obj in kept:
                self.automaton.add_word(obj, obj)
            self.automaton.make_automaton()

    def found(self, folded: str) -> list[str]:
        """The folded objects that ``folded`` holds."""
        if self.automaton is None:
            return []
        return list(dict.fromkeys(obj for _, obj in self.automaton.iter(folded)))


def _follow_merges(store: Store, rows: list[dict[str, Any]]) -> None:
    """Give each merged fact its ``survivor``: the row of the fact it was (finally) merged into."""
    merged = [r for r in rows if r["status"] == "merged" and r["superseded_by"]]
    known: dict[str, dict[str, Any]] = {str(r["id"]): r for r in rows}
    for _ in range(MAX_MERGE_HOPS):
        wanted = sorted({str(r["superseded_by"]) for r in known.values()
                         if r["status"] == "merged" and r["superseded_by"]} - known.keys())  # fmt: skip
        if not wanted:
            break
        for row in triples_by_id(store, wanted, FACT_COLUMNS).to_dicts():
            known[str(row["id"])] = row
    for row in merged:
        survivor, hops = row, 0
        while (
            survivor["status"] == "merged" and survivor["superseded_by"] and hops < MAX_MERGE_HOPS
        ):
            nxt = known.get(str(survivor["superseded_by"]))
            if nxt is None:
                break
            survivor, hops = nxt, hops + 1
        if survivor is not row:
            row["survivor"] = survivor


@dataclass
class Currency:
    """The facts a ranking looks at: those of the named entities the intent asks for, and
    those the candidate blocks state."""

    asked: tuple[str, ...]
    entity_ids: list[str]
    #: Every fact (current or not) of the named entities that the intent asks for.
    entity_facts: list[dict[str, Any]] = field(default_factory=list)
    #: Block id → the facts that count that it is the source of.
    stated: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: The blocks whose stated facts were read (a block without any is in here too).
    looked_at: set[str] = field(default_factory=set)
    #: Where the facts a block states are read from: the process's copy (see
    #: :class:`StatedFacts`), else the store.
    reader: StatedFacts | None = None

    @classmethod
    def load(
        cls, store: Store, entity_ids: list[str], intent: str | None, block_ids: Sequence[str] = ()
    ) -> Currency:
        """The named entities' facts of the intent's predicates, and what ``block_ids`` state."""
        cur = cls(INTENT_PREDICATES.get(intent or "", ()), list(entity_ids))
        if cur.asked and cur.entity_ids:
            cur.entity_facts = facts_of_subjects(
                store, cur.entity_ids, list(cur.asked), FACT_COLUMNS
            ).to_dicts()
            _follow_merges(store, cur.entity_facts)
        cur.add_blocks(store, list(block_ids))
        return cur

    def add_blocks(self, store: Store, block_ids: Sequence[str]) -> None:
        """Read the facts that count that ``block_ids`` (not read yet) are the source of."""
        new = sorted(set(block_ids) - self.looked_at)
        if not new:
            return
        self.looked_at.update(new)
        if self.reader is not None:
            rows = self.reader.of(new, self.asked)
        else:
            rows = facts_from_blocks(store, new, FACT_COLUMNS, self.asked).to_dicts()
        _follow_merges(store, rows)
        for row in rows:
            self.stated.setdefault(str(row["source_block"]), []).append(row)

    def fresh(self) -> Currency:
        """A copy sharing the named entities' facts (and what is derived from them), with no
        block read yet: what :class:`FactsCache` hands to each recall."""
        out = copy.copy(self)
        out.stated, out.looked_at = {}, set()
        return out

    def warm(self) -> Currency:
        """Derive once what every recall tests candidate blocks against (kept in the cache)."""
        for name in (
            "_current_sources",
            "_current_objects",
            "_all_objects",
            "_states_by_object",
            "sources_of_current",
            "current_objects",
            "_entity_basis",
        ):
            getattr(self, name)
        return self

    # -- what the named entities' facts say ---------------------------------------------------

    # Read once per recall (``entity_facts`` is set when the currency is made, never after):
    # every candidate block is tested against them.

    @cached_property
    def _states(self) -> list[str]:
        return [state_of(f) for f in self.entity_facts]

    @cached_property
    def current_facts(self) -> list[dict[str, Any]]:
        """The named entities' current facts asked for (restatements merged into one too)."""
        return [f for f, s in zip(self.entity_facts, self._states, strict=True) if s == CURRENT]

    @cached_property
    def _current_sources(self) -> set[Any]:
        return {f["source_block"] for f in self.current_facts}

    @cached_property
    def _current_objects(self) -> _ObjectFinder:
        return _ObjectFinder(str(f["object"]) for f in self.current_facts)

    @cached_property
    def _all_objects(self) -> _ObjectFinder:
        return _ObjectFinder(str(f["object"]) for f in self.entity_facts)

    @cached_property
    def _states_by_object(self) -> dict[str, list[str]]:
        """Folded object → the states of the named entities' facts with that object."""
        out: dict[str, list[str]] = {}
        for fact, state in zip(self.entity_facts, self._states, strict=True):
            obj = str(fact["object"])
            if len(obj) >= MIN_OBJECT_CHARS:
                out.setdefault(obj.casefold(), []).append(state)
        return out

    @cached_property
    def sources_of_current(self) -> list[str]:
        """The blocks a current fact asked for was read from (searched even when the words
        of the query miss them)."""
        return sorted({str(f["source_block"]) for f in self.current_facts if f["source_block"]})

    @cached_property
    def current_objects(self) -> list[str]:
        """The entities that are objects of current facts asked for (their blocks are looked at
        too: a block may state the fact without a linked triple)."""
        return sorted({str(f["object_id"]) for f in self.current_facts if f["object_id"]})

    # -- one block ----------------------------------------------------------------------------

    def is_current_source(self, block_id: str) -> bool:
        """The block is the source of a current fact asked for (it states it, whatever its
        text)."""
        return block_id in self._current_sources

    def states_current(self, block_id: str, text: str) -> bool:
        """The block is the source of a current fact asked for, or (no fact that counts linked
        to it) its text holds the object of one."""
        if block_id in self._current_sources:
            return True
        if self.stated.get(block_id) or not self.current_facts:
            return False
        return bool(self._current_objects.found(text.casefold()))

    def answers(self, block_id: str, text: str, subject_words: Collection[str]) -> bool:
        """The block says a current fact asked for: it is its source, or (no fact that counts
        linked to it) one of its sentences names the subject (``subject_words``: the words of
        its names, lower case) and the fact's object. Stricter than :meth:`states_current`:
        "the invoice goes to Tyrell Systems" in a long note does not say where Ada works."""
        if block_id in self._current_sources:
            return True
        if self.stated.get(block_id) or not subject_words or not self.current_facts:
            return False
        # An object a sentence holds is one the whole text holds: look in the text once.
        objects = self._current_objects.found(text.casefold())
        if not objects:
            return False
        for sentence in _SENTENCE_END.split(text):
            folded = sentence.casefold()
            if any(obj in folded for obj in objects) and any(
                re.search(rf"\b{re.escape(w)}\b", folded) for w in subject_words
            ):
                return True
        return False

    def superseded_since(self, block_id: str, text: str) -> dt.datetime | None:
        """When the last fact that counts the block states stopped holding, if all of them did
        and it states no current one (else None)."""
        if self.states_current(block_id, text):
            return None
        stated = self.stated.get(block_id)
        if stated:
            states = [state_of(f) for f in stated]
        else:  # no linked fact: the named entities' superseded facts its text holds
            found = self._all_objects.found(text.casefold())
            states = [s for obj in found for s in self._states_by_object[obj]]
        dates = [_since(s) for s in states]
        if not dates or any(d is None for d in dates):
            return None
        return max(d for d in dates if d is not None)

    # -- what a ranking rests on --------------------------------------------------------------

    def basis(self, block_ids: list[str]) -> dict[str, str]:
        """Triple id → state of every fact the ranking of ``block_ids`` rests on: the named
        entities' facts the intent asks for and those the blocks state."""
        extra = {str(f["id"]): state_of(f) for b in block_ids for f in self.stated.get(b, [])}
        base = self._entity_basis
        if all(base.get(k) == v for k, v in extra.items()):
            return dict(base)
        return dict(sorted((base | extra).items()))

    @cached_property
    def _entity_basis(self) -> dict[str, str]:
        """The named entities' facts asked for and their states, by triple id."""
        found = {str(f["id"]): s for f, s in zip(self.entity_facts, self._states, strict=True)}
        return dict(sorted(found.items()))


class StatedFacts:
    """Every fact with the block it was read from, kept by a long-lived process.

    A ranking asks, for each of its few dozen candidates, which facts the block states; on a
    store of a hundred thousand blocks that query scans the facts (about 20 ms a recall). The
    facts change only when a fact is written, which :class:`FactsCache` notices: so they are
    read once, in id order, and looked up by block."""

    def __init__(self, store: Store) -> None:
        self.frame = facts_with_source_block(store, FACT_COLUMNS)
        self.rows: dict[str, list[int]] = {}
        if self.frame.height:
            for at, block in enumerate(self.frame["source_block"].to_list()):
                self.rows.setdefault(str(block), []).append(at)

    def of(
        self, block_ids: Iterable[str], predicates: Collection[str] = ()
    ) -> list[dict[str, Any]]:
        """The facts ``block_ids`` are the source of, in id order (only ``predicates``' when
        given), as the query reads them."""
        at = sorted(i for b in block_ids for i in self.rows.get(b, ()))
        if not at:
            return []
        found = self.frame[at].to_dicts()
        return [r for r in found if r["predicate"] in predicates] if predicates else found


class FactsCache:
    """The named entities' facts of a long-lived process, read again only when a fact changed.

    The owner can have tens of thousands of facts: reading them cost tens of milliseconds a
    recall. One cheap query (the last audited write to ``triples``) tells whether any changed
    since they were read; if one did, everything cached is dropped."""

    def __init__(self) -> None:
        self.mark: Any = object()
        self.entries: dict[tuple[Any, ...], Any] = {}
        self._stated: StatedFacts | None = None

    def check(self, store: Store) -> None:
        """Drop what was read when a fact was written since."""
        # Changes whenever a fact is written: every write to triples (undo included) is audited,
        # and audit rows are never deleted, so only those after the mark need reading.
        known = self.mark if isinstance(self.mark, int) else None
        mark = last_audit_id(store, "triples", after=known)
        if known is not None and mark is None:
            return
        if mark != self.mark:
            self.entries.clear()
            self._stated = None
            self.mark = mark

    def stated(self, store: Store) -> StatedFacts:
        """Every fact by the block it was read from (read once per version of the facts)."""
        if self._stated is None:
            self._stated = StatedFacts(store)
        return self._stated

    def currency(
        self, store: Store, entity_ids: list[str], intent: str | None, block_ids: Sequence[str] = ()
    ) -> Currency:
        """:meth:`Currency.load`, the named entities' facts read once (call :meth:`check` first)."""
        key = ("currency", tuple(entity_ids), INTENT_PREDICATES.get(intent or "", ()))
        if (template := self.entries.get(key)) is None:
            template = self.entries[key] = Currency.load(store, entity_ids, intent).warm()
        cur: Currency = template.fresh()
        cur.reader = self.stated(store)
        cur.add_blocks(store, list(block_ids))
        return cur
