"""The garden journal on memvault's own store (DuckDB and PostgreSQL): every run writes one
entry, and it says what changed about what — the subjects of the facts it retired, the
topics of the items it merged and decayed — from what the run and the store hold."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import polars as pl
import pytest

import memvault
from memvault.gardener.adapters.memvault_store import MemvaultGardenStore
from memvault.gardener.ledger import Ledger
from memvault.gardener.phases.journal import MAX_CHARS
from memvault.gardener.report import parse_report
from memvault.gardener.run import GardenResult, run_garden
from memvault.gardener.state import GardenConfig
from memvault.judge import HeuristicJudge
from memvault.normalize import utcnow
from memvault.store import Store
from tests.garden_support import HASHING, UNLIMITED, demo_file, drop_backup_schemas, garden, seed


class TendsFacts(MemvaultGardenStore):
    """memvault's store with its stale facts left to the gardener, as on a store that has
    no dream to own that rule (so the gardener's invalidations can be read back)."""

    delegated: Mapping[str, str] = {}
    delegated_whole: frozenset[str] = frozenset()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, _ = demo_file(tmp_path_factory.mktemp("demo"), sessions=80, days=120)
    return path


@pytest.fixture
def seeded(store_url: str, demo: Path) -> Iterator[Store]:
    with memvault.open(store_url) as store:
        seed(store, demo)
        yield store
    drop_backup_schemas(store_url)


def _entry(store: Store, result: GardenResult) -> str:
    rows = store.fetch("SELECT text FROM diary WHERE run_id = :r", {"r": result.run_id})
    assert len(rows) == 1, f"one journal entry per run, not {len(rows)}"
    return str(rows[0][0])


def _entities_named_by(store: Store, block_ids: list[str]) -> set[str]:
    return {
        r[0]
        for r in store.fetch(
            "SELECT DISTINCT e.name FROM mentions m JOIN entities e ON e.id = m.entity_id "
            "WHERE m.block_id = ANY(:ids)",
            {"ids": block_ids},
        )
    }


def _sentence(text: str, start: str) -> str:
    found = [s for s in text.replace("\n", " ").split(". ") if s.startswith(start)]
    assert found, f"no sentence starting {start!r} in:\n{text}"
    return found[0]


def test_a_run_with_merges_and_invalidations_names_what_it_changed(seeded: Store) -> None:
    config = GardenConfig(
        mode="autonomous",
        max_mutations=UNLIMITED,
        max_judgments=UNLIMITED,
        first_run_items=UNLIMITED,
        max_splits=1000,
        max_reconnects=1000,
    )
    result = run_garden(
        Ledger(seeded), [TendsFacts(seeded, embedder=HASHING)], HeuristicJudge(), config
    )
    assert result.succeeded, result.report
    text = _entry(seeded, result)
    assert len(text) <= MAX_CHARS
    assert text.splitlines()[-1].startswith("Garden state:")
    report = parse_report(result.report)

    # The stale facts it retired, by subject and predicate, as the store names them.
    retired = seeded.fetch(
        "SELECT DISTINCT e.name, t.predicate FROM audit_log a JOIN triples t ON t.id = a.target_id "
        "JOIN entities e ON e.id = t.subject_id WHERE a.run_id = :r AND a.action = 'invalidate'",
        {"r": result.run_id},
    )
    assert retired and report.actions["invalidations"] > 0
    said = _sentence(text, "Retired")
    assert f"Retired {report.actions['invalidations']} stale fact" in said
    assert any(f"{name} {predicate}" in said for name, predicate in retired), said

    # The merges: how many, the survivors' first words, and what the merged items are about.
    merges = [op for op in report.ops if op.verb == "MERGE"]
    assert merges
    said = _sentence(text, "Merged")
    assert f"Merged {len(merges)} duplicate" in said
    survivor = seeded.get_row("blocks", merges[0].target)
    assert " ".join(survivor["text"].split()[:4]) in said
    merged = [op.target for op in merges] + [op.source or "" for op in merges]
    topics = said.split("(about ", 1)[1].split(")", 1)[0]
    assert any(name in topics for name in _entities_named_by(seeded, merged)), said

    # The decayed items, by what they are about.
    decayed = [
        r[0]
        for r in seeded.fetch(
            "SELECT target_id FROM audit_log WHERE run_id = :r AND action = 'decay'",
            {"r": result.run_id},
        )
    ]
    said = _sentence(text, "Decayed")
    assert f"Decayed {len(decayed)} unused item" in said
    topics = said.split("(about ", 1)[1].split(")", 1)[0]
    assert any(name in topics for name in _entities_named_by(seeded, decayed)), said


def test_a_run_that_spends_its_budget_still_writes_its_entry(seeded: Store) -> None:
    result = garden(seeded)  # tend-and-propose: the decays spend the 25 mutations
    assert result.succeeded, result.report
    srun = next(iter(result.state.stores.values()))
    assert srun.stop is not None and srun.stop["reason"] == "mutation budget spent"
    text = _entry(seeded, result)
    assert "stopped in decay unused memories (mutation budget spent)" in text
    assert "the next run continues there" in text
    # The entry is outside the budget, like the report, and kept where the run resumes.
    assert parse_report(result.report).mutations_used == 25
    assert srun.stop["phase"] == "decay" and "journal" in srun.done
    # What waits for review is named by what it is about, not only counted.
    assert result.state.proposals > 0
    said = _sentence(text, f"{result.state.proposals} changes wait for review")
    assert "merge" in said and "(about " in said


def _block(i: str, text: str, now: dt.datetime) -> dict:
    return {
        "id": i, "session_id": None, "kind": "memory", "text": text, "importance": 0.5,
        "pinned": False, "tier": "hot", "status": "active", "parent_id": None,
        "tags": json.dumps(["gardening"]), "created_at": now, "updated_at": now,
        "access_count": 0, "feedback_score": 0.0,
    }  # fmt: skip


def test_a_quiet_run_still_writes_a_short_entry(store: Store) -> None:
    now = utcnow()
    texts = [
        "The tomatoes on the balcony need water every second day.",
        "Basil seeds go in the window box in April.",
        "The compost bin is emptied in autumn.",
    ]
    with store.mutation("agent", "seed") as m:
        m.insert("blocks", pl.DataFrame([_block(f"b{n}", t, now) for n, t in enumerate(texts)]))
    first = garden(store)
    assert first.succeeded, first.report
    assert "a first look at this store, at its 3 newest items" in _entry(store, first)
    assert "mostly about gardening" in _entry(store, first)  # the items' own tag
    quiet = garden(store)
    assert quiet.succeeded, quiet.report
    text = _entry(store, quiet)
    assert "nothing new since" in text and "no memory changed" in text
    assert text.splitlines()[-1].startswith("Garden state:")
    assert len(text) < 500
    assert sum(quiet.state.actions.values()) == 0 and quiet.state.budget["mutations"] == 0
