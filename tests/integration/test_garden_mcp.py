"""The gardener tending the reference MCP memory server (GD9), end to end and adapter-level.

Every test starts its own server on a fresh copy of ``tests/fixtures/mcp/memory.jsonl``
(see ``tests/integration/mcp_server.py`` for what that graph holds) and compares the
file before and after: the adapter only ever *adds* to this store.
"""

from __future__ import annotations

import datetime as dt
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import memvault
from memvault.gardener.adapter import (
    Capability,
    CapabilityMissing,
    FactQuery,
    ItemChanges,
    ItemQuery,
    NewFact,
    NewItem,
    WriteContext,
)
from memvault.gardener.adapters import open_garden_store
from memvault.gardener.adapters.mcp_memory import (
    GARDEN_ENTITY,
    McpMemoryStore,
    observation_id,
    open_mcp_store,
)
from memvault.gardener.capabilities import survey
from memvault.gardener.ledger import Ledger, Proposal
from memvault.gardener.mcp_client import McpError
from memvault.gardener.report import parse_report
from memvault.gardener.run import GardenResult, run_garden
from memvault.gardener.state import GardenConfig, Mode
from memvault.judge import HeuristicJudge
from memvault.normalize import utcnow
from tests.integration.mcp_server import MemoryServer, read_graph_file

pytestmark = pytest.mark.integration

CTX = WriteContext(run_id="garden-test", phase="test", reason="test")
FOUND = {
    "search",
    "create",
    "duplicate_check",
    "kg_add",
    "kg_search",
    "structure",
    "stats",
    "backup",
}


def _open(server: MemoryServer, tmp_path: Path) -> McpMemoryStore:
    store = open_garden_store(server.url, backup_dir=tmp_path / "snapshots", embedder="hashing")
    assert isinstance(store, McpMemoryStore)
    store.bind(survey(store.name, store.tools()).mapping)
    return store


@pytest.fixture
def mcp_store(mcp_memory: MemoryServer, tmp_path: Path) -> Iterator[McpMemoryStore]:
    store = _open(mcp_memory, tmp_path)
    yield store
    store.close()


# --------------------------------------------------------------------------- survey


def test_survey_finds_what_the_server_can_do_and_no_more(mcp_store: McpMemoryStore) -> None:
    found = survey(mcp_store.name, mcp_store.tools())
    # The survey finds a delete; the adapter declines it: delete_observations removes every
    # copy of a text, so one repeat cannot go alone (and nothing else is deleted).
    assert {c.value for c in found.capabilities} == FOUND | {"delete"}
    assert found.evidence[Capability.BACKUP].startswith("memvault_snapshot")
    assert set(found.unused_destructive) == {"delete_entities", "delete_relations"}
    assert {c.value for c in mcp_store.bound} == FOUND
    assert "every copy" in mcp_store.declined[Capability.DELETE]
    # what the server cannot do raises instead of being faked (GD-S5)
    item = mcp_store.list_items(ItemQuery(limit=1))[0]
    with pytest.raises(CapabilityMissing):
        mcp_store.update_item(CTX, item.id, ItemChanges(text="x"))
    with pytest.raises(CapabilityMissing):
        mcp_store.archive_item(CTX, item.id, pointer_to=None)
    fact = mcp_store.facts(FactQuery())[0]
    with pytest.raises(CapabilityMissing):
        mcp_store.invalidate_fact(CTX, fact.id, invalid_at=None, superseded_by=None)
    with pytest.raises(CapabilityMissing):
        mcp_store.write_journal(CTX, "x")
    with pytest.raises(CapabilityMissing):
        mcp_store.save_artifact(CTX, "garden-report", "r", "x")


def test_a_survey_mapping_it_cannot_serve_is_declined(mcp_store: McpMemoryStore) -> None:
    tools = {t.name: t for t in mcp_store.tools()}
    mcp_store.bind(
        {Capability.SEARCH: tools["search_nodes"], Capability.MUTATE: tools["add_observations"]}
    )
    assert set(mcp_store.bound) == {Capability.SEARCH}
    assert Capability.MUTATE in mcp_store.declined
    with pytest.raises(CapabilityMissing):
        mcp_store.stats()


# --------------------------------------------------------------------------- items and facts


