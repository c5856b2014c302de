"""Conflict resolution with a real OpenAI-compatible server (llama.cpp, SmolLM2-135M).

The small model's verdicts are often wrong; this proves the path a real
deployment takes — the resolve_conflict prompt and schema over the wire, the
verdict (or the review row when it is unsure) stored, and a re-plan that asks
nothing — not the quality of the judgment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import memvault
from memvault.errors import JudgeError
from memvault.temporal import apply_conflict_plan, plan_conflicts
from tests.integration.conftest import LlamaServer
from tests.store.temporal_history import History

pytestmark = pytest.mark.integration


def test_an_ambiguous_pair_is_judged_over_the_wire_once(
    llm_server: LlamaServer, tmp_path: Path
) -> None:
    history = History()
    history.entity("p_ada", "Ada Lovelace")
    # Two employers stated for the same day: no rule can order them.
    history.fact("t1", "p_ada", "works_at", "Acme Corp", created="2026-03-01", valid="2026-03-01",
                 text="Ada works at Acme Corp now.")  # fmt: skip
    history.fact("t2", "p_ada", "works_at", "Globex", created="2026-03-02", valid="2026-03-01",
                 text="Ada joined Globex on March 1st.")  # fmt: skip
    with memvault.open(f"duckdb://{tmp_path / 'store.duckdb'}") as store:
        history.ingest(store, tmp_path)
        judge = llm_server.judge(store)
        try:
            plan = plan_conflicts(store, judge)
        except JudgeError as exc:  # an unusable reply is an error, never a guessed verdict
            pytest.fail(f"the small model's reply was not usable: {exc}")
        stats = judge.stats.as_dict()
        assert stats["calls"] >= 1 and stats["prompt_tokens"] > 0, stats
        [action] = [a for a in plan.actions if {"t1", "t2"} & {a.target_id, a.other_id}]
        apply_conflict_plan(store, plan, "dream-llm-test")
        decided = store.fetch("SELECT verdict, status, decided_by FROM conflict_verdicts")
        assert len(decided) == 1, decided
        if decided[0][1] == "review":  # unsure after escalation: a human decides, nothing changed
            assert (
                store.fetch("SELECT count(*) FROM review_queue WHERE status = 'pending'")[0][0] == 1
            )
            assert {r[0] for r in store.fetch("SELECT status FROM triples")} == {"active"}
        calls = judge.stats.calls
        again = plan_conflicts(store, judge)
        assert again.is_empty() and judge.stats.calls == calls, "a judged pair was asked again"
        print(f"verdict over the wire: {decided[0]} ({action.kind}), {stats}")
