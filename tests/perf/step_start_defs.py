"""Two jobs of trivial steps under the code location's executor, for test_step_start_perf.

``one_step`` has one step, ``many_steps`` a chain of :data:`STEPS`; both run on memvault's
multiprocess executor (a fork server that preloads the code location), so the difference
between them is what a step's own process costs to start, nothing else.
"""

from __future__ import annotations

import dagster as dg

from pipelines.definitions import executor

STEPS = 6


@dg.op
def first() -> int:
    return 1


@dg.op
def following(value: int) -> int:
    return value + 1


@dg.job(executor_def=executor)
def one_step() -> None:
    first()


@dg.job(executor_def=executor)
def many_steps() -> None:
    value = first()
    for _ in range(STEPS - 1):
        value = following(value)


defs = dg.Definitions(jobs=[one_step, many_steps])