def test_observations_are_items_with_stable_ids(
    mcp_store: McpMemoryStore, mcp_memory: MemoryServer, tmp_path: Path
) -> None:
    items = mcp_store.list_items(ItemQuery(limit=1000))
    assert len(items) == read_graph_file(mcp_memory.memory_file).observation_count == 37
    assert len({i.id for i in items}) == len(items)  # the repeated observation has its own id
    repeated = [i for i in items if i.text == "Prefers concise answers with code first"]
    assert [i.id for i in repeated] == [
        observation_id("default_user", repeated[0].text, 0),
        observation_id("default_user", repeated[0].text, 1),
    ]
    assert all(i.created_at is None and i.container for i in items)
    # a second server on the same file gives the same ids
    again = _open(mcp_memory, tmp_path)
    try:
        assert [i.id for i in again.list_items(ItemQuery(limit=1000))] == [i.id for i in items]
    finally:
        again.close()


def test_item_queries_without_times(mcp_store: McpMemoryStore) -> None:
    newest = mcp_store.list_items(ItemQuery(order="newest", limit=2))
    assert [i.container for i in newest] == ["Tabs versus spaces", "Sourdough starter"]
    bloated = mcp_store.list_items(ItemQuery(min_chars=750, order="longest"))
    assert [i.container for i in bloated] == ["Project Atlas"]
    page = mcp_store.list_items(ItemQuery(limit=3))
    after = mcp_store.list_items(ItemQuery(limit=3, after=page[-1].id))
    assert after[0].id not in {i.id for i in page}
    # the server records no reads: nothing is ever selected as untouched (stale)
    assert mcp_store.list_items(ItemQuery(untouched_before=dt.datetime(2100, 1, 1))) == []


def test_first_seen_times_give_later_runs_a_window(
    mcp_store: McpMemoryStore, mcp_memory: MemoryServer, tmp_path: Path
) -> None:
    """What was there at the first look has no time (older than any window); what comes
    later gets the time of the read before it was seen, and that survives a restart."""
    first = mcp_store.list_items(ItemQuery(limit=1000))
    assert all(i.created_at is None for i in first)
    assert mcp_store.facts(FactQuery(changed_since=dt.datetime(2000, 1, 1))) == []
    window_start = utcnow()
    mcp_store.list_items(ItemQuery(limit=1))  # the previous run's last read
    with mcp_memory.client() as agent:  # the agent writes between two runs
        agent.call(
            "add_observations",
            {"observations": [{"entityName": "Globex", "contents": ["Opened a Lisbon office"]}]},
        )
        agent.call(
            "create_relations",
            {"relations": [{"from": "Alex Kim", "to": "Project Atlas", "relationType": "designs"}]},
        )
    window_end = utcnow()
    mcp_store.close()

    later = _open(mcp_memory, tmp_path)  # the next run: a new server, the same first-seen file
    try:
        window = ItemQuery(changed_since=window_start, changed_before=window_end, limit=1000)
        (new,) = later.list_items(window)
        assert (new.container, new.text) == ("Globex", "Opened a Lisbon office")
        assert new.created_at is not None and window_start <= new.created_at < window_end
        old = later.list_items(ItemQuery(changed_before=window_start, limit=1000))
        assert {i.id for i in old} == {i.id for i in first}
        (fact,) = later.facts(FactQuery(changed_since=window_start))
        assert (fact.subject, fact.predicate, fact.object) == (
            "Alex Kim",
            "designs",
            "Project Atlas",
        )
        assert later.list_items(ItemQuery(order="newest", limit=1)) == [new]
    finally:
        later.close()


def test_exact_duplicates_are_found_and_look_alikes_are_not(mcp_store: McpMemoryStore) -> None:
    items = mcp_store.list_items(ItemQuery(limit=1000))
    by_id = {i.id: i for i in items}
    pairs = mcp_store.duplicate_candidates([i.id for i in items], threshold=0.9)
    found = {
        frozenset((by_id[p.a_id].container or "", by_id[p.b_id].container or "")) for p in pairs
    }
    assert found == {
        frozenset({"default_user"}),
        frozenset({"Jonathan Pryce", "Jon Pryce"}),
    }
    assert len(pairs) == 3 and all(p.similarity == pytest.approx(1.0) for p in pairs)
    assert all(p.a_id < p.b_id for p in pairs)


