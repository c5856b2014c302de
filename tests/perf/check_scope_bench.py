"""The dream's checks on one store, every fact against the facts an incremental night checks.

Not a test: a measurement for docs/scale.md. Give it a store right after an incremental
night's new sessions were ingested, whose last dream recorded its checks (any store a dream
ran on since the checks became incremental); it computes that night's scope as the dream
would and prints each check's CPU seconds (the best of three) over every fact and over the
scope::

    python -m tests.perf.check_scope_bench duckdb:///path/to/store.duckdb

Nothing is written. Great Expectations is imported and set up once before the figures
(a fixed cost of the process, not of the store).
"""

from __future__ import annotations

import resource
import sys
from collections.abc import Callable
from typing import Any

import memvault
from memvault.dream.check_scope import check_scope
from memvault.judge import HeuristicJudge
from memvault.quality import validate_triples
from memvault.temporal import (
    Grounding,
    bitemporal_overlaps,
    data_loss_violations,
    grounding_violations,
    plan_conflicts,
)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _best_of(runs: int, check: Callable[[list[str] | None], Any], ids: list[str] | None) -> float:
    best = float("inf")
    for _ in range(runs):
        started = _cpu_s()
        check(ids)
        best = min(best, _cpu_s() - started)
    return best


def main(url: str) -> None:
    with memvault.open(url) as store:
        scope = check_scope(store, "check-scope-bench")
        ids = scope.triple_ids
        total = store.counts(("triples",))["triples"]
        print(f"scope: {scope.reason}: {'every' if ids is None else f'{len(ids):,}'} of "
              f"{total:,} facts")  # fmt: skip
        grounding = Grounding.load()
        checks: dict[str, Callable[[list[str] | None], Any]] = {
            "no_data_loss": lambda i: data_loss_violations(store, i),
            "bitemporal_consistency": lambda i: bitemporal_overlaps(store, grounding, i),
            "grounding": lambda i: grounding_violations(store, grounding, i),
            "idempotency (re-plan)": lambda i: plan_conflicts(
                store, HeuristicJudge(), triple_ids=i
            ),
            "triples_expectations": lambda i: validate_triples(store, i),
        }
        validate_triples(store, ["-"])  # Great Expectations' set-up, outside the figures
        validate_triples(store, (ids or [])[:5])
        sums = {"every fact": 0.0, "scope": 0.0}
        for name, check in checks.items():
            full = _best_of(3, check, None)
            scoped = _best_of(3, check, ids)
            sums["every fact"] += full
            sums["scope"] += scoped
            print(f"{name:24} every fact {full:7.3f} s   scope {scoped:7.3f} s")
        print(
            f"{'all five':24} every fact {sums['every fact']:7.3f} s   scope {sums['scope']:7.3f} s"
        )


if __name__ == "__main__":
    main(sys.argv[1])
