"""Attention against stated preference, on DuckDB and PostgreSQL: what the owner says
matters and has not looked at for 30 days, on the diary page and in the lint."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from memvault.judge import HeuristicJudge
from memvault.lint.grounding_layer import lint_grounding
from memvault.profile.diary import write_diary
from memvault.profile.stated import divergences
from memvault.store import Store
from tests.store.temporal_history import History

FIRST = dt.date(2026, 1, 1)


def day(n: int) -> dt.date:
    """Day ``n`` of the history (day 1 is the first)."""
    return FIRST + dt.timedelta(days=n - 1)


def _history(store: Store, tmp_path: Path, days: int = 40) -> None:
    """Python every day, Rust on days 1-5 only; attitudes naming them, and two that must not
    count: one too recent, one superseded."""
    h = History()
    for name in ("Python", "Rust", "Golang", "Haskell"):
        h.entity(name.lower(), name, "tool")
    early = "2025-12-20"
    h.attitude("a_rust", "values", "Rust matters for our services", created=early)
    h.attitude("a_py", "values", "Python first, always", created=early)
    h.attitude("a_go", "tooling", "Golang for small CLIs", created=day(35).isoformat())
    h.attitude("a_hs", "values", "Haskell matters", created=early,
               superseded=f"{day(39).isoformat()}T12:00")  # fmt: skip
    h.attitude("a_hs2", "values", "Haskell matters less now", created=day(39).isoformat(),
               previous="a_hs")  # fmt: skip
    h.ingest(store, tmp_path)
    rows = []
    for n in range(1, days + 1):
        attention = {"python": 3} | ({"rust": 1} if n <= 5 else {})
        rows.append(
            {
                "id": f"profile:{day(n).isoformat()}",
                "day": day(n),
                "created_at": dt.datetime.combine(day(n), dt.time(23, 59)),
                "known_at": dt.datetime.combine(day(n) + dt.timedelta(days=1), dt.time()),
                "attention": json.dumps(attention),
                "activity": json.dumps({"sessions": 1, "memories": 2, "mentions": 4}),
            }
        )
    store.backend.insert_df("profile_daily", pl.DataFrame(rows))


def _found(store: Store, n: int) -> set[tuple[str, str]]:
    return {(d.attitude_id, d.entity_name) for d in divergences(store, [day(n)])[day(n)]}


def test_a_stated_preference_unattended_for_30_days_is_a_divergence(
    store: Store, tmp_path: Path
) -> None:
    _history(store, tmp_path)
    assert _found(store, 20) == set(), "the window reaches before the history: no evidence"
    assert _found(store, 34) == {("a_hs", "Haskell")}, "Rust was mentioned on day 5"
    assert _found(store, 35) == {("a_hs", "Haskell"), ("a_rust", "Rust")}
    # Day 40: Haskell's attitude was superseded on day 39 and its successor is too recent, as
    # is the Golang one; Python is attended every day.
    assert _found(store, 40) == {("a_rust", "Rust")}


def test_the_diary_and_the_lint_report_it(store: Store, tmp_path: Path) -> None:
    _history(store, tmp_path)
    snapshots = store.fetch_df("SELECT * FROM profile_daily WHERE day = :d", {"d": day(40)})
    result = write_diary(store, snapshots, HeuristicJudge(), "diary-stated")
    [page] = result.pages["text"].to_list()
    assert 'Said but not attended to: you said "Rust matters for our services"' in page
    assert "Haskell" not in page
    [finding] = [f for f in lint_grounding(store).findings if f.rule == "attention_divergence"]
    assert (finding.subject, finding.evidence["entity"]) == ("a_rust", "Rust")
    assert store.get_row("attitudes", "a_rust")["superseded_at"] is None  # type: ignore[index]