def test_facts_come_in_creation_order_and_show_the_stale_pairs(mcp_store: McpMemoryStore) -> None:
    works = mcp_store.facts(FactQuery(subject="Priya Natarajan", predicate="works_at"))
    assert [f.object for f in works] == ["Acme Corp", "Globex"]
    lives = mcp_store.facts(FactQuery(subject="default_user", predicate="lives_in"))
    assert [f.object for f in lives] == ["Berlin", "Lisbon"]
    assert all(f.active and f.valid_at is None for f in works + lives)


def test_search_is_the_servers_substring_search(mcp_store: McpMemoryStore) -> None:
    hits = mcp_store.search("globex")
    assert hits[0].text in {
        "Moved to Globex in 2025 as a staff engineer",
        "At Globex since March 2025",
    }
    assert {i.container for i in hits} == {"Priya Natarajan", "Globex"}
    assert mcp_store.search("no such words anywhere") == []


# --------------------------------------------------------------------------- structure


def test_orphans_and_their_one_unambiguous_link(
    mcp_store: McpMemoryStore, mcp_memory: MemoryServer
) -> None:
    orphans = mcp_store.orphans()
    assert [o.id for o in orphans] == ["Sourdough starter", "Tabs versus spaces"]
    sourdough, tabs = orphans
    (link,) = mcp_store.link_candidates(sourdough)
    assert (link.target_id, link.relation) == ("default_user", "mentions")
    assert "feeds it every Sunday" in link.evidence
    assert mcp_store.link_candidates(tabs) == []

    change = mcp_store.add_link(CTX, sourdough, link)
    assert change.action == "reconnect" and not change.audited
    after = read_graph_file(mcp_memory.memory_file)
    assert ("Sourdough starter", "mentions", "default_user") in after.relations
    assert [o.id for o in mcp_store.orphans()] == ["Tabs versus spaces"]


# --------------------------------------------------------------------------- writes add only


def test_writes_only_add(mcp_store: McpMemoryStore, mcp_memory: MemoryServer) -> None:
    before = read_graph_file(mcp_memory.memory_file)
    summary = mcp_store.create_item(
        CTX, NewItem(text="2026-11-30: dedup pressure on people", tags=("garden-summary",))
    )
    assert summary.after is not None and summary.after["created_entity"] is True
    fact = mcp_store.add_fact(
        CTX, NewFact(subject="Priya Natarajan", predicate="formerly_worked_at", object="Acme Corp")
    )
    assert fact.target_kind == "relation" and fact.after is not None
    again = mcp_store.add_fact(
        CTX, NewFact(subject="Priya Natarajan", predicate="works_at", object="Globex")
    )
    assert again.after is not None and again.after["already_present"] is True
    with pytest.raises(McpError, match="no entity named 'Initech'"):
        mcp_store.add_fact(CTX, NewFact(subject="Priya Natarajan", predicate="x", object="Initech"))

    after = read_graph_file(mcp_memory.memory_file)
    assert before.observations <= after.observations
    assert before.relations <= after.relations
    assert after.relations - before.relations == {
        ("Priya Natarajan", "formerly_worked_at", "Acme Corp")
    }
    assert after.observations - before.observations == {
        (GARDEN_ENTITY, "2026-11-30: dedup pressure on people")
    }
    summary_item = mcp_store.get_items([summary.target_id])[0]
    assert summary_item.pinned and summary_item.tags == ("garden-summary",)
    assert GARDEN_ENTITY not in {o.id for o in mcp_store.orphans()}
    assert mcp_store.stats() == {
        "entities": len(before.entities) + 1,
        "items_active": before.observation_count + 1,
        "facts_active": len(before.relations) + 1,
    }


# --------------------------------------------------------------------------- backup


def test_backup_is_a_restorable_copy_in_the_servers_format(
    mcp_store: McpMemoryStore, mcp_memory: MemoryServer, tmp_path: Path
) -> None:
    original = read_graph_file(mcp_memory.memory_file)
    ref = mcp_store.backup("before-first-run")
    snapshot = Path(ref.location)
    assert snapshot.parent == (tmp_path / "snapshots").resolve()
    mcp_store.create_item(CTX, NewItem(text="added after the snapshot", container="Globex"))
    assert read_graph_file(snapshot) == original

    # restoring = copying it over MEMORY_FILE_PATH; a server started on it sees the old graph
    restored = tmp_path / "restored" / "memory.jsonl"
    restored.parent.mkdir()
    shutil.copyfile(snapshot, restored)
    server = MemoryServer(command=mcp_memory.command, memory_file=restored)
    with server.client() as client:
        graph = client.call("read_graph")
    assert {e["name"] for e in graph["entities"]} == set(original.entities)
    assert len(graph["relations"]) == len(original.relations)


