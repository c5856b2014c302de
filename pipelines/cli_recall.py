"""``memvault recall | feedback | show``: the read path from the command line.

``recall`` answers a query from the store (or from the prefetch cache), records
it, and prints the recall id that ``feedback`` takes; ``show BLOCK`` prints one
block as recall shows it, ``--original`` the full text a cold or frozen block's
digest stands in for. Each command is its own
process, so ``recall`` builds the search index first (seconds on a large store);
an agent that recalls often keeps a process and calls ``memvault.recall``.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from memvault.errors import MemvaultError
from pipelines.cli_common import JsonOpt, StoreOpt, app, emit_json, handles_errors, opened, out


def _snippet(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@app.command()
@handles_errors
def recall(
    query: Annotated[str, typer.Argument(help="What to recall, in the owner's words")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Blocks to return")] = 5,
    session: Annotated[
        str | None, typer.Option("--session", help="The session asking (kept in recall_log)")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall the memories that best answer QUERY (recorded; rate it with `memvault feedback`)."""
    from memvault.recall import recall as run_recall

    with opened(store) as handle:
        result = run_recall(handle, query, limit=limit, session_id=session)
    if as_json:
        emit_json(result.as_dict())
        return
    names = ", ".join(result.entity_names.get(e, e) for e in result.entities) or "-"
    source = (
        "served from prefetch"
        if result.served_from_prefetch
        else f"searched ({result.search_mode})"
    )
    out.print(
        f"recall [bold]{escape(result.recall_id)}[/]  intent {escape(result.intent or '-')}  "
        f"entities {escape(names)}  {source}  {result.latency_ms:.0f} ms"
        + (f" (index built in {result.index_build_ms:.0f} ms)" if result.index_build_ms else ""),
        highlight=False,
    )
    if result.search_mode == "keywords":
        out.print(
            "[yellow]note:[/] the store has no vectors of the configured embedder; searched by "
            "keywords only (run `memvault collect` to embed)"
        )
    if result.gap_hint is not None:
        out.print(f"[red]gap:[/] {escape(result.gap_hint.message)}", highlight=False)
    table = Table("rank", "score", "tier", "text", "block id")
    for rank, hit in enumerate(result.results, 1):
        tier = hit.tier if not hit.digest_kind else f"{hit.tier} ({hit.digest_kind} digest)"
        if hit.original_archived:  # found by the original, shown as its digest
            tier += "\noriginal archived"
        text = escape(_snippet(hit.text))
        if hit.kind == "insight":  # the dream's reading of the memories it cites, not a memory
            text = f"[magenta]insight:[/] {text} [dim](cites {escape(', '.join(hit.cites))})[/]"
        if hit.superseded_since is not None:  # what it states no longer holds
            text = f"{text} [yellow](superseded since {hit.superseded_since:%Y-%m-%d})[/]"
        table.add_row(str(rank), f"{hit.score:.3f}", tier, text, hit.block_id)
    out.print(table if result.results else "no memory matches this query")
    if any(h.original_archived for h in result.results):
        out.print("digests stand in for archived originals: memvault show BLOCK --original", highlight=False)  # fmt: skip
    for fact in result.facts:
        who = result.entity_names.get(fact.subject_id, fact.subject_id)
        out.print(
            f"  fact: {escape(who)} {escape(fact.predicate)} {escape(fact.object)}", highlight=False
        )
    out.print(
        f"rate it: memvault feedback {result.recall_id} correct|incorrect|ambiguous|+|-",
        highlight=False,
    )


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
    as_json: JsonOpt = False,
) -> None:
    """Tell memvault whether a recall was right (verdict) or which blocks helped (+/-)."""
    from memvault.recall import feedback as give_feedback

    with opened(store) as handle:
        report = give_feedback(handle, recall_id, verdict, block_id=block, note=note)
    if as_json:
        emit_json(report.as_dict())
        return
    if report.feedback_scores:
        scores = ", ".join(f"{b} → {s:+g}" for b, s in report.feedback_scores.items())
        out.print(f"recorded {verdict} on {recall_id}: feedback score {escape(scores)}", highlight=False)  # fmt: skip
    elif not report.feedback_ids:
        raise MemvaultError("nothing was recorded")
    else:
        out.print(f"recorded verdict {escape(report.verdict)} on {escape(recall_id)}", highlight=False)  # fmt: skip
    out.print(f"undo it with: memvault undo {report.run_id}", highlight=False)


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
    as_json: JsonOpt = False,
) -> None:
    """Show one memory block as recall shows it (a digest once it is cold or frozen); with
    --original, print the text it had before tiering."""
    from memvault.lifecycle.originals import block_view

    with opened(store) as handle:
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
