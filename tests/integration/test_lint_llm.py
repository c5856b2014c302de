"""The knowledge lint with a real OpenAI-compatible server (llama.cpp, SmolLM2-135M).

The small model's judgments are often wrong; this proves the path a deployment
takes — the detect_contradiction and confirm_change prompts and schemas over the
wire, a finding or nothing, no change without two agreeing judgments, and a
re-run that asks nothing — not the quality of the judgment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import memvault
from memvault.embed import make_embedder
from memvault.lint.confirm import unconfirmed_changes
from memvault.lint.run import lint_store
from tests.integration.conftest import LlamaServer
from tests.store.temporal_history import History

pytestmark = pytest.mark.integration


def test_a_contradiction_is_looked_for_over_the_wire_once(
    llm_server: LlamaServer, tmp_path: Path
) -> None:
    history = History()
    history.entity("p_ada", "Ada Lovelace")
    history.fact("c1", "p_ada", "prefers", "coffee in the morning", created="2026-01-02",
                 text="I always start with coffee in the morning.")  # fmt: skip
    history.fact("c2", "p_ada", "prefers", "no coffee in the morning", created="2026-03-02",
                 text="I gave up coffee; no coffee in the morning any more.")  # fmt: skip
    with memvault.open(f"duckdb://{tmp_path / 'store.duckdb'}") as store:
        history.ingest(store, tmp_path)
        judge = llm_server.judge(store)
        run = lint_store(store, judge, make_embedder("hashing"))
        stats = judge.stats.as_dict()
        assert run.semantic.asked == 1 and stats["calls"] >= 1 and stats["prompt_tokens"] > 0
        # Whatever the small model said: a change is applied only after a second judgment
        # agreed, and an unusable reply is a note, never a guessed verdict.
        assert unconfirmed_changes(store).is_empty()
        if not run.applied.get("supersede") and not run.applied.get("merge"):
            assert {r[0] for r in store.fetch("SELECT status FROM triples")} == {"active"}
        calls = judge.stats.calls
        again = lint_store(store, judge, make_embedder("hashing"))
        assert again.semantic.asked == 0 and judge.stats.calls == calls
        print(f"over the wire: {run.semantic.report.by_rule()} {dict(run.applied)} {stats}")
