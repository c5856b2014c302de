"""Review items of every kind, made by the code that makes them in production.

The dream's conflicts (two supersessions judged by a scripted judge), a fact stored
with low confidence (the lint's intake), an entity left with only retired facts
(the lint's archive proposal) and two near-duplicate memory blocks (the
gardener's merge proposal). Memory texts carry markup, as a hostile conversation
would.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import memvault
from memvault.gardener.ledger import Ledger
from memvault.judge import ScriptedJudge
from memvault.review import ReviewPolicy, calibrate, list_items
from memvault.review.intake import propose_archives, queue_low_confidence
from memvault.temporal import apply_conflict_plan, plan_conflicts
from tests.store.temporal_history import NOW, History

#: What a hostile conversation put into a memory: it must reach the page escaped.
SCRIPT = "<script>alert('memvault')</script>"
KEPT_TEXT = "Ada drinks green tea every morning before the standup"
MERGED_TEXT = f"Ada drinks black coffee every morning before the standup {SCRIPT}"
DOUBT_TEXT = "I think Ada might be moving to Lisbon next spring, not sure"
#: A fact id longer than a narrow terminal: its review item's id must still be shown whole.
LONG_ID = "doubt-" + "0123456789abcdef" * 4


#: The two conflicts' organizations and their old and new places.
MOVES = (("globex", "paris", "berlin"), ("initech", "oslo", "rome"))


def two_waiting_changes(
    url: str, tmp_path: Path, moves: tuple[tuple[str, str, str], ...] = MOVES
) -> None:
    """Two conflicts (Paris → Berlin, Oslo → Rome, or other ``moves``) that wait for a person."""
    h = History()
    for org, a, b in moves:
        h.entity(org, org.capitalize(), "organization")
        h.entity(a, a.capitalize(), "place")
        h.entity(b, b.capitalize(), "place")
        h.fact(f"{org}1", org, "located_in", a.capitalize(), object_id=a, valid="2020-01-01",
               created="2024-05-01")  # fmt: skip
        h.fact(f"{org}2", org, "located_in", b.capitalize(), object_id=b, valid="2024-06-01",
               created="2024-06-02")  # fmt: skip

    def supersede(request):  # type: ignore[no-untyped-def]
        newer = "a" if request.a.triple_id.endswith("2") else "b"
        return {"verdict": "SUPERSEDE", "confidence": 0.95, "newer": newer, "reason": "moved"}

    agree = {"agree": True, "confidence": 0.9, "reason": "later start"}
    judge = ScriptedJudge({"resolve_conflict": supersede, "confirm_change": lambda _: agree})
    with memvault.open(url) as store:
        h.ingest(store, tmp_path)
        policy = ReviewPolicy(impact_thresholds={"conflict": 0.0})
        plan = plan_conflicts(store, judge, now=NOW, policy=policy)
        apply_conflict_plan(store, plan, "dream-page-1")
        assert len(list_items(store)) == 2


@dataclass(frozen=True)
class Kinds:
    """The ids of the items made, by kind."""

    memory: str
    archive: str
    merge: str


def every_kind(url: str, tmp_path: Path) -> Kinds:
    """The two conflicts, then a low-confidence memory, an archive and a merge proposal."""
    two_waiting_changes(url, tmp_path)
    h = History()
    h.entity("ada", "Ada", "person")
    h.entity("acme", f"Acme {SCRIPT}", "organization")
    h.fact(LONG_ID, "ada", "lives_in", "Lisbon", valid="2025-03-01", created="2025-01-10",
           text=DOUBT_TEXT, confidence=0.2)  # fmt: skip
    h.fact("kept", "ada", "drinks", "green tea", created="2025-02-01", text=KEPT_TEXT)
    h.fact("merged", "ada", "drinks", "black coffee", created="2025-02-02", text=MERGED_TEXT)
    h.fact("old", "acme", "based_in", "Leeds", valid="2019-01-01", invalid="2021-01-01",
           created="2020-01-01")  # fmt: skip
    policy = ReviewPolicy(auto_confidence=0.95)
    with memvault.open(url) as store:
        h.ingest(store, tmp_path)
        store.backend.execute("UPDATE triples SET status = 'invalidated' WHERE id = 'old'")
        run_id = store.begin_run("lint", {})
        assert queue_low_confidence(store, run_id, policy).queued == 1
        archived = propose_archives(
            store, [("acme", f"Acme {SCRIPT}")], run_id, policy, calibrate(store, policy)
        )
        assert archived.queued == 1
        merge, new = Ledger(store).propose(
            run_id, "dedup", store_name="memvault", action="merge", target_table="blocks",
            target_id="blk_merged", related=["blk_kept"], certain=False, confidence=0.7,
            reason="near-duplicate of blk_kept", detail={"similarity": 0.91},
        )  # fmt: skip
        assert new
        store.finish_run(run_id, "succeeded", {})
        ids = {i.kind: i.id for i in list_items(store)}
    return Kinds(memory=ids["memory"], archive=ids["lint:archive-entity"], merge=merge)
