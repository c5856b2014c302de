"""``memvault garden``: the memory gardener's nightly ceremony (``garden_job``), and its approvals.

``memvault garden --store URL`` runs ``garden_job`` in-process on one or more
stores (``--store`` again for each; ``duckdb://``, ``postgresql://`` or
``mcp+stdio:<command line>``), on the instance the UI reads, and prints the
report; ``--workflow-outcome`` adds the one ``SUBSTRATE_OUTCOME_V1=`` line a
workflow runner reads, last. A phase that fails fails the run (its resume
point is saved); the report of what was done so far is printed, marked failed.
``memvault garden proposals`` lists what waits for a human and
``memvault garden approve ID... | --all`` approves it for the next run.

The gardener's bookkeeping (runs, proposals, the audit of external changes,
the report when the store cannot keep one) lives in a memvault store: the
first memvault store tended, else ``--ledger`` (default: the memvault store).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

garden_app = typer.Typer(
    name="garden",
    help="Tend memory stores: a budgeted, idempotent, audited nightly ceremony.",
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)

StoresOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--store",
        "-s",
        help="A store to tend (repeat for several): duckdb://..., postgresql://..., mcp+stdio:<cmd>",
    ),
]
LedgerOpt = Annotated[
    str | None,
    typer.Option(
        "--ledger", help="memvault store for runs and proposals (default: MEMVAULT_STORE)"
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text")]


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The main CLI's error handling (one-line errors, exit code 1)."""
    from pipelines.cli import common as base

    return base.handles_errors(fn)


