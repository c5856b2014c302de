"""GD0: tools are mapped to capabilities by what they do, whatever they are called."""

from __future__ import annotations

import json

import pytest

from memvault.gardener.adapter import Capability, ToolInfo
from memvault.gardener.capabilities import survey, words
from tests.helpers import FIXTURES

#: The reference MCP memory server's tools, as it describes them.
MCP_MEMORY = [
    ToolInfo("create_entities", "Create multiple new entities in the knowledge graph"),
    ToolInfo("create_relations", "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice"),
    ToolInfo("add_observations", "Add new observations to existing entities in the knowledge graph"),
    ToolInfo("delete_entities", "Delete multiple entities and their associated relations from the knowledge graph"),
    ToolInfo("delete_observations", "Delete specific observations from entities in the knowledge graph"),
    ToolInfo("delete_relations", "Delete multiple relations from the knowledge graph"),
    ToolInfo("read_graph", "Read the entire knowledge graph"),
    ToolInfo("search_nodes", "Search for nodes in the knowledge graph based on a query"),
    ToolInfo("open_nodes", "Open specific nodes in the knowledge graph by their names"),
]  # fmt: skip


def test_words_split_names_and_fold_plurals() -> None:
    assert words("searchMemories") == ["search", "memory"]
    assert words("kb.links/retire-Relations") == ["kb", "link", "retire", "relation"]


def test_the_reference_mcp_server_maps_by_intent() -> None:
    found = survey("mcp:memory", MCP_MEMORY)
    names = {c: t.name for c, t in found.mapping.items()}
    assert names[Capability.SEARCH] == "search_nodes"
    assert names[Capability.KG_ADD] == "create_relations"
    assert names[Capability.KG_SEARCH] == "read_graph"
    assert names[Capability.CREATE] in {"add_observations", "create_entities"}
    assert names[Capability.STATS] == "read_graph"  # a full read can be counted
    # No update, archive, expiry, timeline, journal, backup or artifact tool: missing.
    for capability in (
        Capability.MUTATE,
        Capability.ARCHIVE,
        Capability.EXPIRE,
        Capability.KG_INVALIDATE,
        Capability.KG_TIMELINE,
        Capability.JOURNAL,
        Capability.BACKUP,
        Capability.ARTIFACT,
    ):
        assert capability in found.missing
        assert found.searched[capability], "a missing capability was searched for by intent first"
    # A delete serves only `delete` (a lossless merge in autonomous mode, where the adapter
    # can remove one item alone), never archive or anything else.
    assert names[Capability.DELETE] == "delete_observations"
    assert set(found.unused_destructive) == {"delete_entities", "delete_relations"}
    assert not {t.name for t in found.mapping.values()} & set(found.unused_destructive)
    assert "(missing: " in found.summary() and "delete" not in found.summary().split("(")[1]
    assert found.unknown == []


def test_odd_names_are_found_through_their_descriptions() -> None:
    tools = [
        ToolInfo("kb_links_retire", "Retire a link between two notes; its history is kept."),
        ToolInfo("memory_delete", "Soft-delete a memory: it is archived and can be restored."),
        ToolInfo("ttl", "Set when a note should expire."),
        ToolInfo("x1", "Persist a report document for later."),
        ToolInfo("x2", "Take a snapshot of the whole database."),
        ToolInfo("x3", "Append an entry to the diary."),
        ToolInfo("notes_query", "Find notes by text."),
        ToolInfo("wipe_everything", "Delete all data."),
    ]
    found = survey("custom", tools)
    names = {c: t.name for c, t in found.mapping.items()}
    assert names[Capability.KG_INVALIDATE] == "kb_links_retire"
    assert names[Capability.ARCHIVE] == "memory_delete"
    assert names[Capability.EXPIRE] == "ttl"
    assert names[Capability.ARTIFACT] == "x1"
    assert names[Capability.BACKUP] == "x2"
    assert names[Capability.JOURNAL] == "x3"
    assert names[Capability.SEARCH] == "notes_query"
    assert "wipe_everything" in found.unused_destructive
    assert "description" in found.evidence[Capability.ARCHIVE]


