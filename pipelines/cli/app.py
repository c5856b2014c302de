"""The ``memvault`` command. It runs the same assets as Dagster does, in-process.

Every command takes ``--store URL`` (else ``MEMVAULT_STORE``, else
``duckdb://.memvault/memvault.duckdb``); ``--json`` prints one JSON object for
machines. A failure prints one line naming the cause and exits non-zero. This module
holds the store commands (init, status, ingest, export, runs, undo), the job commands
(collect, lint, demo) and ``ui``; the shared machinery lives in :mod:`pipelines.cli.common`,
the other commands in the package's modules named after them (``dream``, ``garden``,
``inbox``, ``layers``, ``lifecycle``, ``profile``, ``recall``, ``review``, ``serve``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

import memvault
from memvault.errors import MemvaultError
from memvault.records import RECORD_TYPES
from memvault.store import undo_run
from memvault.store.queries.audit import changes_by_run
from memvault.store.queries.runs import latest_runs
from memvault.store.tables import COUNTED_TABLES
from pipelines.cli import common
from pipelines.cli.common import (
    JsonOpt,
    OwnerOpt,
    StoreOpt,
    app,
    byte_progress,
    chosen_store,
    counts_table,
    emit_json,
    err,
    handles_errors,
    opened,
    out,
)

# -- commands ---------------------------------------------------------------------------------


@app.command()
@handles_errors
def init(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Create the store (or bring its schema up to date)."""
    with opened(store) as handle:
        info = {
            "store": handle.url,
            "backend": handle.kind,
            "schema_version": handle.schema_version(),
        }
    if as_json:
        emit_json(info)
    else:
        out.print(
            f"store ready: {escape(str(info['store']))} ({info['backend']}, "
            f"schema v{info['schema_version']})"
        )


@app.command()
@handles_errors
def status(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Row counts and the latest runs."""
    with opened(store) as handle:
        counts = handle.counts(COUNTED_TABLES)
        runs = latest_runs(handle, 5).select("id", "kind", "status", "started_at")
        info = {"store": handle.url, "schema_version": handle.schema_version(), "counts": counts}
    if as_json:
        emit_json(info | {"recent_runs": runs.to_dicts()})
        return
    out.print(f"store: {escape(str(info['store']))} (schema v{info['schema_version']})")
    out.print(counts_table("rows", None, counts))
    for run in runs.iter_rows(named=True):
        out.print(
            f"  {run['started_at']:%Y-%m-%d %H:%M}  {run['status']:<9} {escape(run['id'])}",
            highlight=False,
        )


@app.command()
@handles_errors
def ingest(
    source: Annotated[
        str, typer.Argument(help="A JSONL file, '-' for standard input, or a directory with --from")
    ],
    store: StoreOpt = None,
    from_format: Annotated[
        str,
        typer.Option(
            "--from", help="Input format: 'jsonl' (interchange) or 'claude-code' (transcripts)"
        ),
    ] = "jsonl",
    force: Annotated[
        bool, typer.Option(help="Re-read inputs whose content was ingested before")
    ] = False,
    include_subagents: Annotated[
        bool, typer.Option(help="claude-code: also import subagent transcripts")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add sessions, blocks, entities and facts to the store (all of a file, or none of it)."""
    from memvault.collector import collect
    from memvault.ingest import ingest_file
    from memvault.judge import make_judge
    from memvault.judge.store_cache import StoreJudgeCache

    with opened(store) as handle:
        if from_format == "claude-code":
            root = Path(source).expanduser()
            if not root.exists():
                raise MemvaultError(f"{root}: no such file or directory")
            with err.status("importing Claude Code transcripts ...") as spinner:
                report = collect(
                    handle,
                    inbox=None,
                    claude_projects=root,
                    judge=make_judge(cache=StoreJudgeCache(handle)),
                    include_subagents=include_subagents,
                    on_file=lambda path: spinner.update(f"importing {escape(Path(path).name)}"),
                )
            result: dict[str, Any] = report.as_dict()
            for _, problem in report.failures:
                err.print(f"[red]error:[/] {escape(problem)}", highlight=False, soft_wrap=True)
        elif from_format == "jsonl":
            size = Path(source).stat().st_size if source != "-" and Path(source).is_file() else None
            with byte_progress() as progress:
                task = progress.add_task(f"ingest {escape(Path(source).name)}", total=size)
                report_one = ingest_file(
                    handle, source, force=force, on_progress=lambda n: progress.advance(task, n)
                )
            result = report_one.as_dict()
        else:
            raise MemvaultError(f"unknown --from {from_format!r}: use 'jsonl' or 'claude-code'")
    if as_json:
        emit_json(result)
    else:
        inserted = result.get("inserted", {})
        if result.get("already_ingested"):
            out.print(
                f"{escape(source)}: already ingested (same content); nothing to do "
                "(--force re-reads it)"
            )
        else:
            added = ", ".join(f"{n} {t}" for t, n in inserted.items() if n) or "nothing new"
            out.print(f"ingested {escape(source)}: {added}")
    if from_format == "claude-code" and result["failures"]:
        err.print(f"{len(result['failures'])} transcript(s) not ingested; the others were")
        raise typer.Exit(1)


@app.command()
@handles_errors
def export(
    store: StoreOpt = None,
    owner: OwnerOpt = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write (default: stdout)")
    ] = None,
    types: Annotated[
        list[str] | None, typer.Option("--type", "-t", help="Only these record types")
    ] = None,
) -> None:
    """Write the store as JSONL interchange records (ingest reads them back)."""
    from memvault.export import write_export

    chosen = tuple(types) if types else RECORD_TYPES
    unknown = [t for t in chosen if t not in RECORD_TYPES]
    if unknown:
        raise MemvaultError(
            f"unknown record type(s) {', '.join(unknown)}: use {', '.join(RECORD_TYPES)}"
        )
    with opened(store, owner) as handle:
        if output is None:
            write_export(handle, sys.stdout, chosen)
            return
        tmp = output.with_suffix(output.suffix + ".partial")
        with tmp.open("w", encoding="utf-8") as fh:
            count = write_export(handle, fh, chosen)
        tmp.replace(output)
    err.print(f"exported {count:,} records to {escape(str(output))}")


