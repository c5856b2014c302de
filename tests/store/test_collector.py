"""The collector on both backends: incremental by content, a grown transcript adds only its new turns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import memvault
from memvault.collector import collect
from memvault.judge import ScriptedJudge
from memvault.review import decide, list_items
from memvault.store import Store
from tests.helpers import FIXTURES

SESSION_FILE = "c3e8b0d2-7f14-4a9b-b5d6-0e2f8a1c9d47.jsonl"


def _turn(kind: str, uuid: str, text: str, when: str) -> str:
    line = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/ada/src/shop",
        "sessionId": SESSION_FILE.removesuffix(".jsonl"),
        "version": "2.0.21",
        "gitBranch": "checkout-redesign",
        "type": kind,
        "uuid": uuid,
        "timestamp": when,
        "message": {
            "role": kind,
            "content": text if kind == "user" else [{"type": "text", "text": text}],
        },
    }
    if kind == "assistant":
        line["message"] |= {"id": f"msg_{uuid}", "type": "message", "model": "claude-sonnet-4-5"}
    return json.dumps(line)


def test_a_grown_transcript_adds_only_its_new_turns(store: Store, tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-ada-src-shop"
    project.mkdir(parents=True)
    transcript = project / SESSION_FILE
    shutil.copy(FIXTURES / "claude_code" / "-home-ada-src-shop" / SESSION_FILE, transcript)

    first = collect(store, inbox=None, claude_projects=tmp_path / "projects")
    assert first.files_ingested == 1
    blocks_before = store.counts()["blocks"]
    ended_before = store.fetch("SELECT ended_at FROM sessions")[0][0]

    unchanged = collect(store, inbox=None, claude_projects=tmp_path / "projects")
    assert unchanged.files_unchanged == 1 and not unchanged.inserted

    with transcript.open("a") as fh:
        fh.write(
            _turn(
                "user",
                "u-late-1",
                "Ship the checkout redesign on Friday with Lena.",
                "2099-01-01T00:00:00Z",
            )
            + "\n"
        )
    assert collect(store, inbox=None, claude_projects=tmp_path / "projects").failures, (
        "a time far in the future is refused"
    )
    transcript.write_text(transcript.read_text().rsplit("\n", 2)[0] + "\n")
    later = "2026-11-30T08:00:00Z"
    with transcript.open("a") as fh:
        fh.write(
            _turn("user", "u-late-1", "Ship the checkout redesign on Friday with Lena.", later)
            + "\n"
        )
        fh.write(
            _turn("assistant", "a-late-1", "Done: the release is tagged for Friday.", later) + "\n"
        )
    grown = collect(store, inbox=None, claude_projects=tmp_path / "projects")
    assert grown.failures == [] and grown.files_ingested == 1
    assert grown.inserted["block"] == 2 and grown.inserted["session"] == 0
    assert store.counts()["blocks"] == blocks_before + 2
    assert store.fetch("SELECT ended_at FROM sessions")[0][0] > ended_before


def test_the_collector_reads_the_inbox(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(FIXTURES / "small_history.jsonl", inbox)
    with memvault.open(f"duckdb://{tmp_path / 's.duckdb'}") as store:
        report = collect(store, inbox=inbox, claude_projects=None)
        assert report.files_ingested == 1 and sum(report.inserted.values()) == 10


def _extraction(request: Any) -> dict[str, Any]:
    """What a model that obeys the data would extract: a true fact, and facts a memory only
    hints at (an offer turned down, a person it never names)."""
    ids = {m.text.split()[0]: m.id for m in request.memories}
    joined, offer = ids["Hi,"], ids["Mallory"]

    def fact(subject: str, predicate: str, obj: str, block: str) -> dict[str, Any]:
        return {"subject": subject, "predicate": predicate, "object": obj, "object_is_entity": True,
                "valid_at": None, "block_id": block, "confidence": 0.95}  # fmt: skip

    return {
        "entities": [
            {"name": "Ada", "entity_type": "person", "block_ids": [joined]},
            {"name": "Acme", "entity_type": "organization", "block_ids": [joined]},
            {"name": "Globex", "entity_type": "organization", "block_ids": [offer]},
            {"name": "Mallory", "entity_type": "person", "block_ids": [offer]},
        ],
        "facts": [
            fact("Ada", "works_at", "Acme", joined),  # said: stored
            fact("Ada", "works_at", "Globex", offer),  # the memory names no Ada
            fact("Ada", "lives_in", "Globex", offer),  # an organization for a home
            fact("Mallory", "works_at", "Globex", offer),  # named, but the offer was turned down
        ],
    }


def test_facts_their_memory_does_not_state_wait_for_review_not_in_the_store(
    store: Store, tmp_path: Path
) -> None:
    project = tmp_path / "projects" / "-home-ada-src-shop"
    project.mkdir(parents=True)
    (project / SESSION_FILE).write_text(
        _turn("user", "u-1", "Hi, it's Ada: I joined Acme as a data engineer.", "2026-03-02T09:00:00Z") + "\n"
        + _turn("user", "u-2", "Mallory from Globex emailed again about their job offer; I turned it down.", "2026-03-03T09:00:00Z") + "\n",
        encoding="utf-8",
    )  # fmt: skip
    judge = ScriptedJudge({"extract_memory": _extraction})
    report = collect(store, inbox=None, claude_projects=tmp_path / "projects", judge=judge)
    assert report.files_ingested == 1 and not report.warnings
    facts = store.fetch(
        "SELECT e.name, t.predicate, t.object FROM triples t JOIN entities e ON e.id = t.subject_id"
    )
    assert facts == [("Ada", "works_at", "Acme")]
    assert report.llm_queued == {"subject_not_in_block": 1, "wrong_sides": 1, "denied_or_hedged": 1}
    queued = list_items(store, kinds=["extract"])
    assert len(queued) == 3 and {i.kind for i in queued} == {"extract:fact"}
    assert all(i.target_id == "cc:u-2" and i.run_id == report.run_ids[0] for i in queued)
    # A person's "correct" stores the fact (through a review run); "wrong" leaves it out.
    mallory = next(i for i in queued if i.proposal["fact"]["subject"] == "Mallory")
    decide(store, mallory.id, "correct")
    ada = next(i for i in queued if i.proposal["fact"]["predicate"] == "lives_in")
    decide(store, ada.id, "wrong")
    facts = store.fetch(
        "SELECT e.name, t.predicate, t.object FROM triples t JOIN entities e ON e.id = t.subject_id "
        "ORDER BY 1"
    )
    assert facts == [("Ada", "works_at", "Acme"), ("Mallory", "works_at", "Globex")]