def test_relative_memory_file_is_resolved_against_the_working_directory(
    mcp_memory: MemoryServer, tmp_path: Path
) -> None:
    """The server would resolve it against its own install folder; the adapter does not."""
    store = open_mcp_store(
        ["MEMORY_FILE_PATH=mcp/memory.jsonl", *mcp_memory.command],
        cwd=tmp_path,
        backup_dir=tmp_path / "snapshots",
    )
    try:
        assert store.memory_file == str(mcp_memory.memory_file.resolve())
        store.bind(survey(store.name, store.tools()).mapping)
        assert store.stats()["entities"] == 14
    finally:
        store.close()


# --------------------------------------------------------------------------- the ceremony


def _ceremony(
    server: MemoryServer, ledger_url: str, mode: Mode
) -> tuple[GardenResult, dict[str, int]]:
    """One garden run over the server (its own process), with the offline heuristic judge."""
    judge = HeuristicJudge()
    with memvault.open(ledger_url) as handle:
        store = open_garden_store(server.url)
        try:
            result = run_garden(Ledger(handle), [store], judge, GardenConfig(mode=mode))
        finally:
            store.close()
    return result, judge.stats.as_dict()


def _proposals(ledger_url: str) -> list[Proposal]:
    with memvault.open(ledger_url) as handle:
        return Ledger(handle).proposals(None, ("pending", "approved", "executed", "stale"))


def _texts(server: MemoryServer) -> dict[str, tuple[str, str]]:
    """Observation id → (entity, text), read through a fresh adapter-free parse of the file."""
    out = {}
    for name, (_, observations) in read_graph_file(server.memory_file).entities.items():
        seen: dict[str, int] = {}
        for text in observations:
            out[observation_id(name, text, seen.get(text, 0))] = (name, text)
            seen[text] = seen.get(text, 0) + 1
    return out


