"""What a step's own process costs when a job is launched (as the UI and the daemon launch it).

Each launch is a process of its own running the job under memvault's multiprocess executor on
an on-disk instance. A job of six trivial steps against a job of one gives the start cost of
a step (the baseline is in the same run: the ratio is what matters on a busy machine); then
the night's jobs report, per step, the time from the step's launch to its start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from tests.dagster.dream_support import seed_demo_store
from tests.perf.step_start_defs import STEPS

pytestmark = pytest.mark.perf
ROOT = Path(__file__).resolve().parents[2]

LAUNCH = """
import sys, dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableRepository
module, job, run_config = sys.argv[1], sys.argv[2], {}
if len(sys.argv) > 3:
    from pipelines.runner import run_config_for
    run_config = run_config_for(sys.argv[3])
repo = ReconstructableRepository.for_module(module, "defs", working_directory=".")
with dg.DagsterInstance.get() as instance:
    print(dg.execute_job(repo.get_reconstructable_job(job), instance=instance,
                         run_config=run_config, raise_on_error=False).run_id)
"""


def _launch(home: Path, module: str, job: str, *extra: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, module, job, *extra],
        cwd=ROOT,
        env=os.environ | {"DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    run_id = done.stdout.strip().splitlines()[-1]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        events = [
            (r.timestamp, r.dagster_event.event_type_value, r.dagster_event.step_key)
            for r in instance.all_logs(run_id)
            if r.dagster_event
        ]
    when = {kind: {s: t for t, k, s in events if k == kind} for kind in {k for _, k, _ in events}}
    starting, started = when["STEP_WORKER_STARTING"], when["STEP_START"]
    return {
        "run_s": round(
            min(when["PIPELINE_SUCCESS"].values()) - min(when["PIPELINE_START"].values()), 1
        ),
        "steps": len(started),
        "start_s": {s: round(started[s] - starting[s], 1) for s in started},
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in {"MEMVAULT_EMBEDDER": "hashing", "MEMVAULT_CLAUDE_PROJECTS": "none",
                        "MEMVAULT_INBOX": str(tmp_path / "inbox")}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MEMVAULT_LLM_BASE_URL", raising=False)
    shutil.copy(ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    return tmp_path


@pytest.mark.timeout(3600)
def test_the_start_of_a_step_and_the_steps_of_the_night(home: Path) -> None:
    one = _launch(home, "tests.perf.step_start_defs", "one_step")
    many = _launch(home, "tests.perf.step_start_defs", "many_steps")
    per_step = (many["run_s"] - one["run_s"]) / (STEPS - 1)  # type: ignore[operator]
    print(
        f"\none trivial step: {one['run_s']} s; {STEPS} trivial steps: {many['run_s']} s; "
        f"per extra step: {per_step:.1f} s ({many['run_s'] / one['run_s']:.1f}x)"
    )  # type: ignore[operator]
    url = f"duckdb://{home / 'store.duckdb'}"
    seed_demo_store(url, home, sessions=24)
    for job in ("collect_job", "dream_job", "garden_job", "lint_job", "tiering_job", "layers_job"):
        figures = _launch(home, "pipelines.definitions", job, url)
        print(f"{job}: {figures['steps']} steps, run {figures['run_s']} s, "
              f"start per step {figures['start_s']}")  # fmt: skip
    assert per_step > 0
