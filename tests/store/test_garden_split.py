"""Splitting an over-long memory: a model's split is applied, the offline rules' only proposed.

Without an LLM the rules keep the first sentence and cut the rest by length — a mechanical
guess, so the item is left as it is and the split waits in the proposals queue, whatever
confidence the rules state; an approved proposal is applied by the next run.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memvault
from memvault.gardener.ledger import Ledger
from memvault.gardener.report import parse_report
from memvault.gardener.tasks import normalized, sentences
from memvault.ingest import ingest_file
from memvault.normalize import utcnow
from memvault.store import Store
from tests.garden_support import adapter, drop_backup_schemas, garden, rules_as_a_model

TOPICS = (
    "The staging cluster runs on three nodes in Frankfurt and is rebuilt every Sunday night.",
    "Grace Hopper owns the release calendar and wants two days notice before a freeze.",
    "The billing service keeps invoices for seven years because the auditors ask for that.",
    "Backups of the analytics database go to cold storage after thirty days on fast disks.",
    "The mobile team ships on Thursdays and never on the last day of a quarter.",
    "Feature flags older than ninety days are reviewed in the Monday platform meeting.",
    "Load tests use recorded traffic from the busiest hour of the previous month.",
    "The on-call rotation swaps at nine in the morning, Lisbon time, every Wednesday.",
    "Incident notes are written within two working days and linked from the runbook.",
    "The search index is rebuilt from scratch whenever the tokenizer version changes.",
    "Vendor contracts renew in March, and legal needs the usage figures by February.",
    "Dashboards for the payments team are kept in the shared folder named money-metrics.",
)
BLOATED = "Notes from the platform sync. " + " ".join(TOPICS)


@pytest.fixture
def bloated(store_url: str, tmp_path: Path) -> Iterator[tuple[Store, str]]:
    """A store with one over-long memory among a few short ones; yields it and the item's id."""
    at = utcnow() - dt.timedelta(hours=2)
    records: list[dict[str, Any]] = [
        {"type": "session", "id": "ses_sync", "source": "claude-code", "started_at": at.isoformat()},
        {"type": "block", "id": "blk_long", "session_id": "ses_sync", "kind": "memory",
         "text": BLOATED, "created_at": at.isoformat()},
        {"type": "block", "id": "blk_tea", "session_id": "ses_sync", "kind": "memory",
         "text": "Ada drinks green tea in the afternoon.", "created_at": at.isoformat()},
        {"type": "block", "id": "blk_vim", "session_id": "ses_sync", "kind": "memory",
         "text": "Ada edits commit messages in vim.", "created_at": at.isoformat()},
    ]  # fmt: skip
    path = tmp_path / "sync.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with memvault.open(store_url) as store:
        ingest_file(store, str(path))
        assert len(BLOATED) > 750
        yield store, "blk_long"
    drop_backup_schemas(store_url)


def _split_writes(store: Store, run_id: str) -> list[str]:
    rows = store.fetch(
        "SELECT action FROM audit_log WHERE run_id = :r AND action LIKE 'split%'", {"r": run_id}
    )
    return [r[0] for r in rows]


def _pending_splits(store: Store) -> list[Any]:
    return Ledger(store).proposals(adapter(store).name, ("pending",), "split")


@pytest.mark.parametrize("mode", ["tend-and-propose", "autonomous"])
def test_without_a_model_the_split_is_proposed_and_the_item_left_as_it_is(
    bloated: tuple[Store, str], mode: str
) -> None:
    store, item = bloated
    result = garden(store, mode=mode)
    assert result.succeeded, result.report
    assert store.get_row("blocks", item)["text"] == BLOATED  # untouched
    assert not store.read_table("blocks", "parent_id = :p", {"p": item}).height
    assert _split_writes(store, result.run_id) == []
    # The proposal holds the whole split, every sentence somewhere, for a person to decide.
    [proposal] = _pending_splits(store)
    assert proposal.target_id == item and not proposal.certain and proposal.confidence is None
    assert "offline rules" in proposal.reason
    homes = [normalized(proposal.detail["parent_text"])]
    homes += [normalized(p["text"]) for p in proposal.detail["pieces"]]
    assert all(any(normalized(s) in h for h in homes) for s in sentences(BLOATED))
    # Counted in the run's report: no split done, one proposed, and why.
    report = parse_report(result.report)
    assert report.actions["splits"] == 0 and result.state.proposals >= 1
    assert [op.target for op in report.ops if op.verb == "SPLIT"] == [item]
    assert {op.state for op in report.ops if op.verb == "SPLIT"} == {"PROPOSED"}
    assert any(item in d and "offline rules" in d for d in report.deferred)
    # Proposed once: the next run leaves it to the person.
    again = garden(store, mode=mode)
    assert again.state.proposals == 0 and len(_pending_splits(store)) == 1
    assert store.get_row("blocks", item)["text"] == BLOATED


def test_a_models_split_is_applied_when_it_keeps_every_sentence(
    bloated: tuple[Store, str],
) -> None:
    store, item = bloated
    judge = rules_as_a_model()
    result = garden(store, judge=judge, mode="autonomous")
    assert result.succeeded, result.report
    assert judge.requests_for("bloat_split") and judge.stats.heuristic_answers == 0
    trimmed = store.get_row("blocks", item)["text"]
    children = store.read_table("blocks", "parent_id = :p", {"p": item})["text"].to_list()
    assert len(trimmed) < len(BLOATED) and children
    homes = [normalized(trimmed), *(normalized(c) for c in children)]
    assert all(any(normalized(s) in h for h in homes) for s in sentences(BLOATED))
    assert result.state.actions["splits"] == 1 and not _pending_splits(store)
    assert "split-trim" in _split_writes(store, result.run_id)


def test_an_approved_split_proposal_is_applied_by_the_next_run(
    bloated: tuple[Store, str],
) -> None:
    store, item = bloated
    garden(store)
    [proposal] = _pending_splits(store)
    assert Ledger(store).approve([proposal.id]) == [proposal.id]
    result = garden(store)  # still no model: the person's approval is what applies it
    assert result.succeeded, result.report
    assert store.get_row("blocks", item)["text"] == proposal.detail["parent_text"]
    children = store.read_table("blocks", "parent_id = :p", {"p": item})["text"].to_list()
    assert sorted(children) == sorted(p["text"] for p in proposal.detail["pieces"])
    assert result.state.actions["splits"] == 1
    [done] = Ledger(store).proposals(None, ("executed",), "split")
    assert done.id == proposal.id


def test_an_approved_split_of_an_item_changed_since_is_not_applied(
    bloated: tuple[Store, str],
) -> None:
    store, item = bloated
    garden(store)
    [proposal] = _pending_splits(store)
    Ledger(store).approve([proposal.id])
    rewritten = "The platform sync notes moved to the wiki page named platform-sync."
    with store.mutation("agent-run", "agent") as m:
        m.update("blocks", item, {"text": rewritten}, action="agent-write")
    result = garden(store)
    assert store.get_row("blocks", item)["text"] == rewritten
    assert result.state.actions.get("splits", 0) == 0
    [stale] = Ledger(store).proposals(None, ("stale",), "split")
    assert stale.id == proposal.id
