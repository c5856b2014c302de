"""The incremental lint, on DuckDB and PostgreSQL: after a first lint, the next reads what the
audit log names since (a defect written since is found, the findings of unchanged rows stay
as they were, nothing is judged again), and the whole-store pass (weekly, or on demand) sees
what an incremental lint cannot: a row changed behind the store's back."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from memvault.embed import make_embedder
from memvault.judge import ScriptedJudge
from memvault.lint.findings import open_findings
from memvault.lint.run import LintRun, ScopeSettings, lint_store
from memvault.lint.scope import lint_scope
from memvault.normalize import utcnow
from memvault.review import ReviewPolicy
from memvault.store import Store
from tests.helpers import table_dump
from tests.store.temporal_history import History


def _contradicts(request: Any) -> dict[str, Any]:
    return {"contradicts": True, "confidence": 0.9, "reason": "both cannot hold",
            "resolution": "NONE"}  # fmt: skip


def _lint(store: Store, judge: ScriptedJudge, **settings: Any) -> LintRun:
    return lint_store(
        store,
        judge,
        make_embedder("hashing"),
        policy=ReviewPolicy(),
        settings=ScopeSettings(**settings),
    )


def _scope(store: Store, run: LintRun, layer: str) -> dict[str, Any]:
    row = store.run(run.run_id)
    assert row is not None
    return dict(row["cursor"]["stages"][layer]["scope"])


def _open(store: Store) -> dict[str, tuple[str, str]]:
    """Open findings: id → (rule, the lint run that last found it)."""
    return {
        r["id"]: (r["rule"], r["run_id"])
        for r in table_dump(store, "lint_findings")
        if r["status"] == "open"
    }


def test_an_incremental_lint_finds_what_changed_and_judges_nothing_again(
    store: Store, tmp_path: Path
) -> None:
    h = History()
    for person in ("ada", "bob", "cy"):
        h.entity(person, person.title())
    h.entity("paris", "Paris", "place")
    h.fact("r1", "ada", "reports_to", "Bob", object_id="bob", created="2025-01-02")
    h.fact("r2", "bob", "reports_to", "Cy", object_id="cy", created="2025-01-03")
    h.fact("w0", "ada", "works_at", "Paris", object_id="paris", created="2025-01-04")
    h.fact("c1", "ada", "prefers", "coffee in the morning", created="2025-01-05")
    h.fact("c2", "ada", "prefers", "no coffee in the morning", created="2025-01-06")
    h.ingest(store, tmp_path)
    first_judge = ScriptedJudge({"detect_contradiction": _contradicts})
    first = _lint(store, first_judge)
    assert _scope(store, first, "L1")["scope"] == _scope(store, first, "L2")["scope"] == "full"
    assert [f.subject for f in first.reports["L2"].findings if f.rule == "grounding"] == ["w0"]
    assert "cycle" not in first.reports["L1"].by_rule()
    assert len(first_judge.received) >= 1 and open_findings(store, "L3") == {"contradiction": 1}
    before = _open(store)

    # Since: a fact that closes a reporting loop, and a second range violation, both ingested
    # (audited); the facts and findings of the first lint are left as they were.
    h.fact("r3", "cy", "reports_to", "Ada", object_id="ada", created="2025-01-07")
    h.fact("w1", "bob", "works_at", "Paris", object_id="paris", created="2025-01-08")
    h.ingest(store, tmp_path)
    second_judge = ScriptedJudge({"detect_contradiction": _contradicts})
    second = _lint(store, second_judge)
    scope = _scope(store, second, "L1")
    assert (scope["scope"], scope["facts"]) == ("changed", 2)
    assert _scope(store, second, "L2") == scope
    [loop] = [f for f in second.reports["L1"].findings if f.rule == "cycle"]
    assert loop.evidence == {"predicate": "reports_to", "entities": ["ada", "bob", "cy"]}
    grounding = [f.subject for f in second.reports["L2"].findings if f.rule == "grounding"]
    assert grounding == ["w1"], "w0 did not change: it is not judged again"
    assert second.reports["L1"].resolved == second.reports["L2"].resolved == 0
    now_open = _open(store)
    assert {k: v for k, v in now_open.items() if k in before} == before, "kept as they were"
    assert sorted(rule for rule, _ in now_open.values() if rule in ("cycle", "grounding")) == [
        "cycle",
        "grounding",
        "grounding",
    ]
    assert second.semantic.new_triples == 2
    assert all(
        {c.request.a.triple_id, c.request.b.triple_id} & {"r3", "w1"}  # type: ignore[attr-defined]
        for c in second_judge.received
    ), "only pairs with a new fact are judged"

    # Nothing changed since: no row re-checked, no judge call, every finding as it was.
    third_judge = ScriptedJudge({})
    third = _lint(store, third_judge)
    assert _scope(store, third, "L1")["facts"] == _scope(store, third, "L2")["facts"] == 0
    assert third_judge.received == [] and third.semantic.new_triples == 0
    assert all(not report.findings for report in third.reports.values())
    assert _open(store) == now_open


def test_the_whole_store_pass_sees_a_row_changed_behind_the_store_s_back(
    store: Store, tmp_path: Path
) -> None:
    h = History()
    h.entity("ada", "Ada")
    h.fact("f1", "ada", "uses", "Vim", created="2025-01-02")
    h.fact("f2", "ada", "likes", "tea", created="2025-01-03")
    h.ingest(store, tmp_path)
    _lint(store, ScriptedJudge({}))
    store.backend.execute("UPDATE triples SET object = ' ' WHERE id = 'f2'")  # not audited
    incremental = _lint(store, ScriptedJudge({}))
    assert _scope(store, incremental, "L1")["scope"] == "changed"
    assert "malformed" not in incremental.reports["L1"].by_rule()
    whole = _lint(store, ScriptedJudge({}), full=True)
    assert _scope(store, whole, "L1")["reason"] == "whole-store lint requested"
    [malformed] = [f for f in whole.reports["L1"].findings if f.rule == "malformed"]
    assert (malformed.subject, malformed.evidence["problem"]) == ("f2", "empty object")
    # A week after the last whole pass, the next lint reads the whole store again unasked.
    later = utcnow() + dt.timedelta(days=8)
    assert lint_scope(store, "L1", now=later).full
    assert not lint_scope(store, "L1", now=utcnow()).full
    assert lint_scope(store, "L1", full_every_days=0).full


def test_a_tier_move_re_checks_nothing_and_a_moved_block_is_re_checked(
    store: Store, tmp_path: Path
) -> None:
    """Tiering rewrites every block's tier after a first lint (a million audit rows at 1M
    blocks): no rule reads a tier, so the next lint's scope must stay empty; a block moved to
    another session holds a changed reference and is re-checked."""
    import polars as pl

    h = History()
    h.entity("ada", "Ada")
    h.fact("t1", "ada", "prefers", "tea", created="2025-01-02", text="Ada prefers tea.")
    h.fact("t2", "ada", "prefers", "jazz", created="2025-01-03", text="Ada likes jazz.")
    h.ingest(store, tmp_path)
    _lint(store, ScriptedJudge({"detect_contradiction": _contradicts}))
    run = store.begin_run("tiering")
    with store.mutation(run, "tiering") as m:
        m.update_many(
            "blocks",
            pl.DataFrame({"id": ["blk_t1", "blk_t2"], "tier": ["warm", "warm"]}),
            action="demote",
            reason="test",
        )
    store.finish_run(run, "succeeded")
    after_tiering = _lint(store, ScriptedJudge({}))
    assert _scope(store, after_tiering, "L1")["references"] == 0
    run = store.begin_run("repair")
    with store.mutation(run, "repair") as m:
        m.update_many(
            "blocks",
            pl.DataFrame({"id": ["blk_t1"], "session_id": ["ses_2025-01-03"]}),
            action="move",
            reason="test",
        )
    store.finish_run(run, "succeeded")
    after_move = _lint(store, ScriptedJudge({}))
    assert _scope(store, after_move, "L1")["references"] >= 1
