"""``memvault recall | feedback | show``: the read path from the command line.

``recall`` answers a query from the store (or from the prefetch cache), records
it, and prints the recall id that ``feedback`` takes; ``show BLOCK`` prints one
block as recall shows it, ``--original`` the full text a cold or frozen block's
digest stands in for. Each command is its own process, so ``recall`` builds the
search index first (seconds on a large store), unless a ``memvault serve`` holds the
store: then recall and feedback ask that server, whose index is warm (see
pipelines.cli.entry for the fast path that skips loading the store at all).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from memvault.errors import MemvaultError
from pipelines.cli.common import (
    JsonOpt,
    OwnerOpt,
    StoreOpt,
    app,
    chosen_store,
    emit_json,
    handles_errors,
    opened,
    out,
)
from pipelines.cli.recall_view import print_feedback, print_recall


@app.command()
@handles_errors
def recall(
    query: Annotated[str, typer.Argument(help="What to recall, in the owner's words")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Blocks to return")] = 5,
    session: Annotated[
        str | None, typer.Option("--session", help="The session asking (kept in recall_log)")
    ] = None,
    store: StoreOpt = None,
    owner: OwnerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall the memories that best answer QUERY (recorded; rate it with `memvault feedback`)."""
    from memvault.recall import recall as run_recall

    url = chosen_store(store, owner)
    arguments = {"query": query, "limit": limit, "session_id": session}
    shown = served(url, "recall", arguments)
    if shown is None:
        with opened(url) as handle:
            shown = run_recall(handle, query, limit=limit, session_id=session).as_dict()
        shown["served_by"] = "process"
    if as_json:
        emit_json(shown)
    else:
        print_recall(out, shown)


@app.command()
@handles_errors
def feedback(
    recall_id: Annotated[str, typer.Argument(help="The recall id `memvault recall` printed")],
    verdict: Annotated[
        str,
        typer.Argument(
            help="correct, incorrect or ambiguous (the whole answer), + or - (its blocks)"
        ),
    ],
    block: Annotated[
        str | None, typer.Option("--block", help="With + or -: only this block of the answer")
    ] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why (kept with the feedback)")] = None,
    store: StoreOpt = None,
    owner: OwnerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Tell memvault whether a recall was right (verdict) or which blocks helped (+/-)."""
    from memvault.recall import feedback as give_feedback

    url = chosen_store(store, owner)
    arguments = {"recall_id": recall_id, "verdict": verdict, "block_id": block, "note": note}
    report = served(url, "feedback", arguments)
    if report is None:
        with opened(url) as handle:
            report = give_feedback(handle, recall_id, verdict, block_id=block, note=note).as_dict()
    if as_json:
        emit_json(report)
    elif not print_feedback(out, report, verdict):
        raise MemvaultError("nothing was recorded")


@app.command("show")
@handles_errors
def show_block(
    block_id: Annotated[str, typer.Argument(help="The block id (`memvault recall` lists them)")],
    original: Annotated[
        bool,
        typer.Option(
            "--original",
            help="Print the full text a cold or frozen block's digest stands in for",
        ),
    ] = False,
    store: StoreOpt = None,
    owner: OwnerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one memory block as recall shows it (a digest once it is cold or frozen); with
    --original, print the text it had before tiering."""
    from memvault.lifecycle.originals import block_view

    with opened(store, owner) as handle:
        view = block_view(handle, block_id)
    if as_json:
        emit_json(view.as_dict())
        return
    if original:
        typer.echo(view.original_text)  # exactly as kept: data, not markup
        return
    kind = f", {view.digest_kind} digest" if view.digest_kind else ""
    archived = "; original archived (--original prints it)" if view.original_archived else ""
    out.print(
        f"block [bold]{escape(view.id)}[/]  {escape(view.tier)}{escape(kind)}  "
        f"{escape(view.status)}{archived}",
        highlight=False,
    )
    out.print(escape(view.text), highlight=False, soft_wrap=True)


def served(store_url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The answer of a running ``memvault serve`` that holds the store (None: none runs, or
    it did not answer; do it here). Its refusal is this command's error."""
    from memvault.serve.client import ServerRefused, ask

    try:
        answer = ask(store_url, tool, arguments)
    except ServerRefused as exc:
        raise MemvaultError(str(exc)) from None
    if answer is not None:
        answer["served_by"] = "server"
    return answer