def test_tend_and_propose_only_adds_and_reports_what_it_skipped(
    mcp_memory: MemoryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    ledger_url = f"duckdb:///{tmp_path / 'ledger.duckdb'}"
    before = read_graph_file(mcp_memory.memory_file)
    ids_before = _texts(mcp_memory)

    result, judged = _ceremony(mcp_memory, ledger_url, "tend-and-propose")

    assert result.succeeded, result.outcome.summary
    report = parse_report(result.report)
    (line,) = report.stores
    assert line.capabilities.startswith(
        "search, create, duplicate_check, kg_add, kg_search, structure, stats, backup"
    )
    assert (
        "(missing: mutate, archive, expire, kg_invalidate, kg_timeline, journal, artifact, "
        "timestamps)"
    ) in line.capabilities
    skipped = dict(report.skipped)
    assert "archive" in skipped["merge duplicates"]
    assert (
        "mutate" in skipped["decay unused memories"]
        and "mutate" in skipped["split bloated memories"]
    )
    assert "kg_invalidate" in skipped["invalidate stale facts"]
    # nothing executed but one unambiguous reconnect; the duplicates are proposed
    assert report.actions == dict(merges=0, decays=0, splits=0, invalidations=0, reconnects=1)
    assert {op.state for op in report.ops} == {"PROPOSED"}
    proposed = {op.target for op in report.ops}
    assert {ids_before[t][1] for t in proposed} == {
        "Engineering manager at Northwind Labs",
        "Prefers concise answers with code first",
        "Prefers written status updates over meetings",
    }
    assert any("Tabs versus spaces" in d and "left as is" in d for d in report.deferred)
    stale = [d for d in report.deferred if "works_at" in d or "lives_in" in d]
    assert len(stale) == 2 and any("Acme Corp" in d for d in stale)
    assert judged["heuristic_answers"] == 3  # the three duplicate pairs, nothing else

    merges = [p for p in _proposals(ledger_url) if p.action == "merge"]
    assert len(merges) == 3 and all(p.certain and p.status == "pending" for p in merges)
    for p in merges:  # survivor and absorbed say the same; the survivor keeps it
        assert ids_before[p.target_id][1] == ids_before[p.related[0]][1]
    invalidations = [p for p in _proposals(ledger_url) if p.action == "invalidate"]
    assert len(invalidations) == 2 and not any(p.certain for p in invalidations)

    # the file: everything that was there is still there; only additions
    after = read_graph_file(mcp_memory.memory_file)
    assert before.observations <= after.observations
    assert before.relations <= after.relations
    assert after.relations - before.relations == {("Sourdough starter", "mentions", "default_user")}
    added = after.observations - before.observations
    assert {entity for entity, _ in added} == {GARDEN_ENTITY}
    assert {n: t for n, (t, _) in after.entities.items() if n in before.entities} == {
        n: t for n, (t, _) in before.entities.items()
    }
    # GD-S4: the first run in tend-and-propose took a snapshot of the untouched graph
    snapshots = sorted(Path(f"{mcp_memory.memory_file}.backups").glob("*.jsonl"))
    assert len(snapshots) == 1 and read_graph_file(snapshots[0]) == before

    # a second run right after: nothing new to judge, nothing re-proposed, still only additions
    again, judged = _ceremony(mcp_memory, ledger_url, "tend-and-propose")
    assert again.succeeded, again.outcome.summary
    assert judged["heuristic_answers"] == 0
    assert again.state.proposals == 0 and parse_report(again.report).ops == []
    assert len(_proposals(ledger_url)) == 5
    final = read_graph_file(mcp_memory.memory_file)
    assert after.observations <= final.observations and after.relations <= final.relations
    # nothing new happened, so no second garden summary either (its own note is not news)
    assert final.observations == after.observations
    assert len(sorted(Path(f"{mcp_memory.memory_file}.backups").glob("*.jsonl"))) == 1


def test_autonomous_snapshots_first_and_loses_nothing(
    mcp_memory: MemoryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Autonomous mode executes clear merges only where the store can archive; this one
    cannot (its only way to drop a duplicate is a delete), so the merges stay proposals."""
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    ledger_url = f"duckdb:///{tmp_path / 'ledger.duckdb'}"
    before = read_graph_file(mcp_memory.memory_file)

    for run in (1, 2):
        result, _ = _ceremony(mcp_memory, ledger_url, "autonomous")
        assert result.succeeded, result.outcome.summary
        report = parse_report(result.report)
        assert report.mode == "autonomous"
        assert report.actions["merges"] == 0
        assert not [op for op in report.ops if op.state == "EXECUTED"]
        # GD-S4: a snapshot before every autonomous run
        snapshots = sorted(Path(f"{mcp_memory.memory_file}.backups").glob("*.jsonl"))
        assert len(snapshots) == run

    after = read_graph_file(mcp_memory.memory_file)
    kept = after.observation_texts | read_graph_file(snapshots[0]).observation_texts
    assert before.observation_texts <= kept
    assert before.observations <= after.observations  # in fact nothing was removed at all
    assert before.relations <= after.relations
    assert read_graph_file(snapshots[0]) == before
    merges = [p for p in _proposals(ledger_url) if p.action == "merge"]
    assert len(merges) == 3 and all(p.status == "pending" for p in merges)


def test_memvault_garden_cli_on_an_mcp_store(
    mcp_memory: MemoryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memvault garden --store "mcp+stdio:..."`, with a relative MEMORY_FILE_PATH."""
    from typer.testing import CliRunner

    from pipelines.cli.gardener import garden_app

    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    monkeypatch.chdir(mcp_memory.memory_file.parent)
    before = read_graph_file(mcp_memory.memory_file)
    url = "mcp+stdio:" + shlex.join(["MEMORY_FILE_PATH=memory.jsonl", *mcp_memory.command])
    args = ["--store", url, "--ledger", f"duckdb:///{tmp_path / 'ledger.duckdb'}"]
    result = CliRunner().invoke(garden_app, [*args, "--workflow-outcome"])
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    assert lines[0].startswith("# Gardening report — ")
    assert lines[-1].startswith('SUBSTRATE_OUTCOME_V1={"version":1,"outcome":"succeeded"')
    report = parse_report("\n".join(lines[:-1]) + "\n")
    assert report.stores[0].name == f"mcp:memory-server:{mcp_memory.memory_file}"
    after = read_graph_file(mcp_memory.memory_file)
    assert before.observations <= after.observations and before.relations <= after.relations
