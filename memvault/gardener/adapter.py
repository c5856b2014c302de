"""The store adapter protocol: what the gardener needs from any memory store.

The gardener is storage-agnostic. A store is reached through a
:class:`GardenStore` adapter that (1) lists its *tools* (name, description,
input schema — for an MCP server these are its real tools, for memvault's own
store a synthetic list), (2) is *bound* to the capabilities the survey
(:mod:`memvault.gardener.capabilities`) mapped those tools to, and (3)
implements one typed method per capability. A phase calls a method only when
its capability is present; a method whose capability is missing raises
:class:`CapabilityMissing` and never fakes it (GD-S5: never delete and
re-create to simulate an update).

Every mutating method takes a :class:`WriteContext` (run id, phase, reason)
and returns a :class:`Change` describing what it did, with before- and
after-images. ``Change.audited`` is True when the store itself wrote the audit
row (memvault's store does, through ``store.mutation``); otherwise the ceremony
records the change in the ledger's ``audit_log``. So every change is audited
exactly once and the report can prove it by counting.

Contract for all adapters:

* Prefer retiring to deleting: archive / invalidate / expire where the store
  can; where it cannot, the capability is simply absent. ``delete_item`` is
  the one exception, offered only where the store can remove exactly one item
  (one copy of a repeated text), and called only for a lossless merge in
  autonomous mode after the run's snapshot.
* Reads are side-effect free (no access counters bumped by the gardener).
* Ids are strings and stable across calls within one run.
* Times are naive UTC ``datetime`` (or None when the store has no times).

Two methods are optional, looked up by name where a store can answer them:
``kept_by_use(ids, now)`` (of ``ids``, the items whose use says they are wanted again;
decay leaves them) and ``about(ids, limit)`` (what items are about, as (name, count),
most telling first; the journal names topics by it, else by the items' tags or words).

Adapters subclass :class:`UnsupportedMixin` (bodies that raise
``CapabilityMissing``) and override what their store can do. They are opened
by URL in :func:`memvault.gardener.adapters.open_garden_store`; an adapter
module for MCP stores exposes ``open_mcp_store(command: list[str], **options)
-> GardenStore``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from memvault.errors import MemvaultError


class Capability(StrEnum):
    """What a store can do, named by intent (GD0), never by a tool's name."""

    SEARCH = "search"  # find / list stored memories (by text, similarity, tag, recency)
    CREATE = "create"  # write a new memory item
    MUTATE = "mutate"  # update a memory item in place (text, importance, tags, parent)
    ARCHIVE = "archive"  # retire an item without destroying it (status archived)
    EXPIRE = "expire"  # set an expiry date on an item
    DUPLICATE_CHECK = "duplicate_check"  # near-duplicates of items, scored
    KG_ADD = "kg_add"  # add a fact / relation
    KG_SEARCH = "kg_search"  # query facts / relations
    KG_INVALIDATE = "kg_invalidate"  # retire a fact as superseded (timeline kept)
    KG_TIMELINE = "kg_timeline"  # history of a subject + predicate, retired facts included
    STRUCTURE = "structure"  # containers, links, orphans, reconnect
    JOURNAL = "journal"  # dated free-text diary entries
    STATS = "stats"  # counts of items, facts, ...
    BACKUP = "backup"  # a restorable snapshot of the whole store
    ARTIFACT = "artifact"  # persist and read back a text document (the report)
    TIMESTAMPS = "timestamps"  # records carry times (created / updated): windows and staleness
    DELETE = "delete"  # remove an item for good: only a lossless merge in autonomous mode


ALL_CAPABILITIES: tuple[Capability, ...] = tuple(Capability)
#: Capabilities whose absence the report names. A delete is a last resort the gardener
#: never needs (it prefers archive and expiry), so a store without one misses nothing.
WANTED: tuple[Capability, ...] = tuple(c for c in Capability if c is not Capability.DELETE)

#: Tag of the gardener's own summary item in a store without a journal (GD6).
GARDEN_SUMMARY_TAG = "garden-summary"


class CapabilityMissing(MemvaultError):
    """A phase asked for a capability the survey did not find in the store."""

    def __init__(self, store: str, capability: Capability | str) -> None:
        self.store = store
        self.capability = Capability(capability)
        super().__init__(f"store {store} has no {self.capability.value} capability")


