"""``mcp-memory-keeper`` as a store the gardener tends: context items in SQLite.

The npm package ``mcp-memory-keeper`` keeps *context items* (a unique key, a text value,
a category, a priority high / normal / low, a channel, created and updated times) in
sessions, plus journal entries and named checkpoints, in ``$DATA_DIR/context.db``. A
server started again on the same ``DATA_DIR`` continues its session; this adapter tends
the items of that session (the ones the agent's own calls see by default).

How the gardener's model maps onto it:

* **items are context items**: id = key, text = value, container = channel, tags = the
  category, importance = the priority (high 0.9, normal 0.5, low 0.1). A change of
  importance moves the priority one step (a lower importance one step down), since three
  steps are all the server has; created / updated / last touched are the server's own
  ``created_at`` / ``updated_at`` (UTC), so windows and staleness use real times.
* **capabilities** (what :meth:`KeeperStore.bind` keeps): search (``context_get``, paged,
  with metadata; ``context_search``), create (``context_save``), mutate
  (``context_batch_update``: value and priority), delete (``context_batch_delete``; the
  server logs the old value in its change history; the gardener uses it only for a
  lossless merge in autonomous mode), duplicate check (computed here with memvault's
  embedder over every item: the server's semantic search gives no scores to trust), stats
  (item counts from ``context_get``), timestamps, journal (``context_journal_entry``, read
  back through ``context_timeline``) and backup: ``context_export`` writes the session
  (every item's key, value, category, priority, channel and times) to a JSON file, copied
  here to ``<DATA_DIR>/garden-snapshots/``; ``context_import`` restores it. Not
  ``context_checkpoint``, which the survey names first: a checkpoint only *references*
  the items (by id, deleted with them), so it cannot bring back a changed or deleted one.
* **declined**: links between items (``context_link``) are not the graph the reconnect
  and fact phases tend (no orphans, no facts with subjects and objects), and there is no
  archive, expiry or document storage.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.gardener.adapter import (
    GARDEN_SUMMARY_TAG,
    BackupRef,
    Capability,
    Change,
    ItemChanges,
    ItemQuery,
    JournalEntry,
    MemoryItem,
    NewItem,
    ToolInfo,
    WriteContext,
    apply_item_query,
)
from memvault.gardener.adapters.embedded_items import EmbeddedItems
from memvault.gardener.mcp_client import McpError, McpStdioClient
from memvault.normalize import utcnow

if TYPE_CHECKING:
    from memvault.embed import Embedder

#: Priority ↔ importance: three steps, the lowest at the gardener's minimum importance.
PRIORITIES: tuple[tuple[str, float], ...] = (("low", 0.1), ("normal", 0.5), ("high", 0.9))
IMPORTANCE = dict(PRIORITIES)
#: The tools that tell this server apart: ``open_mcp_store`` picks this adapter by them.
SIGNATURE = frozenset({"context_save", "context_get", "context_batch_update"})
#: The server tools each capability of this adapter calls.
NEEDS: Mapping[Capability, frozenset[str]] = {
    Capability.SEARCH: frozenset({"context_get", "context_search"}),
    Capability.CREATE: frozenset({"context_save"}),
    Capability.MUTATE: frozenset({"context_batch_update", "context_get"}),
    Capability.DELETE: frozenset({"context_batch_delete", "context_get"}),
    Capability.DUPLICATE_CHECK: frozenset({"context_get"}),
    Capability.STATS: frozenset({"context_get"}),
    Capability.TIMESTAMPS: frozenset({"context_get"}),
    Capability.JOURNAL: frozenset({"context_journal_entry", "context_timeline"}),
    Capability.BACKUP: frozenset({"context_export", "context_import"}),
}
#: How a capability is served where the survey named another tool.
HOW: Mapping[Capability, str] = {
    Capability.SEARCH: "items listed with context_get (paged, with metadata)",
    Capability.DUPLICATE_CHECK: "cosine of memvault's embedder over every item (the server's "
    "semantic search gives no scores to trust)",
    Capability.STATS: "item counts from context_get",
    Capability.CREATE: "context_save",
    Capability.TIMESTAMPS: "created_at / updated_at of every item (context_get with metadata)",
    Capability.BACKUP: "context_export, copied to garden-snapshots/, restored with "
    "context_import (a checkpoint only references the items: it cannot bring back a changed "
    "or deleted one)",
}
PAGE = 100


def priority_for(importance: float, current: str) -> str:
    """The priority one step from ``current`` in the direction ``importance`` moved."""
    order = [name for name, _ in PRIORITIES]
    step = (importance > IMPORTANCE[current]) - (importance < IMPORTANCE[current])
    return order[min(len(order) - 1, max(0, order.index(current) + step))]


def _time(value: Any) -> dt.datetime | None:
    """The server's ``YYYY-MM-DD HH:MM:SS`` (UTC) or ISO time, as naive UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(dt.UTC).replace(tzinfo=None) if when.tzinfo else when


