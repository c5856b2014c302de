"""``memvault dream`` and ``memvault asof``: the dream loop and point-in-time questions.

``dream`` runs ``dream_job`` (its five assets and their checks) in-process, on
the instance the UI reads, so the run shows under the job and can be
re-executed from failure there. Without ``--force`` it honours the dual gate
as the sensor does — the same ``gate_hours`` / ``gate_sessions`` settings of
the ``dream`` resource (``MEMVAULT_DREAM_GATE_HOURS`` / ``_SESSIONS``, or the
flags) — reading the gate's inputs from the store itself.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from memvault.dream import evaluate_gate, orient
from memvault.errors import MemvaultError
from memvault.normalize import utcnow
from memvault.temporal import asof as asof_query
from pipelines.cli.common import (
    JsonOpt,
    OwnerOpt,
    StoreOpt,
    app,
    chosen_owner,
    chosen_store,
    emit_json,
    err,
    handles_errors,
    note,
    opened,
    out,
)


def _parse_time(value: str, option: str) -> dt.datetime:
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise MemvaultError(
            f"{option} {value!r} is not a date (YYYY-MM-DD) or an ISO time"
        ) from None
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
        except OverflowError:  # e.g. 9999-12-31T23:59:59-14:00 is past year 9999 in UTC
            raise MemvaultError(
                f"{option} {value!r} is out of range: in UTC it falls outside years 1 to 9999"
            ) from None
    return parsed


def _dream_summary(result: Any, url: str) -> dict[str, Any]:
    from memvault.dream.report import stage_figures
    from pipelines.runner import check_results, failures, materializations

    assets = materializations(result)
    run_id = next((m.get("dream_run_id") for m in assets.values() if m.get("dream_run_id")), None)
    stages: dict[str, Any] = {}
    reverted = None
    if run_id:
        with opened(url) as store:
            stages = stage_figures(store, run_id)
            run = store.run(run_id)
        if run is not None and run["status"] == "reverted":
            reverted = str(run["error"] or "").rpartition("; ")[2] or "reverted"
    actions: dict[str, int] = {}
    for figures in stages.values():
        for action, n in figures.get("actions", {}).items():
            actions[action] = actions.get(action, 0) + int(n)
    return {
        "success": result.success,
        "run_id": run_id,
        "dagster_run_id": result.run_id,
        "failures": failures(result),
        "reverted": reverted,
        "skipped_reason": None,
        "actions": dict(sorted(actions.items())),
        "llm_calls": sum(int(f.get("llm_calls", 0)) for f in stages.values()),
        "checks": check_results(result),
        "stages": stages,
        "report": assets.get("dream_prune", {}).get("report"),
    }


@app.command()
@handles_errors
def dream(
    store: StoreOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Dream even if the dual gate holds")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Log every decision, write nothing")
    ] = False,
    gate_hours: Annotated[
        float | None,
        typer.Option(
            "--gate-hours", min=0, help="Hours since the last dream (MEMVAULT_DREAM_GATE_HOURS, 24)"
        ),
    ] = None,
    gate_sessions: Annotated[
        int | None,
        typer.Option(
            "--gate-sessions",
            min=1,
            help="New sessions since the last dream (MEMVAULT_DREAM_GATE_SESSIONS, 5)",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run dream_job (orient, signal, reflect, consolidate, prune) if the dual gate opens."""
    from pipelines.runner import persistent_instance, run_job
    from resources import DreamResource

    url = chosen_store(store)
    gate: dict[str, Any] = {"gate_hours": gate_hours, "gate_sessions": gate_sessions}
    settings = DreamResource(dry_run=dry_run, **{k: v for k, v in gate.items() if v is not None})
    with opened(url) as handle:
        stats = orient(handle)
    decision = evaluate_gate(utcnow(), stats.last_dream_at, stats.sessions_since, settings.config())
    if not decision.run and not force and not dry_run:
        _skipped(decision.reason, as_json)
        return
    with err.status("dreaming (dream_job: orient → signal → reflect → consolidate → prune) ..."):
        result = run_job(
            "dream_job",
            url,
            instance=persistent_instance(),
            owner=chosen_owner(),
            dream=settings,
            say=note,
        )
    summary = _dream_summary(result, url)
    if as_json:
        emit_json(summary)
    else:
        if summary["report"]:
            out.print(summary["report"], highlight=False, markup=False)
        for name, passed in summary["checks"].items():
            out.print(f"check {name}: {'passed' if passed else '[red]FAILED[/]'}")
    if not result.success:
        raise _failed(result, summary)


def _skipped(reason: str, as_json: bool) -> None:
    """Say that the dual gate held (and why): no dream ran."""
    if as_json:
        emit_json(
            {
                "success": True,
                "run_id": None,
                "skipped_reason": reason,
                "actions": {},
                "llm_calls": 0,
            }
        )
    else:
        out.print(f"dream skipped: {reason} (use --force to dream anyway)")


def _failed(result: Any, summary: dict[str, Any]) -> MemvaultError:
    """The error a failed dream ends the command with: its cause, and whether it was reverted
    (start a new one) or can be re-executed from the failed step (the traces with
    MEMVAULT_DEBUG)."""
    if os.environ.get("MEMVAULT_DEBUG"):
        from pipelines.runner import traces

        for trace in traces(result):
            err.print(trace, markup=False, highlight=False)
    cause = "; ".join(summary["failures"]) or "a blocking check stopped it"
    ended = summary["reverted"]
    after = (
        f"the dream was reverted ({ended}): the store is as it was before it; "
        "`memvault dream` starts a new one"
        if ended
        else "re-execute it from the failed step in the Dagster UI, `memvault ui`"
    )
    return MemvaultError(
        f"dream_job run {result.run_id} failed: {cause} ({after}; MEMVAULT_DEBUG=1 shows the "
        "traceback)"
    )


@app.command()
@handles_errors
def asof(
    subject: Annotated[str, typer.Argument(help="Entity id or name")],
    predicate: Annotated[str | None, typer.Argument(help="Only this predicate")] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="Valid time: YYYY-MM-DD or ISO (default now)")
    ] = None,
    known_at: Annotated[
        str | None,
        typer.Option("--known-at", help="Answer with what the store believed at this time"),
    ] = None,
    store: StoreOpt = None,
    owner: OwnerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What was true about SUBJECT at a date (bi-temporal: valid time, and store time with --known-at)."""
    when = _parse_time(at, "--at") if at else None
    known = _parse_time(known_at, "--known-at") if known_at else None
    with opened(store, owner) as handle:
        facts = asof_query(handle, subject, predicate, when, known_at=known)
    if as_json:
        emit_json([f.model_dump(mode="json") for f in facts])
        return
    if not facts:
        out.print(
            escape(
                f"nothing known about {subject}{' ' + predicate if predicate else ''} "
                f"at {at or 'now'}"
            )
        )
        return
    table = Table(
        "predicate",
        "object",
        "valid from",
        "until",
        "known since",
        "status",
        title=escape(f"{facts[0].subject} at {at or 'now'}"),
        title_justify="left",
    )
    for f in facts:
        table.add_row(
            escape(f.predicate),
            escape(f.object),
            f"{f.valid_at:%Y-%m-%d}" if f.valid_at else "?",
            f"{f.invalid_at:%Y-%m-%d}" if f.invalid_at else "",
            f"{f.known_since:%Y-%m-%d}",
            escape(f.status),
        )
    out.print(table)
