"""``memvault garden``: the memory gardener's nightly ceremony, in-process, and its approvals.

``memvault garden --store URL`` tends one or more stores (``--store`` again
for each; ``duckdb://``, ``postgresql://`` or ``mcp+stdio:<command line>``)
and prints the report; ``--workflow-outcome`` adds the one
``SUBSTRATE_OUTCOME_V1=`` line a workflow runner reads, last.
``memvault garden proposals`` lists what waits for a human and
``memvault garden approve ID... | --all`` approves it for the next run.

The gardener's bookkeeping (runs, proposals, the audit of external changes,
the report when the store cannot keep one) lives in a memvault store: the
first memvault store tended, else ``--ledger`` (default: the memvault store).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Annotated, Any

import typer

garden_app = typer.Typer(
    name="garden",
    help="Tend memory stores: a budgeted, idempotent, audited nightly ceremony (SPEC §12).",
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
    from pipelines import cli_common as base

    return base.handles_errors(fn)


@contextmanager
def _opened(stores: list[str] | None, ledger_url: str | None) -> Iterator[tuple[Any, list[Any]]]:
    """The ledger and the adapters; a memvault store that is tended is also the ledger."""
    import memvault
    from memvault.gardener.adapters import is_mcp_url, open_garden_store
    from memvault.gardener.adapters.memvault_store import MemvaultGardenStore
    from memvault.gardener.ledger import Ledger
    from pipelines import cli_common as base

    urls = list(stores or []) or [base.chosen_store(None)]
    with ExitStack() as stack:
        adapters: list[Any] = []
        for url in urls:
            adapter = open_garden_store(url if is_mcp_url(url) else base.chosen_store(url))
            stack.callback(adapter.close)
            adapters.append(adapter)
        own = next((a for a in adapters if isinstance(a, MemvaultGardenStore)), None)
        if own is not None and ledger_url is None:
            ledger = Ledger(own.store)
        else:
            handle = memvault.open(base.chosen_store(ledger_url))
            stack.callback(handle.close)
            ledger = Ledger(handle)
        yield ledger, adapters


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
    from memvault.errors import MemvaultError
    from memvault.gardener.run import run_garden
    from memvault.gardener.state import MODES, GardenConfig
    from memvault.judge import make_judge
    from memvault.judge.store_cache import StoreJudgeCache
    from pipelines import cli_common as base

    if mode not in MODES:
        raise MemvaultError(f"unknown --mode {mode!r}: use {' or '.join(MODES)}")
    config = GardenConfig(mode=mode, max_mutations=max_mutations, max_judgments=max_judgments)  # type: ignore[arg-type]
    with _opened(store, ledger_url) as (ledger, adapters):
        judge = make_judge(cache=StoreJudgeCache(ledger.store))
        result = run_garden(ledger, adapters, judge, config)
    if as_json:
        base.emit_json(
            {
                "run_id": result.run_id,
                "outcome": result.outcome.outcome,
                "summary": result.outcome.summary,
                "report_id": result.state.report_id,
                "actions": result.state.actions,
                "proposals": result.state.proposals,
                "budget": result.state.budget,
                "judge": result.state.judge,
                "errors": result.state.errors,
                "report": result.report,
            }
        )
    else:
        typer.echo(result.report, nl=False)
    if workflow_outcome:
        typer.echo(result.outcome.line())
    if not result.succeeded:
        raise typer.Exit(1)


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
    from pipelines import cli_common as base

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
    from pipelines import cli_common as base

    with memvault.open(base.chosen_store(store)) as handle:
        found = Ledger(handle).proposals(None, (status,))
    rows = [
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