@pytest.mark.parametrize(
    ("tool", "capability"),
    [
        (ToolInfo("update_memory", "Change a stored memory in place."), Capability.MUTATE),
        (
            ToolInfo("find_duplicates", "Near-duplicate check for a text."),
            Capability.DUPLICATE_CHECK,
        ),
        (ToolInfo("fact_history", "History of a fact over time."), Capability.KG_TIMELINE),
        (ToolInfo("store_stats", "Counts of items."), Capability.STATS),
        (
            ToolInfo("relink_orphan", "Reconnect an orphan note to a collection."),
            Capability.STRUCTURE,
        ),
    ],
)
def test_one_tool_one_capability(tool: ToolInfo, capability: Capability) -> None:
    assert survey("s", [tool]).mapping.get(capability) == tool


def test_no_tools_no_capabilities() -> None:
    found = survey("empty", [])
    assert found.capabilities == set()
    assert found.summary().startswith("no capabilities")


def listed_tools(server: str) -> list[ToolInfo]:
    """A real server's ``tools/list`` answer, as recorded from the pinned version
    (tests/fixtures/mcp/tools-<server>.json)."""
    data = json.loads((FIXTURES / "mcp" / f"tools-{server}.json").read_text(encoding="utf-8"))
    return [ToolInfo(t["name"], t["description"], t["inputSchema"]) for t in data["tools"]]


def test_the_knowledge_graph_server_updates_in_place() -> None:
    """@itseasy21/mcp-knowledge-graph: the reference server's tools plus update_entities and
    update_relations; update_* is update in place, the deletes serve delete only."""
    found = survey("kg", listed_tools("mcp-knowledge-graph"))
    names = {c: t.name for c, t in found.mapping.items()}
    assert names[Capability.MUTATE] == "update_entities"
    assert names[Capability.DELETE] == "delete_observations"
    assert Capability.ARCHIVE in found.missing and Capability.EXPIRE in found.missing
    # Its records carry createdAt, but no tool says so: the adapter reports what it reads.
    assert Capability.TIMESTAMPS in found.missing
    assert found.unknown == []  # update_relations is an update in place too


def test_the_memory_keeper_maps_context_items_and_lists_the_tools_it_does_not_know() -> None:
    """mcp-memory-keeper (38 tools, context items in SQLite): found by names, descriptions
    and input schemas; tools that match no intent are listed, never guessed at."""
    found = survey("keeper", listed_tools("mcp-memory-keeper"))
    names = {c: t.name for c, t in found.mapping.items()}
    assert names[Capability.SEARCH] == "context_search"
    assert names[Capability.MUTATE] == "context_batch_update"
    assert names[Capability.DELETE] == "context_batch_delete"
    assert names[Capability.JOURNAL] == "context_journal_entry"
    assert names[Capability.BACKUP] == "context_checkpoint"
    assert Capability.TIMESTAMPS in found.capabilities
    assert Capability.ARCHIVE in found.missing and Capability.ARTIFACT in found.missing
    assert "context_delegate" in found.unknown and "context_visualize" in found.unknown
    assert not set(found.unknown) & {t.name for t in found.mapping.values()}
    assert "(unknown tools, not used: " in found.summary()


def test_an_input_schema_shows_times_a_name_does_not() -> None:
    """A tool called ``fetch`` whose parameters filter by creation time returns records
    with times: ``timestamps`` by input schema (and only by the schema)."""
    tool = ToolInfo(
        "fetch",
        "Fetch saved things.",
        {"type": "object", "properties": {"createdAfter": {"type": "string"}}},
    )
    found = survey("s", [tool])
    assert found.mapping.get(Capability.TIMESTAMPS) == tool
    assert found.evidence[Capability.TIMESTAMPS] == "fetch (input schema: filter by time)"
    assert survey("s", [ToolInfo("fetch", "Fetch saved things.")]).mapping == {}


def test_a_tool_nobody_knows_is_listed_not_guessed() -> None:
    found = survey("s", [ToolInfo("frobnicate", "Frobnicates the widget."), *MCP_MEMORY])
    assert found.unknown == ["frobnicate"]
    assert "frobnicate" not in {t.name for t in found.mapping.values()}