@garden_app.callback(invoke_without_command=True)
def garden(
    ctx: typer.Context,
    store: StoresOpt = None,
    ledger: LedgerOpt = None,
    mode: Annotated[
        str, typer.Option(help="tend-and-propose (default) or autonomous (executes clear cases)")
    ] = "tend-and-propose",
    max_mutations: Annotated[int, typer.Option(min=0, help="Mutation budget of the run")] = 25,
    max_judgments: Annotated[int, typer.Option(min=0, help="Judgment budget of the run")] = 50,
    workflow_outcome: Annotated[
        bool,
        typer.Option(
            "--workflow-outcome", help="Print the SUBSTRATE_OUTCOME_V1 line last (workflow jobs)"
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run the gardening ceremony on the store(s) and print the report."""
    if ctx.invoked_subcommand is not None:
        return
    _guarded(_run)(store, ledger, mode, max_mutations, max_judgments, workflow_outcome, as_json)


def _run(
    store: list[str] | None,
    ledger_url: str | None,
    mode: str,
    max_mutations: int,
    max_judgments: int,
    workflow_outcome: bool,
    as_json: bool,
) -> None:
    from memvault.gardener.outcome import outcome_line
    from pipelines.cli import common as base
    from pipelines.runner import persistent_instance, run_job

    home, settings = _settings(store, ledger_url, mode, max_mutations, max_judgments)
    with base.err.status("gardening (garden_job) ..."):
        result = run_job(
            "garden_job",
            home.url,
            instance=persistent_instance(),
            owner=base.chosen_owner(),
            gardener=settings,
            say=base.note,
        )
    report, outcome, summary, state = _ended(result, settings, home)
    if as_json:
        base.emit_json(
            {
                "run_id": state.get("run_id"),
                "dagster_run_id": result.run_id,
                "outcome": outcome,
                "summary": summary,
                "report_id": state.get("report_id"),
                "actions": state.get("actions", {}),
                "proposals": state.get("proposals", 0),
                "budget": state.get("budget", {}),
                "judge": state.get("judge", {}),
                "errors": state.get("errors", []),
                "report": report,
            }
        )
    else:
        typer.echo(report, nl=False)
        cadence = state.get("cadence") or {}
        if cadence.get("quiet"):  # asked for by hand, so it ran; say it was not needed tonight
            base.note(f"the store is quiet: {cadence.get('reason', '')}")
        if outcome != "succeeded":
            typer.echo(f"garden_job run {result.run_id}: {summary}", err=True)
    if workflow_outcome:
        typer.echo(outcome_line(state["outcome"]))
    if outcome != "succeeded":
        raise typer.Exit(1)


def _settings(
    store: list[str] | None,
    ledger_url: str | None,
    mode: str,
    max_mutations: int,
    max_judgments: int,
) -> tuple[Any, Any]:
    """The ``store`` and ``gardener`` resources of the run the options ask for: the first
    memvault store is the one tended as ``store``, the others (and MCP servers) are extra."""
    from memvault.errors import MemvaultError
    from memvault.gardener.adapters import is_mcp_url
    from memvault.gardener.state import MODES
    from pipelines.cli import common as base
    from resources import GardenerResource, StoreResource

    if mode not in MODES:
        raise MemvaultError(f"unknown --mode {mode!r}: use {' or '.join(MODES)}")
    # No --store after `garden`: the one given before it, else MEMVAULT_STORE, else the default.
    urls = [
        u if is_mcp_url(u) else base.chosen_store(u) for u in store or [base.chosen_store(None)]
    ]
    ledger = base.chosen_store(ledger_url) if ledger_url else None
    own = next((u for u in urls if not is_mcp_url(u)), None)
    extra = list(urls)
    if own is not None:
        extra.remove(own)
    home = StoreResource(url=own or ledger or base.chosen_store(None))
    settings = GardenerResource(
        tend_store=own is not None,
        extra_stores=extra,
        ledger_url=ledger,
        mode=mode,
        max_mutations=max_mutations,
        max_judgments=max_judgments,
    )
    return home, settings


def _ended(result: Any, settings: Any, home: Any) -> tuple[str, str, str, dict[str, Any]]:
    """How the run ended: its report, outcome, summary and saved state; when a phase failed,
    the report of what was done so far (from the saved state) and the failure as outcome."""
    from memvault.gardener.outcome import Outcome
    from pipelines.runner import failures, materializations

    report_meta = materializations(result).get("garden_report")
    state = _state_of(settings, home, result.run_id)
    if report_meta is not None:
        report = str(report_meta["report"]).removeprefix("```\n").removesuffix("```")
        return report, str(report_meta["outcome"]), str(report_meta["outcome_summary"]), state
    cause = "; ".join(failures(result)) or "the run failed"
    report = state.get("report_text") or _partial_report(settings, home, result.run_id)
    summary = f"Memory gardening failed: {cause}"
    if not state.get("outcome"):  # the report never ran: the failed phase is the outcome
        state["outcome"] = Outcome("failed", summary, [(cause, False)]).as_dict()
    return report, "failed", summary, state


def _state_of(settings: Any, home: Any, dagster_run_id: str) -> dict[str, Any]:
    """The garden run's saved state (empty when the run never got past its survey)."""
    with settings.open(home) as (ledger, _stores):
        run_id = ledger.run_for_dagster(dagster_run_id)
        return dict(ledger.load_state(run_id)) if run_id else {}


def _partial_report(settings: Any, home: Any, dagster_run_id: str) -> str:
    """The report of a run that did not finish, rendered from its saved state (not stored)."""
    from memvault.gardener.run import Gardener
    from memvault.judge import HeuristicJudge

    with settings.open(home) as (ledger, stores):
        run_id = ledger.run_for_dagster(dagster_run_id)
        if run_id is None or not ledger.load_state(run_id).get("run_id"):
            return "# Gardening report — not started (the survey failed)\n"
        return Gardener.load(ledger, stores, HeuristicJudge(), run_id).build_report().render()


@garden_app.command("approve")
def approve(
    ids: Annotated[
        list[str] | None, typer.Argument(help="Proposal ids (see `garden proposals`)")
    ] = None,
    approve_all: Annotated[
        bool, typer.Option("--all", help="Approve every pending proposal")
    ] = False,
    store: Annotated[
        str | None, typer.Option("--store", "-s", help="The memvault store holding the proposals")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve proposals; the next garden run executes them first (within its budget)."""
    _guarded(_approve)(ids, approve_all, store, as_json)


def _approve(ids: list[str] | None, approve_all: bool, store: str | None, as_json: bool) -> None:
    import memvault
    from memvault.errors import MemvaultError
    from memvault.gardener.ledger import Ledger
    from pipelines.cli import common as base

    if not ids and not approve_all:
        raise MemvaultError("name proposal ids to approve, or --all (`memvault garden proposals`)")
    if ids and approve_all:
        raise MemvaultError("give proposal ids or --all, not both")
    with memvault.open(base.chosen_store(store)) as handle:
        ledger = Ledger(handle)
        pending = {p.id for p in ledger.proposals(None, ("pending",))}
        unknown = sorted(set(ids or []) - pending)
        if unknown:
            raise MemvaultError(
                f"not a pending garden proposal: {', '.join(unknown)} (`memvault garden proposals`)"
            )
        approved = ledger.approve(None if approve_all else ids)
    if as_json:
        base.emit_json({"approved": approved})
    else:
        typer.echo(f"approved {len(approved)} proposal(s); the next garden run executes them")


@garden_app.command("proposals")
def proposals(
    store: Annotated[
        str | None, typer.Option("--store", "-s", help="The memvault store holding the proposals")
    ] = None,
    status: Annotated[str, typer.Option(help="pending, approved, executed, stale")] = "pending",
    as_json: JsonOpt = False,
) -> None:
    """Garden proposals waiting for a human (or in another status)."""
    _guarded(_proposals)(store, status, as_json)


def _proposals(store: str | None, status: str, as_json: bool) -> None:
    import memvault
    from memvault.gardener.ledger import Ledger
    from pipelines.cli import common as base

    with memvault.open(base.chosen_store(store)) as handle:
        found = Ledger(handle).proposals(None, (status,))
    rows: list[dict[str, Any]] = [
        {
            "id": p.id,
            "action": p.action,
            "target": p.target_id,
            "related": list(p.related),
            "certain": p.certain,
            "confidence": p.confidence,
            "reason": p.reason,
            "store": p.store,
        }
        for p in found
    ]
    if as_json:
        base.emit_json(rows)
        return
    for r in rows:
        sure = "" if r["certain"] else " (uncertain)"
        related = f" ← {', '.join(r['related'])}" if r["related"] else ""
        typer.echo(f"{r['id']}  {r['action']}{sure} {r['target']}{related} — {r['reason']}")
    if not rows:
        typer.echo(f"no {status} garden proposals")
