"""GD0: tools are mapped to capabilities by what they do, whatever they are called."""

from __future__ import annotations

import pytest

from memvault.gardener.adapter import Capability, ToolInfo
from memvault.gardener.capabilities import survey, words

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
    # Plain deletes serve nothing: the gardener never hard-deletes.
    assert set(found.unused_destructive) == {
        "delete_entities",
        "delete_observations",
        "delete_relations",
    }
    assert not {t.name for t in found.mapping.values()} & set(found.unused_destructive)
    assert "(missing: " in found.summary()


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
