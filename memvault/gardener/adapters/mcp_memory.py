"""The reference MCP knowledge-graph memory server as a store the gardener tends (GD9).

``@modelcontextprotocol/server-memory`` keeps *entities* (name, entityType,
observations) and *relations* (from, relationType, to) in one JSONL file
(``MEMORY_FILE_PATH``) and offers nine tools: create_entities,
create_relations, add_observations, delete_entities, delete_observations,
delete_relations, read_graph, search_nodes, open_nodes. It has no ids, no
timestamps, no update or rename, no invalidation, no journal and no document
storage; search is a case-insensitive substring match.

How the gardener's model maps onto it (honestly, see :mod:`..adapter`):

* **items are observations.** An observation is the unit of remembered text
  here; its entity is the item's ``container``. So dedup compares sentences
  (an exact repeat inside one entity, the same sentence under two spellings
  of one person) and bloat finds long sentences (a pasted meeting note).
  Item ids are ``obs:`` + a hash of (entity, text, occurrence), stable across
  runs as long as the observation exists; ``occurrence`` counts identical
  texts before it in the same entity, so exact repeats get distinct ids.
* **facts are relations**, ids ``rel:`` + a hash of (from, type, to,
  occurrence); ``subject`` / ``object`` are entity names, which are the
  server's only keys. **Nodes are entities** (id = name).
* **No times, so first-seen times.** The server stores none. The adapter
  keeps a small file (:class:`FirstSeen`, in ``backup_dir``) with the time
  the gardener first saw each observation and relation; that is what
  ``created_at`` / ``updated_at`` mean here (observations never change in
  place), and it gives later runs their "since the last run" window. What
  was there at the first look has no time and counts as older than any
  window (a first run covers it with its "most recent items" window; "most
  recent" is file order, since the server appends). The server records no
  reads either, so ``untouched_before`` (staleness) selects nothing: never
  call an item stale without evidence.
* **Capabilities** (what :meth:`McpMemoryStore.bind` keeps): search
  (search_nodes, read_graph), create (add_observations; create_entities for
  a new container), duplicate check (computed here, with memvault's
  embedder over read_graph: the server has no similarity), kg_add and
  structure (create_relations), kg_search and stats (read_graph), backup
  (below). **Missing**: mutate, archive, expire, kg_invalidate, kg_timeline,
  journal, artifact. The delete_* tools destroy without history, so they are
  neither archive nor invalidation, and this adapter never calls them: a
  stale relation is proposed for retirement (GD4; the newer relation is
  already there, and a correction can be added with kg_add); a duplicate is
  proposed, never executed, in either mode (an exact repeat inside one
  entity cannot even be removed alone: delete_observations removes every
  copy of a text, so "keep one" would be delete + re-create, GD-S5).
* **Backup counts.** read_graph returns the whole store: the server keeps
  nothing else (no ids, times or hidden fields). :meth:`backup` writes that
  graph in the server's own file format to a local file under
  ``backup_dir`` (default: ``<MEMORY_FILE_PATH>.backups/`` next to the
  memory file, as memvault's DuckDB store keeps ``<file>.backups/``; else
  ``.memvault/garden-snapshots/``), so restoring is: stop the server, copy
  the snapshot over ``MEMORY_FILE_PATH``. It is offered as a tool of its own
  (``memvault_snapshot``, marked client-side) so the survey and the report
  show where it comes from. Caveat: the server has no lock; a second server
  process writing the same file during the run is not covered: garden while
  the agent is idle.
* **Garden summary.** Without a journal, GD6's ``garden-summary`` item is an
  observation on the entity ``memvault garden`` (type ``garden-summary``);
  its observations are pinned (never decayed or merged) and the entity is
  not an orphan to reconnect.

A relative ``MEMORY_FILE_PATH`` is made absolute against the working
directory before the server starts: the server itself resolves it against
its own install folder, which is never what a user means.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memvault.gardener.adapter import (
    GARDEN_SUMMARY_TAG,
    BackupRef,
    Capability,
    Change,
    DuplicatePair,
    Fact,
    FactQuery,
    ItemQuery,
    LinkCandidate,
    MemoryItem,
    NewFact,
    NewItem,
    OrphanNode,
    ToolInfo,
    UnsupportedMixin,
    WriteContext,
)
from memvault.gardener.mcp_client import (
    DEFAULT_TIMEOUT,
    McpError,
    McpStdioClient,
    parse_stdio_url,
    resolve_relative,
    split_env_words,
)
from memvault.gardener.similarity import similar_pairs
from memvault.normalize import utcnow

if TYPE_CHECKING:
    from memvault.embed import Embedder

#: The entity that holds GD6's garden-summary observations when there is no journal.
GARDEN_ENTITY = "memvault garden"
#: The client-side backup, listed next to the server's own tools.
SNAPSHOT_TOOL = ToolInfo(
    name="memvault_snapshot",
    description=(
        "Backup by memvault, client side (not a server tool): copies the graph, every entity "
        "and relation as read_graph returns them, to a local JSONL snapshot in the server's "
        "own format; restore by copying it over MEMORY_FILE_PATH while the server is stopped."
    ),
    input_schema={"type": "object", "properties": {"label": {"type": "string"}}},
)
#: The server tools each capability of this adapter calls.
NEEDS: Mapping[Capability, frozenset[str]] = {
    Capability.SEARCH: frozenset({"search_nodes", "read_graph"}),
    Capability.CREATE: frozenset({"add_observations", "create_entities", "read_graph"}),
    Capability.DUPLICATE_CHECK: frozenset({"read_graph"}),
    Capability.KG_ADD: frozenset({"create_relations", "read_graph"}),
    Capability.KG_SEARCH: frozenset({"read_graph"}),
    Capability.STRUCTURE: frozenset({"create_relations", "read_graph"}),
    Capability.STATS: frozenset({"read_graph"}),
    Capability.BACKUP: frozenset({"read_graph"}),
}
#: Entity names shorter than this are not looked for in text (too many false hits).
MIN_LINK_NAME = 3


def observation_id(entity: str, text: str, occurrence: int = 0) -> str:
    """Stable id of the ``occurrence``-th copy of ``text`` on ``entity``."""
    key = f"{entity}\x1f{text}" + (f"\x1f{occurrence}" if occurrence else "")
    return "obs:" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def relation_id(source: str, relation_type: str, target: str, occurrence: int = 0) -> str:
    key = f"{source}\x1f{relation_type}\x1f{target}" + (f"\x1f{occurrence}" if occurrence else "")
    return "rel:" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Graph:
    """One read of the server's graph, in file order."""

    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]]

    @classmethod
    def parse(cls, data: Any) -> Graph:
        if not isinstance(data, dict):
            raise McpError(f"read_graph answered {type(data).__name__}, expected a JSON object")
        return cls(list(data.get("entities") or []), list(data.get("relations") or []))

    def entity(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.entities if e.get("name") == name), None)

    def items(self) -> list[MemoryItem]:
        """Every observation as an item, in file order."""
        out: list[MemoryItem] = []
        for entity in self.entities:
            out.extend(_entity_items(entity))
        return out

    def facts(self) -> list[Fact]:
        seen: dict[tuple[str, str, str], int] = {}
        out = []
        for relation in self.relations:
            key = (str(relation["from"]), str(relation["relationType"]), str(relation["to"]))
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            out.append(
                Fact(
                    id=relation_id(*key, occurrence),
                    subject=key[0],
                    predicate=key[1],
                    object=key[2],
                    subject_label=key[0],
                    object_label=key[2],
                )
            )
        return out

    def linked_names(self) -> set[str]:
        return {str(r["from"]) for r in self.relations} | {str(r["to"]) for r in self.relations}

    def jsonl(self) -> str:
        """The graph in the server's own file format (its saveGraph layout)."""
        lines = [
            json.dumps(
                {
                    "type": "entity",
                    "name": e["name"],
                    "entityType": e.get("entityType"),
                    "observations": list(e.get("observations") or []),
                },
                ensure_ascii=False,
            )
            for e in self.entities
        ]
        lines += [
            json.dumps(
                {
                    "type": "relation",
                    "from": r["from"],
                    "to": r["to"],
                    "relationType": r["relationType"],
                },
                ensure_ascii=False,
            )
            for r in self.relations
        ]
        return "\n".join(lines)