@app.command()
@handles_errors
def runs(
    store: StoreOpt = None,
    kind: Annotated[
        str | None, typer.Option(help="Only runs of this kind (ingest, dream, undo, ...)")
    ] = None,
    limit: Annotated[int, typer.Option(min=1)] = 20,
    as_json: JsonOpt = False,
) -> None:
    """The latest runs, newest first (their ids are what `undo` takes); runs left running by a
    process that died are closed first (a dream's writes reverted)."""
    with opened(store) as handle:
        for closed in handle.fail_abandoned_runs():
            common.note(closed)
        frame = latest_runs(handle, limit, kind)
        changes = changes_by_run(handle)
    rows = [r | {"changes": int(changes.get(r["id"], 0))} for r in frame.to_dicts()]
    if as_json:
        emit_json(rows)
        return
    table = Table("started", "run id", "kind", "status", "changes")
    for r in rows:
        table.add_row(
            f"{r['started_at']:%Y-%m-%d %H:%M:%S}",
            escape(r["id"]),
            escape(r["kind"]),
            escape(r["status"]),
            f"{r['changes']:,}",
        )
    out.print(table)


@app.command()
@handles_errors
def undo(
    run_id: Annotated[str, typer.Argument(help="The run to revert (see `memvault runs`)")],
    store: StoreOpt = None,
    force: Annotated[
        bool, typer.Option(help="Undo even if later runs changed the same rows")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Restore the before-image of every change a run made (itself audited, so it can be undone)."""
    with opened(store) as handle:
        report = undo_run(handle, run_id, force=force)
    if as_json:
        emit_json(
            {"run_id": run_id, "undo_run_id": report.undo_run_id, "restored": dict(report.restored)}
        )
    else:
        detail = ", ".join(f"{n} {t}" for t, n in report.restored.items())
        out.print(
            f"undid {escape(run_id)}: restored {report.total} rows ({escape(detail)}); undo it "
            f"with `memvault undo {report.undo_run_id}`",
            highlight=False,
        )


@app.command()
@handles_errors
def collect(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Run the collector job (inbox + Claude Code transcripts, then embeddings)."""
    _run_and_report("collect_job", "collecting", store, as_json)


@app.command()
@handles_errors
def lint(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Run the knowledge lint job (structure, grounding, semantic, confirmation) and tend the
    review queue; findings are in the job's metadata, decisions wait in `memvault review`."""
    _run_and_report("lint_job", "linting", store, as_json)


def _run_and_report(job_name: str, doing: str, store: str | None, as_json: bool) -> None:
    """Run a named job on the UI's instance and print each asset's figures and each check."""
    from pipelines.runner import (
        check_results,
        failures,
        materializations,
        persistent_instance,
        run_job,
    )

    url = chosen_store(store)
    memvault.open(url).close()  # fail early, with a clear message, on a bad store URL
    with err.status(f"{doing} ({job_name}) ..."):
        result = run_job(
            job_name,
            url,
            instance=persistent_instance(),
            owner=common.chosen_owner(),
            say=common.note,
        )
    summary: dict[str, Any] = {
        "success": result.success,
        "dagster_run_id": result.run_id,
        "assets": materializations(result),
        "checks": check_results(result),
        "failures": failures(result),
    }
    if as_json:
        emit_json(summary)
    else:
        for key, meta in summary["assets"].items():
            out.print(f"{key}: " + common.flat_figures(meta), highlight=False)
        for name, passed in summary["checks"].items():
            out.print(f"check {name}: {'passed' if passed else '[red]FAILED[/]'}")
    if not result.success:
        raise MemvaultError(
            f"{job_name} run {result.run_id} failed ({'; '.join(summary['failures']) or 'see the step log'}); "
            "re-execute it from the Dagster UI (`memvault ui`)"
        )


@app.command()
@handles_errors
def demo(
    store: Annotated[
        str | None,
        typer.Option(
            "--store", "-s", help="Where to build the demo store (default .memvault/demo.duckdb)"
        ),
    ] = None,
    sessions: Annotated[int, typer.Option(min=1, help="Sessions to generate")] = 240,
    days: Annotated[int, typer.Option(min=1, help="Days of history")] = 150,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same history)")] = 7,
    as_json: JsonOpt = False,
) -> None:
    """Generate a realistic history into a fresh store, then run collect_job, dream_job and
    garden_job on it, as one night would."""
    from pipelines.cli.demo import run_demo

    summary = run_demo(
        store or common.global_store(), sessions=sessions, days=days, seed=seed, console=err
    )
    if as_json:
        emit_json(summary)
        return
    out.print(
        counts_table("memvault demo: counts before → after", summary["before"], summary["after"])
    )
    h = summary["history"]
    out.print(
        f"the history holds: employers {' → '.join(h['employers'])}; "
        f"cities {' → '.join(h['cities'])}; project {' → '.join(h['project_status'])}; "
        f"{h['near_duplicate_groups']} near-duplicate groups, {h['bloated_blocks']} bloated memories "
        f"(> 750 chars), {h['recall_gaps']} recall signatures failing twice or more, "
        f"{h['changed_preferences']} changed preferences"
    )
    for key, meta in summary["assets"].items():
        out.print(f"[bold]{key}[/]: " + common.flat_figures(meta), highlight=False)
    for name, passed in summary["checks"].items():
        out.print(f"check {name}: {'passed' if passed else '[red]FAILED[/]'}")
    for line in summary["failures"]:
        err.print(f"[red]failed:[/] {escape(line)}", highlight=False)
    runs = ", ".join(f"{job} {run_id}" for job, run_id in summary["dagster_runs"].items())
    out.print(f"\nDagster runs: {runs}")
    out.print(f"store: {escape(summary['store'])}", highlight=False)
    out.print(f"history file: {escape(summary['history_file'])}", highlight=False)
    profile = summary.get("profile") or {}
    if profile.get("days"):
        out.print(
            f"daily profile: {profile['days']} days ({profile['first']} .. {profile['last']}) in "
            f"{len(profile['runs'])} run(s) of profile_job",
            highlight=False,
        )
    _print_lifecycle(summary.get("lifecycle") or {})
    _print_next_steps(summary["next_steps"], bool(profile.get("days")))
    if not summary["success"]:
        raise typer.Exit(1)


def _print_next_steps(steps: list[str], profiled: bool) -> None:
    """One command a line, never wrapped, each with the demo's store: typed as printed (from
    this directory, in a new shell) it answers from the demo's memory."""
    out.print(
        "\nnext steps, on the demo's store (your own default store is left as it is):",
        highlight=False,
    )
    for step in steps:
        out.print(f"  {step}", markup=False, highlight=False, soft_wrap=True)
    where = (
        "; the partitions: Assets → profile → daily_snapshot (or diary_page, interest_7d …) → "
        "Partitions; the runs: Runs, filtered by job profile_job"
        if profiled
        else ""
    )
    out.print(
        f"the last one serves Dagster's UI on http://127.0.0.1:3000 (Ctrl-C stops it){where}",
        highlight=False,
    )


def _print_lifecycle(found: dict[str, Any]) -> None:
    """The demo's closing lines: what the read path and the lifecycle jobs found."""
    if not found:
        return
    asked = found["recall"]
    facts = "; ".join(asked["facts"]) or "no fact"
    out.print(
        f"recall {asked['query']!r}: {escape(facts)}; top memory: {escape(asked['top'] or 'none')} "
        f"({asked['latency_ms']} ms; judged {asked['verdict']} against the history)",
        highlight=False,
    )
    tiers = ", ".join(f"{n} {t}" for t, n in found["tiers"].items())
    kept, twin = found["reinforced_block"], found["untouched_twin"]
    watched = (
        f"; the early memory the owner keeps asking about ({kept[0]}) is {kept[1]}, "
        f"its untouched twin ({twin[0]}) {twin[1]}"
        if kept[0] and twin[0]
        else ""
    )
    out.print(f"tiers: {tiers}{watched}", highlight=False)
    out.print(
        f"preferences: {found['preferences_binding']} still bind, {found['preferences_stale']} "
        "no longer (no new evidence for months)",
        highlight=False,
    )
    skills = ", ".join(f"{name} {level}" for name, level in found["skills"].items())
    out.print(f"skills: {escape(skills)}", highlight=False)
    inbox = ", ".join(f"{n} {kind}" for kind, n in found["inbox"].items()) or "nothing"
    out.print(
        f"discoveries waiting in the inbox: {inbox}; "
        f"{found['prefetched_queries']} likely next queries prefetched",
        highlight=False,
    )


@app.command()
@handles_errors
def ui(
    port: Annotated[int, typer.Option(help="Port of the web UI")] = 3000,
    host: Annotated[str, typer.Option(help="Interface to listen on")] = "127.0.0.1",
    store: StoreOpt = None,
) -> None:
    """Serve Dagster's UI and daemon on memvault's code location (`dg dev`), DAGSTER_HOME=.dagster;
    Ctrl-C stops it with every process it started."""
    import dagster as dg

    from memvault.supervise import run_supervised
    from pipelines.runner import automation_on, dagster_home

    exe = str(Path(sys.executable).with_name("dg"))
    if not Path(exe).exists():
        exe = shutil.which("dg") or exe
    env = os.environ | {"DAGSTER_HOME": str(dagster_home()), "MEMVAULT_STORE": chosen_store(store)}
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        automation_on(instance)  # before the UI reads it: "Auto-materialize on"
    err.print(
        escape(
            f"Dagster UI on http://{host}:{port}  (store {env['MEMVAULT_STORE']}, "
            f"DAGSTER_HOME {env['DAGSTER_HOME']})"
        )
    )
    code = run_supervised(
        [exe, "dev", "-m", "pipelines.definitions", "--host", host, "--port", str(port)],
        env=env,
        say=common.note,
    )
    if code > 128:  # stopped by a signal (Ctrl-C): every process it started has stopped
        err.print("the Dagster UI stopped (webserver, daemon and code server with it)")
    raise typer.Exit(code)


# The other commands register themselves on `app` when imported; the gardener, the review
# queue and the layers are sub-apps.
import pipelines.cli.dream  # noqa: E402
import pipelines.cli.inbox  # noqa: E402
import pipelines.cli.lifecycle  # noqa: E402
import pipelines.cli.profile  # noqa: E402
import pipelines.cli.recall  # noqa: E402
import pipelines.cli.serve  # noqa: E402, F401
from pipelines.cli.gardener import garden_app  # noqa: E402
from pipelines.cli.layers import attitudes_app, skills_app  # noqa: E402
from pipelines.cli.owners import owners_app  # noqa: E402
from pipelines.cli.review import review_app  # noqa: E402

app.add_typer(garden_app, name="garden")
app.add_typer(review_app, name="review")
app.add_typer(attitudes_app, name="attitudes")
app.add_typer(skills_app, name="skills")
app.add_typer(owners_app, name="owners")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
