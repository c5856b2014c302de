"""``memvault review``: what waits for a human, and the human's decisions.

``list`` and ``show`` read the queue; ``approve ID`` says the proposed change is
correct (it is applied, audited and undoable), ``reject ID`` says it is wrong
(nothing changes); ``--serve`` starts the review page on the same decisions.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

review_app = typer.Typer(
    name="review",
    help="What waits for a human (conflicts, lint findings, garden proposals, low-confidence "
    "memories), and your decisions on it.",
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)

StoreOpt = Annotated[str | None, typer.Option("--store", "-s", help="Store URL")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text")]


def _guarded(fn: Any) -> Any:
    from pipelines.cli import common

    return common.handles_errors(fn)


def _item_json(item: Any) -> dict[str, Any]:
    return item.model_dump(mode="json")


@review_app.callback(invoke_without_command=True)
def review(
    ctx: typer.Context,
    serve: Annotated[bool, typer.Option("--serve", help="Serve the review page")] = False,
    host: Annotated[
        str,
        typer.Option(
            help="Interface of the review page, and the name it answers to (on loopback "
            "also 127.0.0.1, localhost and [::1]); requests for other names are refused"
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the review page")] = 8766,
    store: StoreOpt = None,
) -> None:
    """Without a command: the waiting items (or the review page with --serve)."""
    if ctx.invoked_subcommand is not None:
        return
    if serve:
        _guarded(_serve)(store, host, port)
        return
    _guarded(_list)(store, ("pending", "expired"), False)


def _serve(store: str | None, host: str, port: int) -> None:
    from pipelines.cli import common
    from pipelines.cli.review_page import serve

    url = common.chosen_store(store)
    common.err.print(f"store {escape(url)}", highlight=False)
    serve(url, host, port, say=lambda line: common.err.print(line, markup=False, highlight=False))


@review_app.command("list")
def list_command(
    store: StoreOpt = None,
    status: Annotated[
        list[str] | None, typer.Option(help="pending, expired, approved, rejected, ...")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Items waiting for a decision (pending and expired), oldest first."""
    _guarded(_list)(store, tuple(status or ("pending", "expired")), as_json)


def _list(store: str | None, statuses: tuple[str, ...], as_json: bool) -> None:
    from memvault.review import list_items
    from pipelines.cli import common

    with common.opened(store) as handle:
        items = list_items(handle, statuses)
    if as_json:
        common.emit_json([_item_json(i) for i in items])
        return
    if not items:
        common.out.print(f"nothing {escape(' or '.join(statuses))} in the review queue")
        return
    for item in items:
        _print_id(item.id)
        common.out.print(f"  {_summary(item)}", highlight=False)
        common.out.print(f"  why it waits: {escape(item.reason or '—')}", highlight=False)
    common.out.print(
        f"{len(items)} item(s); `memvault review show ID` shows one, "
        "`memvault review approve|reject ID` decides it",
        highlight=False,
    )


def _print_id(item_id: str) -> None:
    """An id on a line of its own, never cut or broken by the console (ids are pasted into
    ``approve``/``reject``; a long one wraps only where the terminal wraps it)."""
    from pipelines.cli import common

    common.out.print(
        escape(item_id), style="bold", soft_wrap=True, highlight=False, overflow="ignore",
        crop=False,
    )  # fmt: skip


def _summary(item: Any) -> str:
    confidence = f"{item.confidence:.2f}" if item.confidence is not None else "—"
    impact = f"{item.impact_score:.2f}" if item.impact_score is not None else "—"
    return (
        f"{escape(item.kind)} · {escape(item.status)} · confidence {confidence} · impact {impact}"
    )


