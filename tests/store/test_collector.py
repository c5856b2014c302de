"""The collector on both backends: incremental by content, a grown transcript adds only its new turns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import memvault
from memvault.collector import collect
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
