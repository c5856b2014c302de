"""Benchmark of the knowledge lint on a ≥100k-block store, its LLM budget, and how far 200
human decisions move the auto-approve rate.

Run: ``.venv/bin/pytest tests/perf -m perf -s -k lint``. Prints:

* each layer's wall time on the whole store (target: structure + grounding ≤ 30 s), and
  their ratio to a plain read of the facts and entities into polars (the least any
  lint has to do), measured in the same run;
* LLM calls of the semantic and confirmation layers per 100 new facts with a scripted
  judge that finds every candidate contradictory and agrees with every change (the
  worst case for the budget; target ≤ 10), and on an immediate re-run (must be 0);
* the share of proposed changes the review rules auto-approve before and after a
  simulated series of 200 human decisions, and how many of those auto-approved were
  in fact wrong.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memvault
from memvault.embed import HashingEmbedder
from memvault.ingest import ingest_file
from memvault.judge import HeuristicJudge, ScriptedJudge
from memvault.lint.run import (
    begin_lint,
    lint_store,
    run_confirm,
    run_grounding,
    run_semantic,
    run_structure,
)
from memvault.review import ReviewPolicy, route
from memvault.review.calibration import Calibration, replay
from tests.perf.dream_data import build_scaled_store, holdout_path

SESSIONS, SEED, HOLDOUT = 10_100, 11, 100


def _seconds(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


@pytest.mark.perf
@pytest.mark.timeout(7200)
def test_lint_layers_budget_and_calibration(tmp_path: Path) -> None:
    url = f"duckdb://{tmp_path / 'lint.duckdb'}"
    build_scaled_store(url, sessions=SESSIONS, seed=SEED, holdout=HOLDOUT)
    holdout = holdout_path(SESSIONS, SEED, HOLDOUT)
    embedder = HashingEmbedder()
    policy = ReviewPolicy()
    with memvault.open(url) as store:
        print(f"\nstore: {store.counts(('blocks', 'entities', 'triples', 'sessions'))}")
        read_s, _ = _seconds(
            lambda: (
                store.fetch_df("SELECT * FROM triples"),
                store.fetch_df("SELECT * FROM entities"),
            )
        )
        run = "lint-perf-1"
        begin_lint(store, run)
        l1_s, l1 = _seconds(lambda: run_structure(store, run))
        l2_s, (l2, _) = _seconds(lambda: run_grounding(store, run, policy))
        judge = HeuristicJudge()
        l3_s, l3 = _seconds(lambda: run_semantic(store, judge, embedder, run, None))
        l4_s, _ = _seconds(lambda: run_confirm(store, judge, run, policy))
        store.finish_run(run, "succeeded")
    print(
        f"L1 structure {l1_s:.1f} s ({len(l1.findings)} findings), L2 grounding {l2_s:.1f} s "
        f"({len(l2.findings)} findings): L1+L2 = {l1_s + l2_s:.1f} s (target ≤ 30 s) "
        f"= {(l1_s + l2_s) / read_s:.1f}× a plain read of facts and entities ({read_s:.2f} s)"
    )
    print(
        f"L3 semantic (offline judge, first lint: the newest {l3.new_triples} facts, "
        f"{l3.candidates} candidate pairs, {l3.asked} asked) {l3_s:.1f} s; L4 {l4_s:.2f} s"
    )

    calls = {"detect_contradiction": 0, "confirm_change": 0}

    def contradicts(request: Any) -> dict[str, Any]:
        calls["detect_contradiction"] += 1
        newer = "a" if request.a.created_at >= request.b.created_at else "b"
        return {"contradicts": True, "confidence": 0.95, "reason": "scripted",
                "resolution": "SUPERSEDE", "newer": newer}  # fmt: skip

    def agree(request: Any) -> dict[str, Any]:
        calls["confirm_change"] += 1
        return {"agree": True, "confidence": 0.95, "reason": "scripted"}

    scripted = ScriptedJudge({"detect_contradiction": contradicts, "confirm_change": agree})
    with memvault.open(url) as store:
        before = store.counts(("triples",))["triples"]
        ingest_file(store, holdout)
        new = store.counts(("triples",))["triples"] - before
        lint_s, lint = _seconds(lambda: lint_store(store, scripted, embedder, policy=policy))
        used = sum(calls.values())
        rerun = lint_store(store, scripted, embedder, policy=policy)
    print(
        f"after +{HOLDOUT} sessions ({new} new facts): whole lint {lint_s:.1f} s; LLM calls "
        f"L3 {calls['detect_contradiction']} + L4 {calls['confirm_change']} = "
        f"{100 * used / max(new, 1):.2f} per 100 new facts (target ≤ 10); "
        f"applied {dict(lint.applied)}; immediate re-run: {sum(calls.values()) - used} calls, "
        f"{rerun.semantic.new_triples} new facts"
    )
    assert sum(calls.values()) == used, "a re-run must cost no LLM call"

    for judge_name, accuracy in (("right as often as it is confident", None), ("right 99%", 0.99)):
        before, after, wrong_share = _calibration_effect(policy, accuracy)
        print(
            f"auto-approve rate on 500 proposals, judge {judge_name}: {before[0]:.1%} before, "
            f"{after[0]:.1%} after 200 human decisions ({wrong_share} of them 'wrong'); wrong "
            f"among the auto-approved: {before[1]:.1%} before, {after[1]:.1%} after"
        )


def _calibration_effect(
    policy: ReviewPolicy, accuracy: float | None
) -> tuple[tuple[float, float], tuple[float, float], int]:
    """Route 500 proposals before and after replaying 200 human decisions; a proposal is
    right with probability ``accuracy`` (None: its confidence)."""
    rng = np.random.default_rng(7)

    def proposals(n: int) -> list[tuple[str, float, float, bool]]:
        kinds = rng.choice(["conflict:supersede", "conflict:merge"], n)
        confidence = rng.uniform(0.8, 1.0, n)
        impact = rng.uniform(0.0, 0.8, n)
        chance = confidence if accuracy is None else np.full(n, accuracy)
        right = rng.uniform(0.0, 1.0, n) < chance
        return list(zip(kinds, confidence, impact, right, strict=True))

    held_out = proposals(500)

    def rate(calibration: Calibration) -> tuple[float, float]:
        auto = [p for p in held_out if route(policy, calibration, p[0], p[1], p[2]).auto]
        return len(auto) / len(held_out), sum(not p[3] for p in auto) / max(len(auto), 1)

    decided = [(k, c, "correct" if right else "wrong") for k, c, _, right in proposals(200)]
    wrong = sum(d[2] == "wrong" for d in decided)
    return rate(Calibration()), rate(replay(policy, decided)), wrong