# --------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class ToolInfo:
    """One tool a store offers, as it describes itself (MCP ``tools/list`` shape)."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)

    def parameter_names(self) -> tuple[str, ...]:
        """Top-level parameter names of the input schema (``properties`` keys)."""
        props = self.input_schema.get("properties") if self.input_schema else None
        return tuple(props) if isinstance(props, Mapping) else ()


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class MemoryItem:
    """One memory item of a store.

    ``scores`` holds the numeric fields the merge rules combine, by name
    (e.g. ``importance``, ``confidence``, ``access_count``, ``emotion``; see
    :mod:`memvault.gardener.phases.dedup`). ``container`` is the item's
    session / collection / entity, ``extra`` anything store-specific the
    adapter wants back later (the gardener passes it through untouched).
    """

    id: str
    text: str
    kind: str = "memory"
    importance: float | None = None
    pinned: bool = False  # pinned / protected: never decayed, never merged away
    tags: tuple[str, ...] = ()
    status: str = "active"
    parent_id: str | None = None
    container: str | None = None
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None
    last_touched_at: dt.datetime | None = None  # latest of updated / accessed / mentioned
    expires_at: dt.datetime | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def chars(self) -> int:
        return len(self.text)


@dataclass(frozen=True)
class ItemQuery:
    """Which items to list; adapters that cannot filter natively use :func:`apply_item_query`.

    ``order``: ``oldest`` / ``newest`` by ``updated_at`` (then id), ``stalest``
    by ``last_touched_at`` ascending, ``longest`` by text length descending.
    ``after`` is a keyset cursor: the id of the last item a previous page or
    run already processed in this order (items up to and including it are
    skipped; adapters may ignore it when their order is not stable).
    """

    changed_since: dt.datetime | None = None  # updated_at (or created_at) >= this
    changed_before: dt.datetime | None = None  # updated_at (or created_at) < this
    untouched_before: dt.datetime | None = None  # last_touched_at < this
    min_chars: int | None = None
    #: Only items with something left to decay: importance above this floor, or no expiry yet.
    decay_floor: float | None = None
    include_pinned: bool = True
    status: str | None = "active"  # None: any status
    order: Literal["oldest", "newest", "stalest", "longest"] = "oldest"
    after: str | None = None
    limit: int = 200


@dataclass(frozen=True)
class ItemChanges:
    """Fields to change in place; None means "leave as is"."""

    text: str | None = None
    importance: float | None = None
    tags: tuple[str, ...] | None = None
    parent_id: str | None = None
    scores: Mapping[str, float] | None = None  # merged numeric fields (only those the store has)


@dataclass(frozen=True)
class NewItem:
    """A memory item to create (split children, the garden-summary item)."""

    text: str
    kind: str = "memory"
    importance: float | None = None
    tags: tuple[str, ...] = ()
    parent_id: str | None = None
    container: str | None = None  # session / collection / entity to put it in
    id: str | None = None  # a deterministic id the gardener chose, if the store accepts one


@dataclass(frozen=True)
class DuplicatePair:
    """Two items whose similarity is at least the asked threshold (``a_id`` < ``b_id``)."""

    a_id: str
    b_id: str
    similarity: float


@dataclass(frozen=True)
class Fact:
    """One knowledge-graph assertion. ``subject`` / ``object`` are ids where the store has
    them (``*_label`` the readable names); bi-temporal fields are None when unknown."""

    id: str
    subject: str
    predicate: str
    object: str
    subject_label: str | None = None
    object_label: str | None = None
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    created_at: dt.datetime | None = None
    expired_at: dt.datetime | None = None
    status: str = "active"
    confidence: float | None = None
    superseded_by: str | None = None
    source: str | None = None  # the item / session it came from

    @property
    def active(self) -> bool:
        return self.status == "active" and self.invalid_at is None and self.expired_at is None


@dataclass(frozen=True)
class FactQuery:
    """Which facts to list (``kg_search``)."""

    subject: str | None = None
    predicate: str | None = None
    changed_since: dt.datetime | None = None  # created_at >= this
    active_only: bool = True
    newest_first: bool = False  # True: newest created first (a first run's recent window)
    limit: int = 1000


@dataclass(frozen=True)
class NewFact:
    """A fact to add (a correction when the store cannot invalidate)."""

    subject: str
    predicate: str
    object: str
    valid_at: dt.datetime | None = None
    confidence: float | None = None
    source: str | None = None


@dataclass(frozen=True)
class OrphanNode:
    """A node with no links, or in an obviously wrong container (``problem`` says which)."""

    id: str
    label: str
    node_kind: str  # "item", "entity", ...
    problem: str


@dataclass(frozen=True)
class LinkCandidate:
    """A link that would reconnect an orphan, with the evidence for it."""

    target_id: str
    relation: str  # "parent", "mention", "session", a relation type ...
    evidence: str


@dataclass(frozen=True)
class JournalEntry:
    id: str
    text: str
    created_at: dt.datetime | None = None


@dataclass(frozen=True)
class Artifact:
    id: str
    kind: str
    name: str
    content: str
    created_at: dt.datetime | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class BackupRef:
    """Where a snapshot went and how to restore it (a human-readable hint)."""

    location: str
    detail: str = ""
    created_at: dt.datetime | None = None


@dataclass(frozen=True)
class WriteContext:
    """Who is writing: the garden run, its phase, and why (goes into the audit row)."""

    run_id: str
    phase: str
    reason: str = ""
    #: The verb for the audit row and the ``Change`` (empty: the method's default verb).
    action: str = ""


@dataclass(frozen=True)
class Change:
    """One mutation an adapter made.

    ``action`` is the gardener's verb (``merge-update``, ``archive``, ``decay``,
    ``expire``, ``split-trim``, ``split-child``, ``invalidate``, ``add-fact``,
    ``reconnect``, ``journal``, ``report``, ...); ``target_kind`` the store's
    table or object kind; ``audited`` True when the store already wrote the
    audit row for it (else the ceremony records it).
    """

    action: str
    target_kind: str
    target_id: str
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    audited: bool = False


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class GardenStore(Protocol):
    """A memory store the gardener can tend. See the module docstring for the contract."""

    #: A short label for reports and run state, e.g. ``memvault:duckdb:/path`` or ``mcp:memory``.
    name: str

    def tools(self) -> list[ToolInfo]:
        """Every tool the store offers (name, description, input schema); no side effects."""
        ...

    def bind(self, mapping: Mapping[Capability, ToolInfo]) -> None:
        """Accept the survey's result: which tool serves each capability.

        Methods of capabilities absent from ``mapping`` must raise
        :class:`CapabilityMissing`. Called once, before any other method but ``tools``.
        """
        ...

    def close(self) -> None:
        """Release connections / subprocesses. Idempotent."""
        ...

    # -- search ---------------------------------------------------------------------------

    def search(self, text: str, limit: int = 10) -> list[MemoryItem]:
        """SEARCH: active items matching ``text`` (similarity or substring), best first."""
        ...

    def list_items(self, query: ItemQuery) -> list[MemoryItem]:
        """SEARCH: items selected and ordered as ``query`` says, at most ``query.limit``."""
        ...

    def get_items(self, ids: Sequence[str]) -> list[MemoryItem]:
        """SEARCH: the items with these ids, any status, in the order given; unknown ids skipped."""
        ...

    # -- mutate ---------------------------------------------------------------------------

    def create_item(self, ctx: WriteContext, item: NewItem) -> Change:
        """CREATE: store a new item; ``Change.target_id`` is its id."""
        ...

    def update_item(self, ctx: WriteContext, item_id: str, changes: ItemChanges) -> Change:
        """MUTATE: change the given fields of one item in place (never delete + re-create)."""
        ...

    def archive_item(self, ctx: WriteContext, item_id: str, *, pointer_to: str | None) -> Change:
        """ARCHIVE: retire an item, keeping it readable; ``pointer_to`` names the item that
        now carries its content (the merge survivor), recorded on the archived item."""
        ...

    def set_expiry(self, ctx: WriteContext, item_id: str, expires_at: dt.datetime) -> Change:
        """EXPIRE: the item may be dropped by the store after ``expires_at`` (nothing now)."""
        ...

    def delete_item(self, ctx: WriteContext, item_id: str, *, duplicate_of: str) -> Change:
        """DELETE: remove one item whose every word ``duplicate_of`` (kept) already holds; the
        before-image is the whole item. The dedup phase calls it only in autonomous mode, for
        a clear merge that loses nothing; anywhere else a deletion is proposed."""
        ...

    # -- duplicates -----------------------------------------------------------------------

    def duplicate_candidates(
        self, item_ids: Sequence[str], threshold: float = 0.90, limit: int = 1000
    ) -> list[DuplicatePair]:
        """DUPLICATE_CHECK: pairs (each with at least one of ``item_ids``) among active items
        with similarity ≥ ``threshold``, most similar first. Must not compare all pairs of
        the store (use an index, blocking, or the store's own similarity search)."""
        ...

    # -- knowledge graph ------------------------------------------------------------------

    def facts(self, query: FactQuery) -> list[Fact]:
        """KG_SEARCH: facts matching ``query``, oldest first (by valid_at, then created_at)."""
        ...

    def add_fact(self, ctx: WriteContext, fact: NewFact) -> Change:
        """KG_ADD: add one fact; ``Change.target_id`` is its id."""
        ...

    def invalidate_fact(
        self,
        ctx: WriteContext,
        fact_id: str,
        *,
        invalid_at: dt.datetime | None,
        superseded_by: str | None,
    ) -> Change:
        """KG_INVALIDATE: retire a fact as superseded; it stays in the timeline."""
        ...

    def timeline(self, subject: str, predicate: str) -> list[Fact]:
        """KG_TIMELINE: every fact of ``subject`` + ``predicate``, retired ones included, oldest first."""
        ...

    # -- structure ------------------------------------------------------------------------

    def orphans(self, limit: int = 10) -> list[OrphanNode]:
        """STRUCTURE: nodes without links or in an obviously wrong container, worst first."""
        ...

    def link_candidates(self, node: OrphanNode) -> list[LinkCandidate]:
        """STRUCTURE: links that could reconnect ``node`` (the phase adds one only if exactly one)."""
        ...

    def add_link(self, ctx: WriteContext, node: OrphanNode, link: LinkCandidate) -> Change:
        """STRUCTURE: add the link (or move the node to the right container)."""
        ...

    # -- journal, stats, backup, artifacts ------------------------------------------------

    def last_journal(self) -> JournalEntry | None:
        """JOURNAL: the newest journal entry, or None."""
        ...

    def write_journal(self, ctx: WriteContext, text: str) -> Change:
        """JOURNAL: append one dated entry."""
        ...

    def stats(self) -> dict[str, int]:
        """STATS: counts (items, facts, ...) by name; the same names before and after a run."""
        ...

    def backup(self, label: str) -> BackupRef:
        """BACKUP: a consistent, restorable snapshot of the whole store; raises on failure."""
        ...

    def save_artifact(self, ctx: WriteContext, kind: str, name: str, content: str) -> Change:
        """ARTIFACT: persist a text document; ``Change.target_id`` is its id."""
        ...

    def read_artifact(self, artifact_id: str) -> Artifact | None:
        """ARTIFACT: a stored document by id (to read back what was saved)."""
        ...

    def last_artifact(self, kind: str) -> Artifact | None:
        """ARTIFACT: the newest stored document of ``kind`` (e.g. ``garden-report``)."""
        ...


# --------------------------------------------------------------------------- helpers


def apply_item_query(items: Iterable[MemoryItem], query: ItemQuery) -> list[MemoryItem]:
    """Filter, order and page items in Python, for adapters whose store cannot (e.g. MCP)."""

    def changed(item: MemoryItem) -> dt.datetime | None:
        return item.updated_at or item.created_at

    out = []
    for item in items:
        if query.status is not None and item.status != query.status:
            continue
        if not query.include_pinned and item.pinned:
            continue
        if query.min_chars is not None and item.chars <= query.min_chars:
            continue
        if (
            query.decay_floor is not None
            and item.expires_at is not None
            and (item.importance is None or item.importance <= query.decay_floor)
        ):
            continue
        when = changed(item)
        if query.changed_since is not None and (when is None or when < query.changed_since):
            continue
        if query.changed_before is not None and (when is None or when >= query.changed_before):
            continue
        if query.untouched_before is not None:
            touched = item.last_touched_at or when
            if touched is None or touched >= query.untouched_before:
                continue
        out.append(item)
    far = dt.datetime.min
    if query.order == "oldest":
        out.sort(key=lambda i: (changed(i) or far, i.id))
    elif query.order == "newest":
        out.sort(key=lambda i: (changed(i) or far, i.id), reverse=True)
    elif query.order == "stalest":
        out.sort(key=lambda i: (i.last_touched_at or changed(i) or far, i.id))
    else:
        out.sort(key=lambda i: (-i.chars, i.id))
    if query.after is not None:
        ids = [i.id for i in out]
        if query.after in ids:
            out = out[ids.index(query.after) + 1 :]
    return out[: query.limit]


class UnsupportedMixin:
    """Default bodies raising :class:`CapabilityMissing`, so an adapter implements only what
    its store can do. Subclasses set ``name`` and keep ``self.bound`` from :meth:`bind`."""

    name: str = "store"
    bound: dict[Capability, ToolInfo]

    def bind(self, mapping: Mapping[Capability, ToolInfo]) -> None:
        self.bound = dict(mapping)

    def require(self, capability: Capability) -> ToolInfo:
        """The tool bound to ``capability``; raises :class:`CapabilityMissing` if none."""
        bound = getattr(self, "bound", {})
        if capability not in bound:
            raise CapabilityMissing(self.name, capability)
        return bound[capability]

    def _missing(self, capability: Capability) -> Any:
        raise CapabilityMissing(self.name, capability)

    def search(self, text: str, limit: int = 10) -> list[MemoryItem]:
        return self._missing(Capability.SEARCH)

    def list_items(self, query: ItemQuery) -> list[MemoryItem]:
        return self._missing(Capability.SEARCH)

    def get_items(self, ids: Sequence[str]) -> list[MemoryItem]:
        return self._missing(Capability.SEARCH)

    def create_item(self, ctx: WriteContext, item: NewItem) -> Change:
        return self._missing(Capability.CREATE)

    def update_item(self, ctx: WriteContext, item_id: str, changes: ItemChanges) -> Change:
        return self._missing(Capability.MUTATE)

    def archive_item(self, ctx: WriteContext, item_id: str, *, pointer_to: str | None) -> Change:
        return self._missing(Capability.ARCHIVE)

    def set_expiry(self, ctx: WriteContext, item_id: str, expires_at: dt.datetime) -> Change:
        return self._missing(Capability.EXPIRE)

    def delete_item(self, ctx: WriteContext, item_id: str, *, duplicate_of: str) -> Change:
        return self._missing(Capability.DELETE)

    def duplicate_candidates(
        self, item_ids: Sequence[str], threshold: float = 0.90, limit: int = 1000
    ) -> list[DuplicatePair]:
        return self._missing(Capability.DUPLICATE_CHECK)

    def facts(self, query: FactQuery) -> list[Fact]:
        return self._missing(Capability.KG_SEARCH)

    def add_fact(self, ctx: WriteContext, fact: NewFact) -> Change:
        return self._missing(Capability.KG_ADD)

    def invalidate_fact(
        self,
        ctx: WriteContext,
        fact_id: str,
        *,
        invalid_at: dt.datetime | None,
        superseded_by: str | None,
    ) -> Change:
        return self._missing(Capability.KG_INVALIDATE)

    def timeline(self, subject: str, predicate: str) -> list[Fact]:
        return self._missing(Capability.KG_TIMELINE)

    def orphans(self, limit: int = 10) -> list[OrphanNode]:
        return self._missing(Capability.STRUCTURE)

    def link_candidates(self, node: OrphanNode) -> list[LinkCandidate]:
        return self._missing(Capability.STRUCTURE)

    def add_link(self, ctx: WriteContext, node: OrphanNode, link: LinkCandidate) -> Change:
        return self._missing(Capability.STRUCTURE)

    def last_journal(self) -> JournalEntry | None:
        return self._missing(Capability.JOURNAL)

    def write_journal(self, ctx: WriteContext, text: str) -> Change:
        return self._missing(Capability.JOURNAL)

    def stats(self) -> dict[str, int]:
        return self._missing(Capability.STATS)

    def backup(self, label: str) -> BackupRef:
        return self._missing(Capability.BACKUP)

    def save_artifact(self, ctx: WriteContext, kind: str, name: str, content: str) -> Change:
        return self._missing(Capability.ARTIFACT)

    def read_artifact(self, artifact_id: str) -> Artifact | None:
        return self._missing(Capability.ARTIFACT)

    def last_artifact(self, kind: str) -> Artifact | None:
        return self._missing(Capability.ARTIFACT)

    def close(self) -> None:
        return None
