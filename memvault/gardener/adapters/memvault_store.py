"""memvault's own store as a garden store: every capability, every change audited.

Items are the *memory* blocks (agent-written memories, summaries, insights —
not the raw transcript turns); facts are the bi-temporal ``triples``. Writes
go through ``store.mutation`` (so each ``Change`` is ``audited=True``); nothing
is hard-deleted: merge archives (``status='archived'`` with ``parent_id`` and a
``merged-into:`` tag pointing at the survivor), decay lowers importance and
sets ``expires_at``, invalidation sets ``invalid_at``/``expired_at`` and
``status='superseded'``.

The tool list is synthetic, but the survey maps it by intent like any other
store's, so memvault's store goes through the same discovery as an MCP server.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

import memvault
from memvault.artifacts import latest_artifact, read_artifact
from memvault.embed import Embedder
from memvault.errors import StoreError
from memvault.gardener.adapter import (
    Artifact,
    BackupRef,
    Capability,
    Change,
    DuplicatePair,
    Fact,
    FactQuery,
    ItemChanges,
    ItemQuery,
    JournalEntry,
    LinkCandidate,
    MemoryItem,
    NewFact,
    NewItem,
    OrphanNode,
    ToolInfo,
    UnsupportedMixin,
    WriteContext,
)
from memvault.gardener.similarity import SimilarPairs, similar_pairs
from memvault.lifecycle.weights import block_weights, feedback_factor
from memvault.memories import (
    TRANSCRIPT_KINDS,
    active_memory_ids,
    blocks_by_id,
    memory_counts,
    memory_items,
    named_entities,
)
from memvault.normalize import utcnow
from memvault.orphans import merged_parent, orphan_memories, parent_session
from memvault.store import Store
from memvault.store.snapshot import drop_snapshot, restore_snapshot, take_snapshot
from memvault.temporal.facts import fact_counts, fact_timeline, named_facts
from memvault.vectors import load_vectors, stale_texts, write_vectors

if TYPE_CHECKING:
    from memvault.recall.recaller import Recaller

_TOOLS: tuple[tuple[str, str], ...] = (
    ("memvault_search_blocks", "Search stored memory items by text, or by similarity when vectors exist."),
    ("memvault_list_blocks", "List memory items by recency, staleness or length, with their created, updated and last-touched timestamps."),
    ("memvault_create_block", "Create a new memory item (block), optionally linked to a parent."),
    ("memvault_update_block", "Update a memory item in place: text, importance, tags, parent. Audited."),
    ("memvault_archive_block", "Archive a memory item: status archived, kept readable, undo restores it."),
    ("memvault_set_block_expiry", "Set the expiry date (expires_at) of a memory item."),
    ("memvault_duplicate_blocks", "Near-duplicate check: pairs of memory items above a cosine threshold, from an index."),
    ("memvault_add_triple", "Add a fact (subject-predicate-object triple) to the knowledge graph."),
    ("memvault_query_triples", "Query facts (triples) of the knowledge graph by subject, predicate and time."),
    ("memvault_invalidate_triple", "Invalidate a fact: set invalid_at and expired_at, status superseded; the timeline keeps it."),
    ("memvault_triple_timeline", "Timeline (history) of one subject and predicate, retired facts included."),
    ("memvault_reconnect_orphan_block", "Reconnect an orphan memory item or entity: link it to its parent, session or mentions."),
    ("memvault_write_diary", "Append a dated diary (journal) entry."),
    ("memvault_stats", "Counts of memory items, facts, entities and mentions."),
    ("memvault_backup", "Snapshot (backup) of the whole store that can be restored."),
    ("memvault_save_artifact", "Save a text document (a report artifact) and read it back."),
)  # fmt: skip

#: Id prefix of the gardener's journal entries in the diary.
JOURNAL_PREFIX = "garden-"

#: Recall hits read per memory item asked for (transcript turns among them are left out).
SEARCH_DEPTH = 5


def _short_hash(*parts: object) -> str:
    return hashlib.sha1("|".join(str(p) for p in parts).encode("utf-8")).hexdigest()[:16]


def _redacted(url: str) -> str:
    from memvault.store.backends import _redact

    return _redact(url)


class MemvaultGardenStore(UnsupportedMixin):
    """The :class:`~memvault.gardener.adapter.GardenStore` over a memvault ``Store``.

    On memvault's own store some rules belong to the dream, which runs on the same store:
    stale facts (temporal conflict resolution, with the grounding definitions, the verdict
    cache and the audited apply path) and orphan entities (archived, revived when referred
    to again). The gardener leaves those to it and says so in its report (``delegated``).
    """

    #: Phase → the rule the dream owns here, as the report's "Skipped:" line says it.
    delegated: Mapping[str, str] = {
        "invalidate": "stale facts on this store are resolved by the dream's temporal conflict "
        "resolution (`memvault dream`), which owns that rule",
        "reconnect": "orphan entities on this store are archived and revived by the dream; "
        "only memory items are reconnected here",
    }
    #: Of those, the phases left out entirely.
    delegated_whole: frozenset[str] = frozenset({"invalidate"})

    def __init__(
        self,
        store: Store,
        *,
        embedder: Embedder | None = None,
        owns_store: bool = False,
        backup_dir: str | Path | None = None,
        exact_limit: int | None = None,
    ) -> None:
        self.store = store
        self.name = f"memvault:{_redacted(store.url)}"
        self.bound: dict[Capability, ToolInfo] = {}
        self._embedder = embedder
        self._owns = owns_store
        self._backup_dir = Path(backup_dir) if backup_dir else None
        self._exact_limit = exact_limit
        #: Timing of the last duplicate search (the perf test reads it).
        self.last_similarity: SimilarPairs | None = None
        self._vectors: tuple[list[str], np.ndarray] | None = None
        self._usage: tuple[dt.datetime, set[str]] | None = None
        self._recaller: Recaller | None = None

    @classmethod
    def open(cls, url: str, **options: Any) -> MemvaultGardenStore:
        return cls(memvault.open(url), owns_store=True, **options)

    def close(self) -> None:
        if self._owns:
            self._owns = False
            self.store.close()

    # -- discovery ------------------------------------------------------------------------

    def tools(self) -> list[ToolInfo]:
        return [ToolInfo(name, description, {}) for name, description in _TOOLS]

    # -- reading items --------------------------------------------------------------------

    @staticmethod
    def _item(row: Mapping[str, Any]) -> MemoryItem:
        tags = row.get("tags")
        return MemoryItem(
            id=row["id"],
            text=row["text"],
            kind=row["kind"],
            importance=float(row["importance"]) if row["importance"] is not None else None,
            pinned=bool(row["pinned"]),
            tags=tuple(json.loads(tags)) if tags else (),
            status=row["status"],
            parent_id=row["parent_id"],
            container=row["session_id"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            last_touched_at=row.get("touched") or row["updated_at"],
            expires_at=row.get("expires_at"),
            scores={
                "importance": float(row["importance"] or 0),
                "access_count": float(row["access_count"] or 0),
                "feedback_score": float(row["feedback_score"] or 0),
            },
            extra={"session_id": row["session_id"]},
        )

    def _items(self, rows: pl.DataFrame) -> list[MemoryItem]:
        return [self._item(r) for r in rows.iter_rows(named=True)]

    def list_items(self, query: ItemQuery) -> list[MemoryItem]:
        self.require(Capability.SEARCH)
        return self._items(
            memory_items(
                self.store,
                status=query.status,
                include_pinned=query.include_pinned,
                min_chars=query.min_chars,
                decay_floor=query.decay_floor,
                changed_since=query.changed_since,
                changed_before=query.changed_before,
                untouched_before=query.untouched_before,
                order=query.order,
                after=query.after,
                limit=query.limit,
            )
        )

    def kept_by_use(self, ids: Sequence[str], now: dt.datetime) -> set[str]:
        """Of ``ids``, the blocks whose use says they regained interest: recalled in the last
        30 days (access multiplier above 1) or net positive feedback. Decay leaves them alone
        however long ago they were last edited. The signals are read once per ``now`` (one
        garden run) for every block, then looked up page by page."""
        if not ids:
            return set()
        if self._usage is None or self._usage[0] != now:
            weights = block_weights(self.store, now)
            factor = feedback_factor(
                weights["feedback_boost"].to_numpy(), weights["verdict_score"].to_numpy()
            )
            kept = weights.filter((pl.col("access_multiplier") > 1.0) | pl.Series(factor > 1.0))
            self._usage = (now, set(kept["block_id"].to_list()))
        return self._usage[1].intersection(ids)

    def get_items(self, ids: Sequence[str]) -> list[MemoryItem]:
        self.require(Capability.SEARCH)
        if not ids:
            return []
        found = {i.id: i for i in self._items(blocks_by_id(self.store, ids))}
        return [found[i] for i in ids if i in found]

    def search(self, text: str, limit: int = 10) -> list[MemoryItem]:
        """Memory items as recall finds them for ``text`` (:mod:`memvault.recall`: keywords
        and vectors, ranked as an agent's recall ranks them); transcript turns left out."""
        self.require(Capability.SEARCH)
        from memvault.recall.recaller import Recaller

        if self._recaller is None:
            self._recaller = Recaller(self._embedder_for())
        self._recaller.mark_stale()  # this adapter writes to the store between searches
        hits, _ = self._recaller.search(self.store, text, [], int(limit) * SEARCH_DEPTH)
        memory = self.get_items([h.block_id for h in hits])
        return [i for i in memory if i.status == "active" and i.kind not in TRANSCRIPT_KINDS][
            : int(limit)
        ]

    def about(self, item_ids: Sequence[str], limit: int = 5) -> list[tuple[str, int]]:
        """What these items are about, for the journal: the entities they mention as (name,
        items naming it), most telling first (:func:`memvault.memories.named_entities`)."""
        self.require(Capability.SEARCH)
        return named_entities(self.store, item_ids, limit)

    # -- writing items --------------------------------------------------------------------

    def _change(
        self,
        action: str,
        table: str,
        row_id: object,
        before: Any,
        after: Any,
        *,
        audited: bool = True,
    ) -> Change:
        return Change(action, table, str(row_id), before, after, audited=audited)

    def create_item(self, ctx: WriteContext, item: NewItem) -> Change:
        self.require(Capability.CREATE)
        now = utcnow()
        session = item.container
        if session is None and item.parent_id:
            parent = self.store.get_row("blocks", item.parent_id)
            session = parent["session_id"] if parent else None
        row_id = item.id or f"blk_garden_{_short_hash(item.parent_id, item.container, item.text)}"
        row = {
            "id": row_id,
            "session_id": session,
            "kind": item.kind,
            "text": item.text,
            "importance": item.importance if item.importance is not None else 0.5,
            "pinned": False,
            "tier": "hot",
            "status": "active",
            "parent_id": item.parent_id,
            "tags": json.dumps(list(item.tags)),
            "created_at": now,
            "updated_at": now,
            "access_count": 0,
            "feedback_score": 0.0,
        }
        with self.store.mutation(ctx.run_id, ctx.phase) as m:
            inserted = m.insert(
                "blocks", pl.DataFrame([row]), action=ctx.action or "create", reason=ctx.reason
            )
        if not inserted:
            raise StoreError(f"block {row_id} already exists; not created again")
        self._vectors = None
        return self._change(ctx.action or "create", "blocks", row_id, None, row)

    def _update(
        self, ctx: WriteContext, row_id: str, values: dict[str, Any], default: str
    ) -> Change:
        before = self.store.get_row("blocks", row_id)
        if before is None:
            raise StoreError(f"no memory item {row_id}")
        with self.store.mutation(ctx.run_id, ctx.phase) as m:
            m.update("blocks", row_id, values, action=ctx.action or default, reason=ctx.reason)
        return self._change(ctx.action or default, "blocks", row_id, before, before | values)

    def update_item(self, ctx: WriteContext, item_id: str, changes: ItemChanges) -> Change:
        self.require(Capability.MUTATE)
        values: dict[str, Any] = {}
        if changes.text is not None:
            values["text"] = changes.text
        if changes.importance is not None:
            values["importance"] = float(changes.importance)
        if changes.tags is not None:
            values["tags"] = json.dumps(list(changes.tags))
        if changes.parent_id is not None:
            values["parent_id"] = changes.parent_id
        for name, value in (changes.scores or {}).items():
            if name in ("access_count", "feedback_score"):
                values[name] = int(value) if name == "access_count" else float(value)
        if {"text", "tags", "parent_id"} & set(values):
            # Content changed: the item is "updated" (an importance-only change is not).
            values["updated_at"] = utcnow()
            self._vectors = None
        return self._update(ctx, item_id, values, "update")

    def archive_item(self, ctx: WriteContext, item_id: str, *, pointer_to: str | None) -> Change:
        self.require(Capability.ARCHIVE)
        row = self.store.get_row("blocks", item_id)
        if row is None:
            raise StoreError(f"no memory item {item_id}")
        values: dict[str, Any] = {"status": "archived"}
        if pointer_to:
            tags = [*json.loads(row["tags"] or "[]"), f"merged-into:{pointer_to}"]
            values |= {"parent_id": pointer_to, "tags": json.dumps(tags)}
        self._vectors = None
        return self._update(ctx, item_id, values, "archive")

    def set_expiry(self, ctx: WriteContext, item_id: str, expires_at: dt.datetime) -> Change:
        self.require(Capability.EXPIRE)
        return self._update(ctx, item_id, {"expires_at": expires_at}, "expire")

    # -- duplicates -----------------------------------------------------------------------

    def _embedder_for(self) -> Embedder:
        if self._embedder is None:
            from memvault.embed import make_embedder

            self._embedder = make_embedder()
        return self._embedder

    def item_vectors(self) -> tuple[list[str], np.ndarray]:
        """Ids and unit vectors of every active memory item (missing vectors embedded first)."""
        if self._vectors is not None:
            return self._vectors
        embedder = self._embedder_for()
        memory = active_memory_ids(self.store)
        self._embed_stale(embedder, memory)
        ids, matrix = load_vectors(self.store, "block", embedder.model_name, ids=memory)
        if not ids:
            matrix = np.zeros((0, embedder.dim), dtype=np.float32)
        self._vectors = (ids, matrix)
        return self._vectors

    def _embed_stale(self, embedder: Embedder, memory: list[str], batch_size: int = 512) -> int:
        """Vectors for memory items that have none of this model, or one of an older text:
        derived data, written by the collector's own functions (:mod:`memvault.vectors`, which
        embeds the text recall searches a block by); transcript turns are not embedded here."""
        todo = stale_texts(self.store, "block", embedder.model_name, ids=memory)
        for start in range(0, todo.height, batch_size):
            write_vectors(self.store, embedder, "block", todo.slice(start, batch_size))
        return todo.height

    def duplicate_candidates(
        self, item_ids: Sequence[str], threshold: float = 0.90, limit: int = 1000
    ) -> list[DuplicatePair]:
        self.require(Capability.DUPLICATE_CHECK)
        ids, matrix = self.item_vectors()
        position = {item_id: n for n, item_id in enumerate(ids)}
        queries = np.array([position[i] for i in item_ids if i in position], dtype=np.int64)
        kwargs = {"exact_limit": self._exact_limit} if self._exact_limit is not None else {}
        found = similar_pairs(matrix, queries, threshold, **kwargs)
        self.last_similarity = found
        pairs = []
        for a, b, score in zip(
            found.left.tolist(), found.right.tolist(), found.score.tolist(), strict=True
        ):
            first, second = sorted((ids[a], ids[b]))
            pairs.append(DuplicatePair(first, second, round(float(score), 6)))
            if len(pairs) >= limit:
                break
        return pairs

    # -- knowledge graph ------------------------------------------------------------------

    @staticmethod
    def _fact(row: Mapping[str, Any]) -> Fact:
        return Fact(
            id=row["id"],
            subject=row["subject_id"],
            predicate=row["predicate"],
            object=row["object_id"] or row["object"],
            subject_label=row["subject_label"],
            object_label=row["object_label"] or row["object"],
            valid_at=row["valid_at"],
            invalid_at=row["invalid_at"],
            created_at=row["created_at"],
            expired_at=row["expired_at"],
            status=row["status"],
            confidence=row["confidence"],
            superseded_by=row["superseded_by"],
            source=row["source_block"],
        )

    def _facts(self, rows: pl.DataFrame) -> list[Fact]:
        return [self._fact(r) for r in rows.iter_rows(named=True)]

    def facts(self, query: FactQuery) -> list[Fact]:
        self.require(Capability.KG_SEARCH)
        return self._facts(
            named_facts(
                self.store,
                subject=query.subject,
                predicate=query.predicate,
                learned_since=query.changed_since,
                current_only=query.active_only,
                newest_first=query.newest_first,
                limit=query.limit,
            )
        )

    def timeline(self, subject: str, predicate: str) -> list[Fact]:
        self.require(Capability.KG_TIMELINE)
        return self._facts(fact_timeline(self.store, subject, predicate))

    def add_fact(self, ctx: WriteContext, fact: NewFact) -> Change:
        self.require(Capability.KG_ADD)
        now = utcnow()
        entity = self.store.get_row("entities", fact.object)
        is_entity = entity is not None
        label = entity["name"] if entity is not None else fact.object
        row = {
            "id": f"tri_garden_{_short_hash(fact.subject, fact.predicate, fact.object, fact.valid_at)}",
            "subject_id": fact.subject,
            "predicate": fact.predicate,
            "object": label,
            "object_id": fact.object if is_entity else None,
            "valid_at": fact.valid_at or now,
            "created_at": now,
            "source_block": fact.source,
            "confidence": fact.confidence if fact.confidence is not None else 1.0,
            "status": "active",
            "lineage": "[]",
        }
        with self.store.mutation(ctx.run_id, ctx.phase) as m:
            m.insert(
                "triples", pl.DataFrame([row]), action=ctx.action or "add-fact", reason=ctx.reason
            )
        return self._change(ctx.action or "add-fact", "triples", row["id"], None, row)

    def invalidate_fact(
        self,
        ctx: WriteContext,
        fact_id: str,
        *,
        invalid_at: dt.datetime | None,
        superseded_by: str | None,
    ) -> Change:
        self.require(Capability.KG_INVALIDATE)
        before = self.store.get_row("triples", fact_id)
        if before is None:
            raise StoreError(f"no fact {fact_id}")
        values: dict[str, Any] = {
            "status": "superseded",
            "expired_at": utcnow(),
            "superseded_by": superseded_by,
            "note": ctx.reason or None,
        }
        if invalid_at is not None and before["invalid_at"] is None:
            values["invalid_at"] = invalid_at
        with self.store.mutation(ctx.run_id, ctx.phase) as m:
            m.update(
                "triples", fact_id, values, action=ctx.action or "invalidate", reason=ctx.reason
            )
        return self._change(ctx.action or "invalidate", "triples", fact_id, before, before | values)

    # -- structure ------------------------------------------------------------------------

    def orphans(self, limit: int = 10) -> list[OrphanNode]:
        """Worst first: children of merged-away items, dangling parents, memories without a
        session (:func:`memvault.orphans.orphan_memories`). (Orphan entities are the dream's:
        it archives them and revives them.)"""
        self.require(Capability.STRUCTURE)
        return [
            OrphanNode(row_id, text[:80], "item", problem)
            for row_id, text, problem in orphan_memories(self.store, limit)
        ]

    def link_candidates(self, node: OrphanNode) -> list[LinkCandidate]:
        self.require(Capability.STRUCTURE)
        if node.problem == "parent archived":
            merged = merged_parent(self.store, node.id)
            if merged is None:
                return []
            parent_id, survivor = merged
            return [LinkCandidate(survivor, "parent", f"{parent_id} was merged into {survivor}")]
        if node.problem == "no session":
            session = parent_session(self.store, node.id)
            return [LinkCandidate(session, "session", "its parent's session")] if session else []
        return []

    def add_link(self, ctx: WriteContext, node: OrphanNode, link: LinkCandidate) -> Change:
        self.require(Capability.STRUCTURE)
        if link.relation == "parent":
            return self._update(ctx, node.id, {"parent_id": link.target_id}, "reconnect")
        if link.relation == "session":
            return self._update(ctx, node.id, {"session_id": link.target_id}, "reconnect")
        raise StoreError(f"unknown link relation {link.relation!r}")

    # -- journal, stats, backup, artifacts ------------------------------------------------

    def last_journal(self) -> JournalEntry | None:
        self.require(Capability.JOURNAL)
        from memvault.profile.diary import latest_entry  # the profile's module: loaded on use

        row = latest_entry(self.store, JOURNAL_PREFIX)
        return JournalEntry(row["id"], row["text"], row["created_at"]) if row else None

    def write_journal(self, ctx: WriteContext, text: str) -> Change:
        self.require(Capability.JOURNAL)
        now = utcnow()
        row = {
            "id": f"{JOURNAL_PREFIX}{ctx.run_id}",
            "day": now.date(),
            "text": text,
            "run_id": ctx.run_id,
            "created_at": now,
        }
        with self.store.mutation(ctx.run_id, ctx.phase) as m:
            inserted = m.insert(
                "diary", pl.DataFrame([row]), action=ctx.action or "journal", reason=ctx.reason
            )
        if not inserted:
            raise StoreError(f"journal entry {row['id']} exists already")
        return self._change(ctx.action or "journal", "diary", row["id"], None, row)

    def stats(self) -> dict[str, int]:
        self.require(Capability.STATS)
        items, facts = memory_counts(self.store), fact_counts(self.store)
        other = self.store.counts(("entities", "mentions", "diary"))
        return {
            "items_active": items["active"],
            "items_archived": items["archived"],
            "items_expiring": items["expiring"],
            "items": items["all"],
            "facts_active": facts["current"],
            "facts": facts["all"],
            "entities": other["entities"],
            "mentions": other["mentions"],
            "journal": other["diary"],
        }

    def backup(self, label: str) -> BackupRef:
        """A snapshot of the whole store (:mod:`memvault.store.snapshot`): restore it with
        :func:`restore_backup`."""
        self.require(Capability.BACKUP)
        location = take_snapshot(self.store, label, utcnow(), self._backup_dir)
        return BackupRef(location, "restore: restore_backup(ref, new_url)", utcnow())

    def save_artifact(self, ctx: WriteContext, kind: str, name: str, content: str) -> Change:
        self.require(Capability.ARTIFACT)
        now = utcnow()
        row = {
            "id": f"art-{kind}-{now:%Y%m%dT%H%M%S%f}-{_short_hash(ctx.run_id, content)[:6]}",
            "kind": kind,
            "name": name,
            "content": content,
            "run_id": ctx.run_id,
            "created_at": now,
        }
        with self.store.mutation(ctx.run_id, ctx.phase) as m:
            m.insert(
                "artifacts",
                pl.DataFrame([row]),
                action=ctx.action or "save-artifact",
                reason=ctx.reason,
            )
        return self._change(
            ctx.action or "save-artifact",
            "artifacts",
            row["id"],
            None,
            {k: v for k, v in row.items() if k != "content"},
        )

    def read_artifact(self, artifact_id: str) -> Artifact | None:
        self.require(Capability.ARTIFACT)
        row = read_artifact(self.store, artifact_id)
        return (
            Artifact(
                row["id"],
                row["kind"],
                row["name"],
                row["content"],
                row["created_at"],
                row["run_id"],
            )
            if row
            else None
        )

    def last_artifact(self, kind: str) -> Artifact | None:
        self.require(Capability.ARTIFACT)
        row = latest_artifact(self.store, kind)
        return self.read_artifact(row["id"]) if row else None


def restore_backup(ref: BackupRef | str, target_url: str) -> Store:
    """Restore a snapshot into a new, empty store at ``target_url`` (never over a live one)."""
    return restore_snapshot(ref.location if isinstance(ref, BackupRef) else ref, target_url)


def drop_backup_schema(store: Store, ref: BackupRef) -> None:
    """Remove a PostgreSQL snapshot schema (tests and operators clean up with it)."""
    drop_snapshot(store, ref.location)