def _entity_items(entity: Mapping[str, Any]) -> list[MemoryItem]:
    name = str(entity["name"])
    entity_type = str(entity.get("entityType") or "")
    garden = name == GARDEN_ENTITY or entity_type == GARDEN_SUMMARY_TAG
    seen: dict[str, int] = {}
    out = []
    for index, text in enumerate(entity.get("observations") or []):
        text = str(text)
        occurrence = seen.get(text, 0)
        seen[text] = occurrence + 1
        out.append(
            MemoryItem(
                id=observation_id(name, text, occurrence),
                text=text,
                kind=GARDEN_SUMMARY_TAG if garden else "observation",
                pinned=garden,
                tags=(GARDEN_SUMMARY_TAG,) if garden else (),
                container=name,
                extra={
                    "entity": name,
                    "entity_type": entity_type,
                    "index": index,
                    "occurrence": occurrence,
                },
            )
        )
    return out


def _mentions(text: str, name: str) -> bool:
    """Whether ``name`` occurs in ``text`` as whole words (case-insensitive)."""
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, flags=re.IGNORECASE) is not None


class FirstSeen:
    """When the gardener first saw each observation and relation of a store without times.

    A JSON file ``{"last_read": iso, "seen": {id: iso | null}}``. On every full read, ids
    not seen before get the time of the *previous* read (the earliest they can have
    appeared), so an item the agent adds between two runs falls into the next run's
    window even though the gardener only notices it during that run. Ids present when
    the file is first made get ``null``: they existed before memvault looked (a first
    run covers them through its "most recent items" window). Ids gone from the store
    are dropped. Losing the file only makes everything look old again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: dict[str, str | None] | None = None
        self._last_read: str | None = None

    def _load(self) -> dict[str, str | None]:
        if self._seen is None:
            self._seen = {}
            if self.path.is_file():
                try:
                    data = json.loads(self.path.read_text(encoding="utf-8"))
                    self._seen = dict(data.get("seen") or {})
                    self._last_read = data.get("last_read")
                except (OSError, ValueError) as exc:
                    raise McpError(
                        f"cannot read the gardener's first-seen file {self.path}: {exc}; "
                        "delete it to start over (every item then counts as old)"
                    ) from exc
        return self._seen

    def stamp(self, ids: Sequence[str], now: dt.datetime) -> dict[str, dt.datetime | None]:
        """Record a full read at ``now`` of exactly these ids; their first-seen times."""
        seen = self._load()
        fresh = self._last_read  # None on the very first read: those items are the baseline
        updated = {i: seen.get(i, fresh) for i in ids}
        self._seen, self._last_read = updated, now.isoformat()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp = self.path.with_name(self.path.name + ".tmp")
            temp.write_text(
                json.dumps({"last_read": self._last_read, "seen": updated}), encoding="utf-8"
            )
            temp.replace(self.path)
        except OSError as exc:
            raise McpError(
                f"cannot write the gardener's first-seen file {self.path}: {exc}"
            ) from exc
        return {i: _when(t) for i, t in updated.items()}

    def lookup(self, ids: Sequence[str]) -> dict[str, dt.datetime | None]:
        seen = self._load()
        return {i: _when(seen.get(i)) for i in ids}


def _when(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def default_backup_dir(memory_file: str | None) -> Path:
    """Next to the memory file (``<file>.backups``), else under ``.memvault/``."""
    if memory_file:
        return Path(memory_file + ".backups")
    return Path(".memvault") / "garden-snapshots"


class McpMemoryStore(UnsupportedMixin):
    """A gardener store backed by an MCP memory server (see the module docstring)."""

    def __init__(
        self,
        client: McpStdioClient,
        *,
        name: str | None = None,
        memory_file: str | None = None,
        backup_dir: str | os.PathLike[str] | None = None,
        embedder: Embedder | str | None = None,
        owns_client: bool = True,
    ) -> None:
        self.client = client
        self.memory_file = memory_file
        where = memory_file or client.command.display
        self.name = name or f"mcp:{client.server_name}:{where}"
        self.backup_dir = Path(backup_dir) if backup_dir else default_backup_dir(memory_file)
        store_key = hashlib.sha1(self.name.encode("utf-8")).hexdigest()[:8]
        self.first_seen = FirstSeen(self.backup_dir / f"first-seen-{store_key}.json")
        self._embedder_spec = embedder
        self._embedder: Embedder | None = (
            None if embedder is None or isinstance(embedder, str) else embedder
        )
        self._vectors: dict[str, np.ndarray] = {}
        self._owns_client = owns_client
        self.bound = {}
        #: Capabilities the survey offered that this adapter does not take, with the reason.
        self.declined: dict[Capability, str] = {}

    # -- survey -------------------------------------------------------------------------------

    def tools(self) -> list[ToolInfo]:
        """The server's tools as it lists them, plus the client-side snapshot (backup)."""
        listed = [
            ToolInfo(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in self.client.tools()
        ]
        if "read_graph" in {t.name for t in listed}:
            listed.append(SNAPSHOT_TOOL)
        return listed

    def bind(self, mapping: Mapping[Capability, ToolInfo]) -> None:
        """Keep the capabilities this adapter implements with tools the server really has."""
        available = {t.name for t in self.client.tools()}
        self.bound = {}
        self.declined = {}
        for capability, tool in mapping.items():
            needs = NEEDS.get(capability)
            if needs is None:
                self.declined[capability] = (
                    f"{tool.name} looked like {capability.value}, but this server's tools "
                    "cannot do it without deleting (see memvault.gardener.adapters.mcp_memory)"
                )
            elif not needs <= available:
                missing = ", ".join(sorted(needs - available))
                self.declined[capability] = f"the server lacks {missing}"
            else:
                self.bound[capability] = tool

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    # -- reading ------------------------------------------------------------------------------

    def graph(self) -> Graph:
        """The whole graph, read now (the server re-reads its file on every call); every full
        read also updates the first-seen times (see :class:`FirstSeen`)."""
        graph = Graph.parse(self.client.call("read_graph"))
        ids = [i.id for i in graph.items()] + [f.id for f in graph.facts()]
        self.first_seen.stamp(ids, utcnow())
        return graph

    def _timed(self, items: list[MemoryItem]) -> list[MemoryItem]:
        times = self.first_seen.lookup([i.id for i in items])
        return [
            dataclasses.replace(
                item,
                created_at=times[item.id],
                updated_at=times[item.id],  # observations never change in place
            )
            for item in items
        ]

    def items(self) -> list[MemoryItem]:
        """Every observation, in file order, with its first-seen time."""
        return self._timed(self.graph().items())

    def search(self, text: str, limit: int = 10) -> list[MemoryItem]:
        """The server's substring search: observations containing ``text`` first, then the
        other observations of entities whose name or type matched."""
        self.require(Capability.SEARCH)
        found = Graph.parse(self.client.call("search_nodes", {"query": text}))
        needle = text.casefold()
        items = self._timed(found.items())
        hits = [i for i in items if needle in i.text.casefold()]
        rest = [i for i in items if needle not in i.text.casefold()]
        return (hits + rest)[:limit]

    def list_items(self, query: ItemQuery) -> list[MemoryItem]:
        """Items by ``query``. Times are first-seen times (None: there before memvault looked,
        which counts as older than any time); "oldest" is first-seen, then file order.
        ``untouched_before`` selects nothing: the server records no reads."""
        self.require(Capability.SEARCH)
        if query.untouched_before is not None or query.status not in (None, "active"):
            return []
        items = self.items()
        if not query.include_pinned:
            items = [i for i in items if not i.pinned]
        if query.min_chars is not None:
            items = [i for i in items if i.chars > query.min_chars]
        if query.changed_since is not None:
            since = query.changed_since
            items = [i for i in items if i.created_at is not None and i.created_at >= since]
        if query.changed_before is not None:
            until = query.changed_before
            items = [i for i in items if i.created_at is None or i.created_at < until]
        far = dt.datetime.min
        if query.order in ("oldest", "stalest"):
            items.sort(key=lambda i: i.created_at or far)  # stable: file order within a time
        elif query.order == "newest":
            items.reverse()
            items.sort(key=lambda i: i.created_at or far, reverse=True)
        else:
            items.sort(key=lambda i: -i.chars)
        if query.after is not None:
            ids = [i.id for i in items]
            if query.after in ids:
                items = items[ids.index(query.after) + 1 :]
        return items[: query.limit]

    def get_items(self, ids: Sequence[str]) -> list[MemoryItem]:
        self.require(Capability.SEARCH)
        by_id = {i.id: i for i in self.items()}
        return [by_id[i] for i in ids if i in by_id]

    def about(self, item_ids: Sequence[str], limit: int = 5) -> list[tuple[str, int]]:
        """What these observations are about, for the journal: the entities they belong to,
        as (name, observations), most first, then by name."""
        counts = Counter(
            i.container
            for i in self.get_items(item_ids)
            if i.container and GARDEN_SUMMARY_TAG not in i.tags
        )
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def facts(self, query: FactQuery) -> list[Fact]:
        """Relations in file order (= creation order), ``created_at`` = first seen; all are
        active (the server cannot retire one)."""
        self.require(Capability.KG_SEARCH)
        facts = self.graph().facts()
        times = self.first_seen.lookup([f.id for f in facts])
        out = [
            dataclasses.replace(f, created_at=times[f.id])
            for f in facts
            if (query.subject is None or f.subject == query.subject)
            and (query.predicate is None or f.predicate == query.predicate)
        ]
        if query.changed_since is not None:
            since = query.changed_since
            out = [f for f in out if f.created_at is not None and f.created_at >= since]
        if query.newest_first:
            out.reverse()
        return out[: query.limit]

    def stats(self) -> dict[str, int]:
        """Counts under the gardener's names: items = observations, facts = relations."""
        self.require(Capability.STATS)
        graph = self.graph()
        return {
            "entities": len(graph.entities),
            "items_active": sum(len(e.get("observations") or []) for e in graph.entities),
            "facts_active": len(graph.relations),
        }

    # -- duplicates ---------------------------------------------------------------------------

    def duplicate_candidates(
        self, item_ids: Sequence[str], threshold: float = 0.90, limit: int = 1000
    ) -> list[DuplicatePair]:
        """Pairs among unpinned observations, each with one of ``item_ids``, by cosine of
        memvault's embedder (the server has no similarity), through
        :func:`~memvault.gardener.similarity.similar_pairs`: never all pairs of the store."""
        self.require(Capability.DUPLICATE_CHECK)
        items = [i for i in self.items() if not i.pinned]
        position = {item.id: n for n, item in enumerate(items)}
        queries = np.array([position[i] for i in dict.fromkeys(item_ids) if i in position])
        if queries.size == 0 or len(items) < 2:
            return []
        found = similar_pairs(self._embed([i.text for i in items]), queries, threshold)
        pairs = []
        for a, b, score in zip(
            found.left.tolist(), found.right.tolist(), found.score.tolist(), strict=True
        ):
            first, second = sorted((items[a].id, items[b].id))
            pairs.append(DuplicatePair(first, second, min(1.0, round(float(score), 6))))
            if len(pairs) >= limit:
                break
        return pairs

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if todo:
            if self._embedder is None:
                # Imported when first needed: the embedders pull in heavy modules (openai, onnx).
                from memvault.embed import make_embedder

                spec = self._embedder_spec if isinstance(self._embedder_spec, str) else None
                self._embedder = make_embedder(spec)
            for text, vector in zip(todo, self._embedder.embed(todo), strict=True):
                self._vectors[text] = vector
        return np.stack([self._vectors[t] for t in texts])

    # -- writing (additions only) -------------------------------------------------------------

    def create_item(self, ctx: WriteContext, item: NewItem) -> Change:
        """Add an observation to ``item.container`` (created as an entity if new), or to the
        parent's entity, or, for a garden-summary item, to ``memvault garden``."""
        self.require(Capability.CREATE)
        graph = self.graph()
        container = item.container
        if container is None and item.parent_id is not None:
            parent = next((i for i in graph.items() if i.id == item.parent_id), None)
            container = parent.container if parent is not None else None
        if container is None and GARDEN_SUMMARY_TAG in item.tags:
            container = GARDEN_ENTITY
        if container is None:
            raise McpError(
                f"cannot store an item in {self.name} without an entity: every observation "
                "belongs to one; give NewItem.container (or a parent_id that exists)"
            )
        entity = graph.entity(container)
        if entity is None:
            entity_type = GARDEN_SUMMARY_TAG if container == GARDEN_ENTITY else item.kind
            self.client.call(
                "create_entities",
                {
                    "entities": [
                        {"name": container, "entityType": entity_type, "observations": [item.text]}
                    ]
                },
            )
            added = True
        else:
            answer = self.client.call(
                "add_observations",
                {"observations": [{"entityName": container, "contents": [item.text]}]},
            )
            added = bool(answer and answer[0].get("addedObservations"))
        # add_observations skips a text the entity already has: then this is its first copy.
        existing = list((entity or {}).get("observations") or [])
        occurrence = existing.count(item.text) if added else 0
        return Change(
            action=ctx.action or "create",
            target_kind="observation",
            target_id=observation_id(container, item.text, occurrence),
            after={
                "entity": container,
                "text": item.text,
                "created_entity": entity is None,
                "already_present": not added,
                "not_stored": _not_stored(item),
            },
        )

    def add_fact(self, ctx: WriteContext, fact: NewFact) -> Change:
        """Add a relation between two existing entities (the server would accept dangling ones)."""
        self.require(Capability.KG_ADD)
        graph = self.graph()
        names = {str(e["name"]) for e in graph.entities}
        unknown = [n for n in (fact.subject, fact.object) if n not in names]
        if unknown:
            raise McpError(
                f"cannot add {fact.subject!r} {fact.predicate} {fact.object!r} to {self.name}: "
                f"no entity named {', '.join(map(repr, unknown))}; facts here link existing entities"
            )
        relation = {"from": fact.subject, "to": fact.object, "relationType": fact.predicate}
        created = self.client.call("create_relations", {"relations": [relation]})
        not_stored = [
            f for f in ("valid_at", "confidence", "source") if getattr(fact, f) is not None
        ]
        return Change(
            action=ctx.action or "add-fact",
            target_kind="relation",
            target_id=relation_id(fact.subject, fact.predicate, fact.object),
            after={**relation, "already_present": not created, "not_stored": not_stored},
        )

    # -- structure ----------------------------------------------------------------------------

    def orphans(self, limit: int = 10) -> list[OrphanNode]:
        """Entities in no relation, in file order (the garden-summary entity excepted)."""
        self.require(Capability.STRUCTURE)
        graph = self.graph()
        linked = graph.linked_names()
        out = []
        for entity in graph.entities:
            name = str(entity["name"])
            if (
                name in linked
                or name == GARDEN_ENTITY
                or entity.get("entityType") == GARDEN_SUMMARY_TAG
            ):
                continue
            out.append(
                OrphanNode(
                    id=name,
                    label=f"{name} ({entity.get('entityType')})",
                    node_kind="entity",
                    problem="no relations",
                )
            )
        return out[:limit]

    def link_candidates(self, node: OrphanNode) -> list[LinkCandidate]:
        """Entities the orphan's observations name (``mentions``), or whose observations name
        the orphan (``mentioned_by``), by whole-word match; evidence quotes the sentence."""
        self.require(Capability.STRUCTURE)
        graph = self.graph()
        orphan = graph.entity(node.id)
        if orphan is None:
            return []
        own = [str(o) for o in orphan.get("observations") or []]
        found: dict[str, LinkCandidate] = {}
        for entity in graph.entities:
            name = str(entity["name"])
            if name == node.id or name == GARDEN_ENTITY or len(name) < MIN_LINK_NAME:
                continue
            said = next((o for o in own if _mentions(o, name)), None)
            if said is not None:
                found[name] = LinkCandidate(
                    target_id=name,
                    relation="mentions",
                    evidence=f"{node.id!r} observes: {said!r}",
                )
                continue
            if len(node.id) < MIN_LINK_NAME:
                continue
            theirs = next(
                (str(o) for o in entity.get("observations") or [] if _mentions(str(o), node.id)),
                None,
            )
            if theirs is not None:
                found[name] = LinkCandidate(
                    target_id=name,
                    relation="mentioned_by",
                    evidence=f"{name!r} observes: {theirs!r}",
                )
        return list(found.values())

    def add_link(self, ctx: WriteContext, node: OrphanNode, link: LinkCandidate) -> Change:
        """Create the relation ``node mentions target`` (or ``target mentions node``)."""
        self.require(Capability.STRUCTURE)
        if link.relation == "mentioned_by":
            relation = {"from": link.target_id, "to": node.id, "relationType": "mentions"}
        else:
            relation = {"from": node.id, "to": link.target_id, "relationType": link.relation}
        created = self.client.call("create_relations", {"relations": [relation]})
        return Change(
            action=ctx.action or "reconnect",
            target_kind="relation",
            target_id=relation_id(relation["from"], relation["relationType"], relation["to"]),
            after={**relation, "already_present": not created, "evidence": link.evidence},
        )

    # -- backup -------------------------------------------------------------------------------

    def backup(self, label: str) -> BackupRef:
        """Write the whole graph to a local snapshot file (the server's format) and read it back."""
        self.require(Capability.BACKUP)
        graph = self.graph()
        created = utcnow()
        store_key = hashlib.sha1(self.name.encode("utf-8")).hexdigest()[:8]
        # Time first: the snapshots of a store sort in the order they were taken.
        path = self.backup_dir / f"{created:%Y%m%dT%H%M%S%f}-{_slug(label)}-{store_key}.jsonl"
        try:
            self.backup_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(graph.jsonl(), encoding="utf-8")
            lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        except OSError as exc:
            raise McpError(f"cannot write the snapshot of {self.name} to {path}: {exc}") from exc
        expected = len(graph.entities) + len(graph.relations)
        if len(lines) != expected:
            raise McpError(f"snapshot {path} holds {len(lines)} lines, expected {expected}")
        target = self.memory_file or "the server's MEMORY_FILE_PATH"
        return BackupRef(
            location=str(path.resolve()),
            detail=(
                f"{len(graph.entities)} entities, {len(graph.relations)} relations; to restore, "
                f"stop the server and copy this file over {target}"
            ),
            created_at=created,
        )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:120]