def _item(row: Mapping[str, Any]) -> MemoryItem:
    priority = str(row.get("priority") or "normal")
    category = row.get("category")
    created, updated = _time(row.get("created_at")), _time(row.get("updated_at"))
    summary = str(row["key"]).startswith("garden-summary")
    return MemoryItem(
        id=str(row["key"]),
        text=str(row.get("value") or ""),
        kind="context_item",
        importance=IMPORTANCE.get(priority),
        pinned=summary,
        tags=(GARDEN_SUMMARY_TAG,) if summary else ((str(category),) if category else ()),
        container=str(row.get("channel") or "general"),
        created_at=created,
        updated_at=updated or created,
        last_touched_at=updated or created,
        extra={"priority": priority, "category": category},
    )


class KeeperStore(EmbeddedItems):
    """A gardener store over a running ``mcp-memory-keeper`` (see the module docstring)."""

    def __init__(
        self,
        client: McpStdioClient,
        *,
        name: str | None = None,
        data_dir: str | None = None,
        embedder: Embedder | str | None = None,
    ) -> None:
        self.client = client
        self.data_dir = data_dir
        self.name = name or f"mcp:{client.server_name}:{data_dir or client.command.display}"
        self.init_embedding(embedder)
        self.bound = {}
        self.declined: dict[Capability, str] = {}
        self.explained: dict[Capability, str] = {}
        self.observed: dict[Capability, str] = {}

    # -- survey -------------------------------------------------------------------------------

    def tools(self) -> list[ToolInfo]:
        return [
            ToolInfo(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in self.client.tools()
        ]

    def bind(self, mapping: Mapping[Capability, ToolInfo]) -> None:
        """Keep what this adapter implements with tools the server has; what the survey
        found that it does not implement is declined with the reason."""
        available = {t.name for t in self.client.tools()}
        self.bound, self.declined = {}, {}
        for capability, tool in mapping.items():
            needs = NEEDS.get(capability)
            if needs is None:
                self.declined[capability] = (
                    f"{tool.name} looked like {capability.value}, but context items have no "
                    "graph of subjects, objects or orphans for it (see "
                    "memvault.gardener.adapters.mcp_context)"
                )
            elif not needs <= available:
                self.declined[capability] = f"the server lacks {', '.join(sorted(needs - available))}"  # fmt: skip
            else:
                self.bound[capability] = tool
        for capability in (Capability.DUPLICATE_CHECK, Capability.STATS):
            if capability not in self.bound and NEEDS[capability] <= available:
                self.bound[capability] = next(t for t in self.tools() if t.name == "context_get")
        self.explained = {c: how for c, how in HOW.items() if c in self.bound}
        self.observed = {}
        if "context_get" in available:
            rows = self._rows()
            timed = sum(1 for r in rows if _time(r.get("updated_at")) is not None)
            if timed:
                self.observed[Capability.TIMESTAMPS] = (
                    f"context_get returns created_at / updated_at on {timed} of {len(rows)} items"
                )

    def close(self) -> None:
        self.client.close()

    # -- reading ------------------------------------------------------------------------------

    def _rows(self) -> list[dict[str, Any]]:
        """Every item of the session, oldest first, with its metadata (paged)."""
        rows: list[dict[str, Any]] = []
        while True:
            answer = self.client.call(
                "context_get",
                {"includeMetadata": True, "sort": "created_asc", "limit": PAGE, "offset": len(rows)},
            )  # fmt: skip
            if not isinstance(answer, dict):
                raise McpError(f"context_get answered {type(answer).__name__}, expected an object")
            page = list(answer.get("items") or [])
            rows += page
            if not page or not (answer.get("pagination") or {}).get("hasMore"):
                return rows

    def items(self) -> list[MemoryItem]:
        return [_item(r) for r in self._rows()]

    def search(self, text: str, limit: int = 10) -> list[MemoryItem]:
        self.require(Capability.SEARCH)
        answer = self.client.call(
            "context_search", {"query": text, "includeMetadata": True, "limit": limit}
        )
        rows = answer.get("items") if isinstance(answer, dict) else None
        return [_item(r) for r in rows or []][:limit]

    def list_items(self, query: ItemQuery) -> list[MemoryItem]:
        self.require(Capability.SEARCH)
        return apply_item_query(self.items(), query)

    def get_items(self, ids: Sequence[str]) -> list[MemoryItem]:
        self.require(Capability.SEARCH)
        by_id = {i.id: i for i in self.items()}
        return [by_id[i] for i in ids if i in by_id]

    def about(self, item_ids: Sequence[str], limit: int = 5) -> list[tuple[str, int]]:
        """What items are about, for the journal: their categories, most first."""
        counts: dict[str, int] = {}
        for item in self.get_items(item_ids):
            for tag in item.tags:
                if tag != GARDEN_SUMMARY_TAG:
                    counts[tag] = counts.get(tag, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def stats(self) -> dict[str, int]:
        self.require(Capability.STATS)
        return {"items_active": len(self._rows())}

    # -- writing ------------------------------------------------------------------------------

    def _one(self, item_id: str) -> MemoryItem:
        found = self.get_items([item_id])
        if not found:
            raise McpError(f"no context item {item_id!r} in {self.name} (changed meanwhile?)")
        return found[0]

    def create_item(self, ctx: WriteContext, item: NewItem) -> Change:
        """``context_save`` under a key of the gardener's (``garden-summary-<run>`` for the
        summary item, else ``garden-<run>-<hash>``); tags other than the summary's, a parent
        and an id have no place here and are reported as not stored."""
        self.require(Capability.CREATE)
        digest = hashlib.sha1(item.text.encode("utf-8")).hexdigest()[:8]
        summary = GARDEN_SUMMARY_TAG in item.tags
        key = f"garden-summary-{ctx.run_id}" if summary else f"garden-{ctx.run_id}-{digest}"
        importance = item.importance if item.importance is not None else 0.5
        priority = min(PRIORITIES, key=lambda p: abs(p[1] - importance))[0]
        arguments = {"key": key, "value": item.text, "category": "note", "priority": priority}
        if item.container:
            arguments["channel"] = item.container
        self.client.call("context_save", arguments)
        not_stored = [f for f in ("parent_id", "id") if getattr(item, f) is not None]
        if item.tags and not summary:
            not_stored.append("tags")
        return Change(
            action=ctx.action or "create",
            target_kind="context_item",
            target_id=key,
            after={**arguments, "not_stored": not_stored},
        )

    def update_item(self, ctx: WriteContext, item_id: str, changes: ItemChanges) -> Change:
        """``context_batch_update`` of the value and / or the priority (one step)."""
        self.require(Capability.MUTATE)
        item = self._one(item_id)
        update: dict[str, Any] = {"key": item_id}
        if changes.text is not None and changes.text != item.text:
            update["value"] = changes.text
        current = str(item.extra.get("priority") or "normal")
        if changes.importance is not None:
            priority = priority_for(changes.importance, current)
            if priority != current:
                update["priority"] = priority
        not_stored = [f for f in ("tags", "parent_id", "scores") if getattr(changes, f) is not None]  # fmt: skip
        if len(update) == 1:
            raise McpError(f"nothing to change on {item_id} in {self.name} ({not_stored or 'no field'})")  # fmt: skip
        answer = self.client.call("context_batch_update", {"updates": [update]})
        if not isinstance(answer, dict) or answer.get("succeeded") != 1:
            raise McpError(f"context_batch_update did not update {item_id}: {answer!r}")
        return Change(
            action=ctx.action or "update",
            target_kind="context_item",
            target_id=item_id,
            before={"key": item_id, "value": item.text, "priority": current},
            after={**update, "not_stored": not_stored},
        )

    def delete_item(self, ctx: WriteContext, item_id: str, *, duplicate_of: str) -> Change:
        """``context_batch_delete`` of one key whose value ``duplicate_of`` (kept, same channel)
        holds word for word; anything else is refused."""
        self.require(Capability.DELETE)
        item, kept = self._one(item_id), self._one(duplicate_of)
        if kept.text != item.text or kept.container != item.container:
            raise McpError(f"{item_id} is not a repeat of {duplicate_of} in {self.name}: nothing deleted")  # fmt: skip
        answer = self.client.call("context_batch_delete", {"keys": [item_id]})
        if not isinstance(answer, dict) or answer.get("totalDeleted") != 1:
            raise McpError(f"context_batch_delete did not delete {item_id}: {answer!r}")
        return Change(
            action=ctx.action or "delete",
            target_kind="context_item",
            target_id=item_id,
            before={"key": item_id, "value": item.text, "priority": item.extra.get("priority"),
                    "category": item.extra.get("category"), "channel": item.container,
                    "created_at": item.created_at, "updated_at": item.updated_at},
            after={"kept": duplicate_of},
        )  # fmt: skip

    # -- journal and backup -------------------------------------------------------------------

    def last_journal(self) -> JournalEntry | None:
        self.require(Capability.JOURNAL)
        answer = self.client.call("context_timeline", {})
        entries = answer.get("journal_entries") if isinstance(answer, dict) else None
        if not entries:
            return None
        newest = max(entries, key=lambda e: str(e.get("created_at") or ""))
        text = str(newest.get("entry") or "")
        digest = hashlib.sha1(f"{newest.get('created_at')}|{text}".encode()).hexdigest()[:12]
        return JournalEntry(id=f"journal-{digest}", text=text, created_at=_time(newest.get("created_at")))  # fmt: skip

    def write_journal(self, ctx: WriteContext, text: str) -> Change:
        self.require(Capability.JOURNAL)
        answer = str(self.client.call("context_journal_entry", {"entry": text, "tags": ["garden"]}))
        found = re.search(r"ID: (\S+)", answer)
        return Change(
            action=ctx.action or "journal",
            target_kind="journal_entry",
            target_id=found.group(1) if found else f"journal-{ctx.run_id}",
            after={"entry": text},
        )

    def backup(self, label: str) -> BackupRef:
        """The session exported by the server, the file copied under a name of its own (the
        server reuses one file per session) and read back: every item must be in it."""
        self.require(Capability.BACKUP)
        answer = str(self.client.call("context_export", {"format": "json"}))
        found = re.search(r"Exported session to: (.+\.json)", answer)
        if found is None:
            raise McpError(f"context_export did not say where it wrote: {answer[:200]!r}")
        exported = Path(found.group(1).strip())
        folder = Path(self.data_dir) / "garden-snapshots" if self.data_dir else exported.parent
        created = utcnow()
        target = folder / f"{created:%Y%m%dT%H%M%S%f}-{re.sub(r'[^A-Za-z0-9._-]+', '-', label)[:100]}.json"  # fmt: skip
        try:
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(exported, target)
            held = len(json.loads(target.read_text(encoding="utf-8")).get("contextItems") or [])
        except (OSError, ValueError) as exc:
            raise McpError(f"cannot keep the export of {self.name} at {target}: {exc}") from exc
        expected = len(self._rows())
        if held != expected:
            raise McpError(f"snapshot {target} holds {held} items, the session {expected}")
        return BackupRef(
            location=str(target.resolve()),
            detail=f"{held} context items; to restore, copy it into the server's exports "
            "directory and call context_import with its path",
            created_at=created,
        )
