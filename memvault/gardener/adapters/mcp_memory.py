"""MCP knowledge-graph memory servers as stores the gardener tends.

Two servers share this data model: the reference ``@modelcontextprotocol/server-memory``
(described first) and ``@itseasy21/mcp-knowledge-graph``, which adds ``update_entities`` /
``update_relations`` and a ``createdAt`` and ``version`` on every entity and relation (the
last paragraphs). The adapter keeps what the server's tools really allow.

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

With ``update_entities`` (the knowledge-graph server) two more capabilities are bound,
both by rewriting one entity's observation list in place: **mutate** (an observation's
text changed where it stands; importance, tags and the like have no place and are refused)
and **delete** (one copy of a text the entity holds twice removed, the earlier copy kept;
the dedup phase asks for it only for such a lossless merge in autonomous mode). Records
with a ``createdAt`` give real times (**timestamps**, observed at bind): a relation's is
its creation, an entity's its last write; observations present at the first look keep
their entity's time then as their creation, and an entity's later writes count as touches,
so decay can tell untouched items (which here carry no importance to lower: the report
says so) and the fact phase can order stale facts. Snapshots keep every field.
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

from memvault.gardener.adapter import (
    GARDEN_SUMMARY_TAG,
    BackupRef,
    Capability,
    Change,
    Fact,
    FactQuery,
    ItemChanges,
    ItemQuery,
    LinkCandidate,
    MemoryItem,
    NewFact,
    NewItem,
    OrphanNode,
    ToolInfo,
    WriteContext,
)
from memvault.gardener.adapters.embedded_items import EmbeddedItems
from memvault.gardener.mcp_client import (
    DEFAULT_TIMEOUT,
    McpError,
    McpStdioClient,
    parse_stdio_url,
    resolve_relative,
    split_env_words,
)
from memvault.normalize import utcnow

if TYPE_CHECKING:
    from memvault.embed import Embedder
    from memvault.gardener.adapters.mcp_context import KeeperStore

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
    Capability.MUTATE: frozenset({"update_entities", "read_graph"}),
    # One copy of a repeated observation goes by rewriting its entity's list in place:
    # delete_observations would remove every copy of the text.
    Capability.DELETE: frozenset({"update_entities", "read_graph"}),
    Capability.CREATE: frozenset({"add_observations", "create_entities", "read_graph"}),
    Capability.DUPLICATE_CHECK: frozenset({"read_graph"}),
    Capability.KG_ADD: frozenset({"create_relations", "read_graph"}),
    Capability.KG_SEARCH: frozenset({"read_graph"}),
    Capability.STRUCTURE: frozenset({"create_relations", "read_graph"}),
    Capability.STATS: frozenset({"read_graph"}),
    Capability.BACKUP: frozenset({"read_graph"}),
}
#: How this adapter serves a capability, where it is not the tool the survey names.
HOW: Mapping[Capability, str] = {
    Capability.MUTATE: "an observation's text is changed by rewriting its entity's "
    "observations with update_entities",
    Capability.DELETE: "one copy of a repeated observation is removed by rewriting its entity "
    "with update_entities (delete_observations would remove every copy)",
}
#: Why a capability is declined when the server lacks the tools it needs.
WITHOUT: Mapping[Capability, str] = {
    Capability.MUTATE: "no update_entities: an observation cannot be changed in place (delete "
    "and re-create would fake it)",
    Capability.DELETE: "no update_entities: delete_observations removes every copy of a text, so "
    "one repeat cannot be removed alone",
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
                    **_other_fields(e, ("type", "name", "entityType", "observations")),
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
                    **_other_fields(r, ("type", "from", "to", "relationType")),
                },
                ensure_ascii=False,
            )
            for r in self.relations
        ]
        return "\n".join(lines)

    def timed_share(self) -> tuple[int, int]:
        """(records with a ``createdAt``, records): entities and relations together."""
        records = [*self.entities, *self.relations]
        return sum(1 for r in records if record_time(r) is not None), len(records)


def _other_fields(record: Mapping[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    """Fields a server keeps beyond the reference layout (``createdAt``, ``version``): a
    snapshot keeps them, so restoring it restores them."""
    return {k: v for k, v in record.items() if k not in known}


def record_time(record: Mapping[str, Any]) -> dt.datetime | None:
    """A record's ``createdAt`` as naive UTC (the knowledge-graph server sets it when the
    entity or relation is created and again whenever it is updated), else None."""
    raw = record.get("createdAt")
    if not isinstance(raw, str) or not raw:
        return None
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(dt.UTC).replace(tzinfo=None) if when.tzinfo else when


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
                    "recorded_at": record_time(entity),
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

    def stamp(
        self,
        ids: Sequence[str],
        now: dt.datetime,
        recorded: Mapping[str, dt.datetime | None] | None = None,
    ) -> dict[str, dt.datetime | None]:
        """Record a full read at ``now`` of exactly these ids; their first-seen times. On the
        very first read the ids are the baseline: they get the time their record shows
        (``recorded``, a server that keeps one), else none; that time stays, so a later
        rewrite of the record does not make them new."""
        seen = self._load()
        fresh = self._last_read  # None on the very first read: those items are the baseline

        def first(i: str) -> str | None:
            if fresh is not None:
                return fresh
            when = (recorded or {}).get(i)
            return when.isoformat() if when is not None else None

        updated = {i: seen[i] if i in seen else first(i) for i in ids}
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


class McpMemoryStore(EmbeddedItems):
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
        self.init_embedding(embedder)
        self._owns_client = owns_client
        self.bound = {}
        #: Capabilities the survey offered that this adapter does not take, with the reason.
        self.declined: dict[Capability, str] = {}
        #: What the store's records show (times), found by reading them at bind.
        self.observed: dict[Capability, str] = {}
        #: How a bound capability is served where the survey's tool is not the one called.
        self.explained: dict[Capability, str] = {}

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
                self.declined[capability] = WITHOUT.get(capability, f"the server lacks {missing}")
            else:
                self.bound[capability] = tool
        self.explained = {c: how for c, how in HOW.items() if c in self.bound}
        self.observed = {}
        if "read_graph" in available:
            timed, records = self.graph().timed_share()
            if timed:
                self.observed[Capability.TIMESTAMPS] = (
                    f"read_graph returns createdAt on {timed} of {records} entities and "
                    "relations (the time of their last write)"
                )

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    # -- reading ------------------------------------------------------------------------------

    def graph(self) -> Graph:
        """The whole graph, read now (the server re-reads its file on every call); every full
        read also updates the first-seen times (see :class:`FirstSeen`)."""
        graph = Graph.parse(self.client.call("read_graph"))
        recorded = {i.id: i.extra.get("recorded_at") for i in graph.items()}
        recorded |= {f.id: record_time(r) for f, r in zip(graph.facts(), graph.relations, strict=True)}  # fmt: skip
        self.first_seen.stamp(list(recorded), utcnow(), recorded)
        return graph

    def _timed(self, items: list[MemoryItem]) -> list[MemoryItem]:
        """Items with their times: created when first seen (the baseline of a server with
        times: the record's time at the first look); touched when first seen or when the
        entity was last written (its ``createdAt``), whichever is later. A repeat of a text
        sorts a microsecond after the copy before it (it was written later)."""
        times = self.first_seen.lookup([i.id for i in items])
        out = []
        for item in items:
            seen, recorded = times[item.id], item.extra.get("recorded_at")
            created = seen
            if created is not None and item.extra.get("occurrence"):
                created += dt.timedelta(microseconds=int(item.extra["occurrence"]))
            touched = max((t for t in (seen, recorded) if t is not None), default=None)
            out.append(
                dataclasses.replace(
                    item, created_at=created, updated_at=touched or created, last_touched_at=touched
                )
            )
        return out

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
        """Items by ``query``. Times are first-seen times, else the records' own ``createdAt``
        (None: there before memvault looked on a server without times, which counts as older
        than any time); "oldest" is that time, then file order. ``untouched_before`` selects
        by the last write a record shows; on a server without times it selects nothing (the
        server records no reads, and nothing is called stale without evidence)."""
        self.require(Capability.SEARCH)
        if query.status not in (None, "active"):
            return []
        if query.untouched_before is not None and Capability.TIMESTAMPS not in self.observed:
            return []
        items = self.items()
        if query.untouched_before is not None:
            cutoff = query.untouched_before
            items = [
                i for i in items if i.last_touched_at is not None and i.last_touched_at < cutoff
            ]
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
        if query.order == "stalest":
            items.sort(key=lambda i: i.last_touched_at or i.created_at or far)
        elif query.order == "oldest":
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
        """Relations in file order (= creation order), ``created_at`` = their ``createdAt``
        where the server keeps one, else first seen; all are active (the server cannot retire
        one)."""
        self.require(Capability.KG_SEARCH)
        graph = self.graph()
        facts = graph.facts()
        times = self.first_seen.lookup([f.id for f in facts])
        recorded = [record_time(r) for r in graph.relations]
        out = [
            dataclasses.replace(f, created_at=when or times[f.id])
            for f, when in zip(facts, recorded, strict=True)
        ]
        out = [
            f
            for f in out
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

    # -- writing in place (a server with update_entities) ---------------------------------------

    def _find(self, graph: Graph, item_id: str) -> tuple[MemoryItem, dict[str, Any]]:
        item = next((i for i in graph.items() if i.id == item_id), None)
        entity = graph.entity(item.container) if item is not None and item.container else None
        if item is None or entity is None:
            raise McpError(f"no observation {item_id} in {self.name} (changed meanwhile?)")
        return item, entity

    def _rewrite(self, entity: Mapping[str, Any], observations: list[str]) -> None:
        """The entity's whole observation list, replaced in place (``update_entities`` keeps
        its type and bumps its version and ``createdAt``)."""
        self.client.call(
            "update_entities",
            {"entities": [{"name": entity["name"], "observations": observations}]},
        )

    def update_item(self, ctx: WriteContext, item_id: str, changes: ItemChanges) -> Change:
        """Change an observation's text where it stands. The server has no place for an
        importance, tags, a parent or scores: a change of nothing else is refused."""
        self.require(Capability.MUTATE)
        not_stored = [f for f in ("importance", "tags", "parent_id", "scores")
                      if getattr(changes, f) is not None]  # fmt: skip
        graph = self.graph()
        item, entity = self._find(graph, item_id)
        if changes.text is None or changes.text == item.text:
            raise McpError(
                f"{self.name} keeps only an observation's text; nothing else to change on "
                f"{item_id} ({', '.join(not_stored) or 'no field given'})"
            )
        observations = [str(o) for o in entity.get("observations") or []]
        index = int(item.extra["index"])
        observations[index] = changes.text
        self._rewrite(entity, observations)
        occurrence = observations[:index].count(changes.text)
        return Change(
            action=ctx.action or "update",
            target_kind="observation",
            target_id=observation_id(str(entity["name"]), changes.text, occurrence),
            before={"entity": entity["name"], "text": item.text, "index": index},
            after={"entity": entity["name"], "text": changes.text, "index": index,
                   "was": item_id, "not_stored": not_stored},
        )  # fmt: skip

    def delete_item(self, ctx: WriteContext, item_id: str, *, duplicate_of: str) -> Change:
        """Remove one copy of a text its entity holds twice: ``duplicate_of`` is an earlier
        copy on the same entity, which stays. Anything else is refused (nothing is deleted
        that the entity would not still say)."""
        self.require(Capability.DELETE)
        graph = self.graph()
        item, entity = self._find(graph, item_id)
        kept, _ = self._find(graph, duplicate_of)
        if kept.container != item.container or kept.text != item.text:
            raise McpError(
                f"{item_id} is not a repeat of {duplicate_of} on the same entity in {self.name}: "
                "nothing deleted"
            )
        if int(kept.extra["occurrence"]) > int(item.extra["occurrence"]):
            raise McpError(f"{duplicate_of} is a later copy than {item_id}: keep the first copy")
        observations = [str(o) for o in entity.get("observations") or []]
        index = int(item.extra["index"])
        remaining = observations[:index] + observations[index + 1 :]
        self._rewrite(entity, remaining)
        return Change(
            action=ctx.action or "delete",
            target_kind="observation",
            target_id=item_id,
            before={"entity": entity["name"], "text": item.text, "index": index,
                    "observations": observations},
            after={"entity": entity["name"], "observations": remaining, "kept": duplicate_of},
        )  # fmt: skip

    # -- writing (additions) ------------------------------------------------------------------

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
) -> McpMemoryStore | KeeperStore:
    """Start the server ``command`` names (leading ``NAME=value`` words are its environment)
    and wrap it in the adapter of its data model, which its tools tell: context items
    (``mcp-memory-keeper``, :mod:`~memvault.gardener.adapters.mcp_context`), else a graph of
    entities and observations (this module). The store owns the server process and stops it
    on :meth:`close`."""
    from memvault.gardener.adapters.mcp_context import SIGNATURE, KeeperStore

    if isinstance(command, str):
        parsed = parse_stdio_url(
            command if command.startswith("mcp+stdio:") else f"mcp+stdio:{command}"
        )
        env, argv = dict(parsed.env), list(parsed.argv)
    else:
        env, argv = split_env_words(command)
    if not argv:
        raise McpError("an MCP memory store needs a server command after its environment")
    # Relative paths mean the working directory (the servers resolve them elsewhere).
    for variable in ("MEMORY_FILE_PATH", "DATA_DIR"):
        if env.get(variable):
            env[variable] = resolve_relative(env[variable], cwd)
    client = McpStdioClient(argv, env=env, cwd=cwd, timeout=timeout)
    client.start()
    try:
        if client.tool_names() >= SIGNATURE:
            return KeeperStore(client, name=name, data_dir=env.get("DATA_DIR"), embedder=embedder)
        return McpMemoryStore(
            client,
            name=name,
            memory_file=env.get("MEMORY_FILE_PATH"),
            backup_dir=backup_dir,
            embedder=embedder,
        )
    except BaseException:
        client.close()
        raise
