"""Execute a code-location job in a process of its own, as ``dagster job execute`` does.

``python -m tests.dagster.launcher JOB STORE_URL [--reexecute-from-failure RUN_ID |
--partitions FIRST LAST | --owner NAME]`` runs
the job of ``pipelines.definitions`` (its multiprocess executor: one process per step)
on the instance of ``DAGSTER_HOME`` and prints the run id; ``--partitions`` makes the run
cover a range of daily partitions, as one run of a backfill does; ``--owner`` runs one owner's
partition of a code location with many owners (its store is the owner's: STORE_URL is unused). A fresh process per launch,
like a run worker, so each run sees the environment it was started with.
"""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableRepository

from pipelines.runner import partition_range_tags, run_config_for

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    job_name, store_url = argv[0], argv[1]
    repository = ReconstructableRepository.for_module(
        "pipelines.definitions", "defs", working_directory=str(ROOT)
    )
    job = repository.get_reconstructable_job(job_name)
    with dg.DagsterInstance.get() as instance:
        if len(argv) > 3 and argv[2] == "--reexecute-from-failure":
            options = dg.ReexecutionOptions.from_failure(argv[3], instance)
            result = dg.execute_job(
                job, instance=instance, reexecution_options=options, raise_on_error=False
            )
        elif argv[2:3] == ["--owner"]:
            result = dg.execute_job(
                job,
                instance=instance,
                tags={"dagster/partition": argv[3], "memvault/owner": argv[3]},
                raise_on_error=False,
            )
        else:
            tags = partition_range_tags(argv[3], argv[4]) if argv[2:3] == ["--partitions"] else {}
            result = dg.execute_job(
                job,
                instance=instance,
                run_config=run_config_for(store_url),
                tags=tags,
                raise_on_error=False,
            )
    print(result.run_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