@review_app.command("show")
def show(
    item_id: Annotated[str, typer.Argument(help="A review item id")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One item with everything a decision needs."""
    _guarded(_show)(item_id, store, as_json)


def _show(item_id: str, store: str | None, as_json: bool) -> None:
    import json

    from memvault.review import get_item
    from memvault.review.evidence import evidence
    from pipelines.cli import common

    with common.opened(store) as handle:
        item = get_item(handle, item_id)
        shown = evidence(handle, item)
    if as_json:
        common.emit_json(_item_json(item) | {"evidence": shown.model_dump(mode="json")})
        return
    out = common.out
    _print_id(item.id)
    out.print(f"  {_summary(item)}", highlight=False)
    if item.proposal.get("question"):
        out.print(f"  {escape(str(item.proposal['question']))}", highlight=False)
    out.print(f"  why it waits: {escape(item.reason or '—')}", highlight=False)
    for side, memory in enumerate(shown.memories):
        diff = shown.diff[side] if shown.diff and side < 2 else None
        _print_memory(memory, diff)
    if shown.diff:
        out.print(
            "  [-…-]: only in the first; {+…+}: only in the second",
            markup=False,
            highlight=False,
        )
    if shown.related:
        out.print(f"\n{escape(shown.related_title or 'related')}:", highlight=False)
        for memory in shown.related:
            _print_memory(memory, None)
    out.print("\nproposal:", highlight=False)
    out.print(
        json.dumps(_item_json(item), indent=2, ensure_ascii=False), markup=False, highlight=False
    )


def _print_memory(memory: Any, diff: list[Any] | None) -> None:
    """One memory: its text (with the differences marked), its fact, dates and source."""
    from memvault.review.evidence import when
    from pipelines.cli import common

    out = common.out
    status = f" ({escape(memory.status)})" if memory.status else ""
    missing = "" if memory.found else " — not in this store"
    out.print(
        f"\n{escape(memory.role)} — {escape(memory.table)} {escape(memory.id)}{status}{missing}",
        highlight=False,
    )
    if diff:
        marks = {"del": ("[red strike]", "[-", "-]"), "ins": ("[green underline]", "{+", "+}")}
        text = ""
        for seg in diff:
            if seg.op == "same":
                text += escape(seg.text)
            else:
                style, opening, closing = marks[seg.op]
                words = seg.text.rstrip()
                marked = escape(opening + words + closing)
                text += f"{style}{marked}[/]{escape(seg.text[len(words) :])}"
        out.print(f"  {text}", highlight=False)
    else:
        out.print(f"  {escape(memory.text)}", highlight=False)
    if memory.is_fact:
        out.print(
            f"  subject {escape(memory.subject or '—')} · predicate {escape(memory.predicate or '')}"
            f" · object {escape(memory.object or '')}",
            highlight=False,
        )
    dates = []
    if memory.is_fact or memory.invalid_at:
        dates.append(f"valid from {when(memory.valid_at)} until {when(memory.invalid_at)}")
    if memory.recorded_at:
        dates.append(f"recorded {when(memory.recorded_at)}")
    if memory.expired_at:
        dates.append(f"no longer believed since {when(memory.expired_at)}")
    if memory.confidence is not None:
        dates.append(f"confidence {memory.confidence:.2f}")
    if dates:
        out.print(f"  {' · '.join(dates)}", highlight=False)
    details = [f"{k} {v}" for k, v in memory.detail.items() if v is not None]
    if details:
        out.print(f"  {escape(' · '.join(details))}", highlight=False)
    if memory.source_session or memory.source_block:
        where = " ".join(p for p in (memory.source_session, memory.source_block) if p)
        out.print(f"  source {escape(where)}", highlight=False)
    if memory.source_text:
        out.print(f"  > {escape(memory.source_text)}", highlight=False)


def _decide(item_ids: list[str], verdict: str, store: str | None, note: str | None,
            as_json: bool) -> None:  # fmt: skip
    from memvault.review import decide
    from pipelines.cli import common

    made = []
    with common.opened(store) as handle:
        for item_id in item_ids:
            made.append(decide(handle, item_id, verdict, note=note))  # type: ignore[arg-type]
    if as_json:
        common.emit_json(
            [
                {"id": d.item_id, "verdict": d.verdict, "run_id": d.run_id, "applied": d.applied}
                for d in made
            ]
        )
        return
    for d in made:
        common.out.print(
            f"{escape(d.item_id)}: {escape(d.applied)} (run {d.run_id}; "
            f"`memvault undo {d.run_id}` reverts it)",
            highlight=False,
        )


@review_app.command("approve")
def approve(
    item_ids: Annotated[list[str], typer.Argument(help="Review item ids")],
    note: Annotated[str | None, typer.Option(help="Why (kept with the decision)")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The proposed change is correct: apply it (audited, undoable)."""
    _guarded(_decide)(item_ids, "correct", store, note, as_json)


@review_app.command("reject")
def reject(
    item_ids: Annotated[list[str], typer.Argument(help="Review item ids")],
    note: Annotated[str | None, typer.Option(help="Why (kept with the decision)")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The proposed change is wrong: leave the store as it is."""
    _guarded(_decide)(item_ids, "wrong", store, note, as_json)