def _not_stored(item: NewItem) -> list[str]:
    """Fields of a new item the server has no place for (reported, not silently dropped)."""
    fields = []
    if item.importance is not None:
        fields.append("importance")
    if item.tags and set(item.tags) != {GARDEN_SUMMARY_TAG}:
        fields.append("tags")
    if item.id is not None:
        fields.append("id")
    return fields


def open_mcp_store(
    command: Sequence[str] | str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    backup_dir: str | os.PathLike[str] | None = None,
    embedder: Embedder | str | None = None,
    name: str | None = None,
) -> McpMemoryStore:
    """Start the server ``command`` names (leading ``NAME=value`` words are its environment)
    and wrap it; the store owns the server process and stops it on :meth:`close`."""
    if isinstance(command, str):
        parsed = parse_stdio_url(
            command if command.startswith("mcp+stdio:") else f"mcp+stdio:{command}"
        )
        env, argv = dict(parsed.env), list(parsed.argv)
    else:
        env, argv = split_env_words(command)
    if not argv:
        raise McpError("an MCP memory store needs a server command after its environment")
    memory_file = env.get("MEMORY_FILE_PATH")
    if memory_file:
        memory_file = env["MEMORY_FILE_PATH"] = resolve_relative(memory_file, cwd)
    client = McpStdioClient(argv, env=env, cwd=cwd, timeout=timeout)
    client.start()
    try:
        return McpMemoryStore(
            client, name=name, memory_file=memory_file, backup_dir=backup_dir, embedder=embedder
        )
    except BaseException:
        client.close()
        raise
