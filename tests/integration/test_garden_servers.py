"""The gardener on three real memory servers from npm, each with a different tool set.

* ``@modelcontextprotocol/server-memory`` (the reference): a graph of entities and
  observations, no update, no times;
* ``@itseasy21/mcp-knowledge-graph``: the same graph with ``update_entities`` /
  ``update_relations`` and a ``createdAt`` on every entity and relation;
* ``mcp-memory-keeper``: context items (key, value, category, priority, channel, times) in
  SQLite, a journal, exports, 38 tools.

Each runs as its own process (``mcp-server/``, installed from the lockfile by
``scripts/setup.sh --test``) on a seed of the same problems: an exact repeat, the same
text under two names, an over-long item, stale facts or untouched items. For each, in
tend-and-propose and in autonomous mode: what each phase did or skipped and why, a
snapshot before any change, nothing lost (the server's own storage read before and
after), a second run that changes nothing, and the budget with its resume point. The
seeds' times are the tests' day (``TEST_NOW``) minus fixed ages.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import memvault
from memvault.gardener.adapters import open_garden_store
from memvault.gardener.ledger import Ledger, Proposal
from memvault.gardener.mcp_client import McpStdioClient
from memvault.gardener.report import GardenReport, parse_report
from memvault.gardener.run import GardenResult, run_garden
from memvault.gardener.state import GardenConfig, Mode
from memvault.judge import HeuristicJudge
from tests.helpers import TEST_NOW, require_service
from tests.integration.mcp_server import REPO, SEED_GRAPH, server_command

pytestmark = pytest.mark.integration

MODULES = REPO / "mcp-server" / "node_modules"
KG_SCRIPT = MODULES / "@itseasy21" / "mcp-knowledge-graph" / "dist" / "index.js"
KEEPER_SCRIPT = MODULES / "mcp-memory-keeper" / "dist" / "index.js"
REPEAT = "Prefers concise answers with code first"
MANAGER = "Engineering manager at Northwind Labs"


def _iso(days_ago: float) -> str:
    return (TEST_NOW - dt.timedelta(days=days_ago)).isoformat() + "Z"


@dataclass
class Server:
    """One memory server on its own copy of its seed."""

    name: str
    url: str
    root: Path
    read: Callable[[], Any]  # the server's own storage, comparable
    snapshots: Callable[[], list[Path]]
    #: What the report must say: phase → words of its skip line ("" = the phase ran).
    skipped: dict[str, str] = field(default_factory=dict)
    capabilities: str = ""

    def garden(self, ledger_url: str, mode: Mode, **config: Any) -> GardenResult:
        judge = HeuristicJudge()
        with memvault.open(ledger_url) as handle:
            store = open_garden_store(self.url, embedder="hashing")
            try:
                return run_garden(Ledger(handle), [store], judge, GardenConfig(mode=mode, **config))
            finally:
                store.close()


# --------------------------------------------------------------------------- the graph servers


def _graph(path: Path) -> dict[str, Any]:
    """A memory.jsonl as the server keeps it: observations as (entity, text) counts, relations,
    entity types (fields such as createdAt and version left out)."""
    observations: Counter[tuple[str, str]] = Counter()
    relations: Counter[tuple[str, str, str]] = Counter()
    types = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("type") == "entity":
            types[row["name"]] = row["entityType"]
            observations.update((row["name"], text) for text in row["observations"])
        elif row.get("type") == "relation":
            relations[(row["from"], row["relationType"], row["to"])] += 1
    return {"observations": observations, "relations": relations, "types": types}


#: Ages in days of the knowledge-graph seed's relations (the rest: 90 days).
RELATION_AGES = {
    ("Priya Natarajan", "works_at", "Acme Corp"): 1500,
    ("Priya Natarajan", "works_at", "Globex"): 300,
    ("default_user", "lives_in", "Berlin"): 1000,
    ("default_user", "lives_in", "Lisbon"): 700,
}


def _kg_seed(target: Path) -> None:
    """The shared seed graph as @itseasy21/mcp-knowledge-graph writes it: a createdAt and a
    version on every record; the entities 90 days old, the stale facts ordered by time."""
    lines = []
    for line in SEED_GRAPH.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        key = (row.get("from"), row.get("relationType"), row.get("to"))
        row |= {"createdAt": _iso(RELATION_AGES.get(key, 90)), "version": 1}  # type: ignore[arg-type]
        lines.append(json.dumps(row))
    target.write_text("\n".join(lines), encoding="utf-8")


def _graph_server(name: str, script: Path, tmp_path: Path, seed: Callable[[Path], None]) -> Server:
    node = shutil.which("node")
    require_service(node is not None and script.is_file(), f"node and {name} (npm ci --prefix mcp-server)")  # fmt: skip
    memory = tmp_path / name / "memory.jsonl"
    memory.parent.mkdir(parents=True)
    seed(memory)
    return Server(
        name=name,
        url="mcp+stdio:" + shlex.join([f"MEMORY_FILE_PATH={memory}", str(node), str(script)]),
        root=memory.parent,
        read=lambda: _graph(memory),
        snapshots=lambda: sorted(Path(f"{memory}.backups").glob("*.jsonl")),
    )


# --------------------------------------------------------------------------- the memory keeper

#: key, value, category, priority, channel, age in days
KEEPER_SEED = [
    ("editor", "Uses Neovim with the LazyVim distribution", "note", "normal", "general", 40),
    ("answer-style", REPEAT, "decision", "high", "general", 50),
    ("answer-style-again", REPEAT, "decision", "normal", "general", 10),
    ("manager", MANAGER, "note", "normal", "people", 20),
    ("manager-at-work", MANAGER, "note", "normal", "work", 5),
    ("billing-cron", "Migrate the billing cron job to Dagster", "task", "high", "general", 60),
    ("peanuts", "Is allergic to peanuts", "note", "low", "general", 90),
    ("atlas-kickoff", "", "note", "normal", "general", 3),  # the seed graph's 871-char note
]


def _keeper_rows(database: Path) -> dict[str, Any]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        items = db.execute(
            "SELECT key, value, category, priority, channel FROM context_items ORDER BY key"
        ).fetchall()
        journal = db.execute("SELECT count(*) FROM journal_entries").fetchone()[0]
    return {"items": {row[0]: row[1:] for row in items}, "journal_entries": journal}


def _keeper_server(tmp_path: Path) -> Server:
    node = shutil.which("node")
    require_service(node is not None and KEEPER_SCRIPT.is_file(), "node and mcp-memory-keeper (npm ci --prefix mcp-server)")  # fmt: skip
    root = tmp_path / "keeper"
    env = {"DATA_DIR": str(root / "data"), "HOME": str(root)}
    atlas = next(
        text
        for line in SEED_GRAPH.read_text(encoding="utf-8").splitlines()
        for text in json.loads(line).get("observations", [])
        if len(text) > 750
    )
    with McpStdioClient([str(node), str(KEEPER_SCRIPT)], env=env, timeout=60) as seeder:
        for key, value, category, priority, channel, _ in KEEPER_SEED:
            seeder.call("context_save", {"key": key, "value": value or atlas, "category": category,
                                         "priority": priority, "channel": channel})  # fmt: skip
    database = root / "data" / "context.db"
    with sqlite3.connect(database) as db:  # age the items (the server re-creates the trigger)
        db.execute("DROP TRIGGER IF EXISTS update_context_items_timestamp")
        for key, *_, age in KEEPER_SEED:
            when = (TEST_NOW - dt.timedelta(days=age)).strftime("%Y-%m-%d %H:%M:%S")
            db.execute("UPDATE context_items SET created_at = ?, updated_at = ? WHERE key = ?",
                       (when, when, key))  # fmt: skip
    words = [f"DATA_DIR={root / 'data'}", f"HOME={root}", str(node), str(KEEPER_SCRIPT)]
    return Server(
        name="mcp-memory-keeper",
        url="mcp+stdio:" + shlex.join(words),
        root=root,
        read=lambda: _keeper_rows(database),
        snapshots=lambda: sorted((root / "data" / "garden-snapshots").glob("*.json")),
    )


# --------------------------------------------------------------------------- fixtures

GRAPH_CAPABILITIES = "search, create, duplicate_check, kg_add, kg_search, structure, stats, backup"


@pytest.fixture(params=["server-memory", "mcp-knowledge-graph", "mcp-memory-keeper"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Server:
    if request.param == "server-memory":
        command = server_command()
        require_service(command is not None, "node and @modelcontextprotocol/server-memory")
        assert command is not None
        found = _graph_server(
            request.param, Path(command[1]), tmp_path, lambda p: shutil.copyfile(SEED_GRAPH, p)
        )
        found.capabilities = GRAPH_CAPABILITIES + " (missing: mutate, archive, expire"
        found.skipped = {
            "merge duplicates": "no mutate (update in place) / archive capability",
            "decay unused memories": "no mutate capability",
            "split bloated memories": "no mutate capability",
            "invalidate stale facts": "no kg_invalidate capability",
        }
    elif request.param == "mcp-knowledge-graph":
        found = _graph_server(request.param, KG_SCRIPT, tmp_path, _kg_seed)
        found.capabilities = (
            "search, create, mutate, duplicate_check, kg_add, kg_search, structure, stats, "
            "backup, timestamps, delete (missing: archive, expire, kg_invalidate"
        )
        found.skipped = {
            "merge duplicates": "only an exact repeat within one container is merged",
            "decay unused memories": "have no importance in this store to lower",
            "invalidate stale facts": "no kg_invalidate capability",
        }
    else:
        found = _keeper_server(tmp_path)
        found.capabilities = (
            "search, create, mutate, duplicate_check, journal, stats, backup, timestamps, "
            "delete (missing: archive, expire, kg_add"
        )
        found.skipped = {
            "merge duplicates": "only an exact repeat within one container is merged",
            "decay unused memories": "no expire capability",
            "invalidate stale facts": "no kg_search capability",
            "reconnect orphans": "no structure capability",
        }
    return found


def _proposals(ledger_url: str) -> list[Proposal]:
    with memvault.open(ledger_url) as handle:
        return Ledger(handle).proposals(None, ("pending", "approved", "executed", "stale"))


def _check_report(server: Server, result: GardenResult, *, whole: bool = True) -> GardenReport:
    """The report as every run on ``server`` must give it: succeeded, its capabilities, each
    phase's skip with its reason (``whole``: the run got to every phase), and only the phases
    of this server skipped."""
    assert result.succeeded, result.outcome.summary + "\n" + result.report
    report = parse_report(result.report)
    (line,) = report.stores
    assert line.capabilities.startswith(server.capabilities), line.capabilities
    skipped: dict[str, list[str]] = {}
    for phase, why in report.skipped:
        skipped.setdefault(phase, []).append(why)
    for phase, words in server.skipped.items():
        ran = whole or phase in skipped
        assert not ran or any(words in why for why in skipped.get(phase, [])), (phase, skipped)
    assert set(skipped) <= set(server.skipped), f"unexpected skips: {skipped}"
    return report


def _memory(state: dict[str, Any]) -> dict[str, Any]:
    """The store's memory without the record of the runs (a journal gets one entry a run)."""
    return {k: v for k, v in state.items() if k != "journal_entries"}


def _texts(state: dict[str, Any]) -> set[Any]:
    """What a store says, as a set (a repeat counts once: dropping one copy loses nothing)."""
    if "items" in state:
        return {(value, channel) for value, _, _, channel in state["items"].values()}
    return set(state["observations"])


# --------------------------------------------------------------------------- the tests


def test_tend_and_propose_proposes_what_destroys_and_a_second_run_changes_nothing(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    ledger = f"duckdb:///{tmp_path / 'ledger.duckdb'}"
    before = server.read()

    first = server.garden(ledger, "tend-and-propose")
    report = _check_report(server, first)
    print(f"--- {server.name}, tend-and-propose\n{first.report}")
    assert report.actions["merges"] == 0 and not [o for o in report.ops if o.state == "EXECUTED"]
    proposed = {o.preview: o.verb for o in report.ops if o.state == "PROPOSED"}
    assert proposed[REPEAT] == ("ARCHIVE" if server.name == "server-memory" else "DELETE")
    assert proposed[MANAGER] == "ARCHIVE", "the same text under two names is not a repeat"
    after = server.read()
    assert _texts(before) <= _texts(after), "nothing lost"
    if "observations" in before:  # the graphs: every copy of every observation still there
        assert not before["observations"] - after["observations"]
        assert before["relations"] <= after["relations"]
    else:  # the keeper: every item, its value and channel; only priorities moved (decay)
        assert before["items"].keys() == after["items"].keys()
        moved = {k for k in before["items"] if before["items"][k] != after["items"][k]}
        assert moved == {"answer-style", "billing-cron", "editor"}, moved
        assert (
            after["items"]["billing-cron"][2] == "normal" and after["items"]["editor"][2] == "low"
        )
        assert report.actions["decays"] == 3
    (snapshot,) = server.snapshots()  # the first run in tend-and-propose took one, first
    assert snapshot.stat().st_size > 0

    again = server.garden(ledger, "tend-and-propose")
    second = _check_report(server, again)
    assert second.ops == [] and sum(second.actions.values()) == 0
    final = server.read()
    assert _memory(final) == _memory(after), "a second run changes nothing"
    assert final.get("journal_entries", 0) - after.get("journal_entries", 0) in (0, 1)
    assert len(server.snapshots()) == 1, "tend-and-propose snapshots before the first run only"
    assert len(_proposals(ledger)) == first.state.proposals


def test_autonomous_merges_exact_repeats_only_after_a_snapshot_and_loses_nothing(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    ledger = f"duckdb:///{tmp_path / 'ledger.duckdb'}"
    before = server.read()

    result = server.garden(ledger, "autonomous")
    report = _check_report(server, result)
    print(f"--- {server.name}, autonomous\n{result.report}")
    executed = [o for o in report.ops if o.state == "EXECUTED"]
    after = server.read()
    assert _texts(before) <= _texts(after), "nothing lost"
    if server.name == "server-memory":  # no way to drop one copy: everything stays proposed
        assert executed == [] and after["observations"] >= before["observations"]
    else:
        (merge,) = executed
        assert (merge.verb, merge.preview) == ("MERGE", REPEAT)
        assert report.actions["merges"] == 1
        proposed = {o.preview for o in report.ops if o.state == "PROPOSED"}
        assert MANAGER in proposed, "a copy under another name would lose where it was said"
        if "observations" in before:
            gone = before["observations"] - after["observations"]
            assert gone == Counter({("default_user", REPEAT): 1})
        else:
            assert set(before["items"]) - set(after["items"]) == {"answer-style-again"}
        with memvault.open(ledger) as handle:  # the deleted copy's whole item is audited
            (row,) = handle.fetch(
                "SELECT before_image FROM audit_log WHERE run_id = :r AND action = 'merge-delete'",
                {"r": result.run_id},
            )
        assert REPEAT in row[0]
    # The snapshot was taken before any change: it holds the store as the seed left it.
    (snapshot,) = server.snapshots()
    if "observations" in before:
        assert _graph(snapshot) == before
    else:
        held = json.loads(snapshot.read_text(encoding="utf-8"))["contextItems"]
        assert {r["key"]: (r["value"], r["category"], r["priority"], r["channel"]) for r in held} == before["items"]  # fmt: skip

    again = server.garden(ledger, "autonomous")
    second = _check_report(server, again)
    assert second.ops == [] and sum(second.actions.values()) == 0
    final = server.read()
    assert _memory(final) == _memory(after), "a second run changes nothing"
    assert final.get("journal_entries", 0) - after.get("journal_entries", 0) in (0, 1)
    assert len(server.snapshots()) == 2, "autonomous snapshots before every run"


def test_the_budget_stops_a_run_and_the_next_one_resumes_there(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    ledger = f"duckdb:///{tmp_path / 'ledger.duckdb'}"
    short = server.garden(ledger, "tend-and-propose", max_mutations=1)
    report = _check_report(server, short, whole=False)
    assert report.mutations_used <= 1
    assert report.resume_point != "clean", report.resume_point
    resumed = server.garden(ledger, "tend-and-propose")
    (srun,) = resumed.state.stores.values()
    assert srun.since_source.startswith("resumed from"), srun.since_source
    final = _check_report(server, resumed)
    assert final.resume_point == "clean"
    # The two runs together proposed each thing once.
    proposals = _proposals(ledger)
    assert len({(p.action, p.target_id) for p in proposals}) == len(proposals)
