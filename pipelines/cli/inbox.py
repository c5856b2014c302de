"""``memvault inbox``: what the dream discovered, most surprising first, when you ask for it.

The dream's signal stage queues discoveries (new links between communities, strong
indirect pairs, facts the structure says are missing); nothing is pushed. This command
shows the new ones and marks them seen; ``--all`` lists the seen ones too and changes
nothing.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from memvault.inbox import count_new, take_inbox
from pipelines.cli.common import JsonOpt, StoreOpt, app, emit_json, handles_errors, opened, out


@app.command()
@handles_errors
def inbox(
    store: StoreOpt = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list discoveries already seen (changes nothing)")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Surprise discoveries of the dream, most surprising first; the new ones are marked seen."""
    with opened(store) as handle:
        items = take_inbox(handle, limit, include_seen=show_all)
        waiting = count_new(handle)
    if as_json:
        emit_json({"discoveries": items, "new_left": waiting})
        return
    if not items:
        out.print(
            "nothing new in the inbox (the dream's signal stage adds discoveries; "
            "--all lists the ones already seen)"
        )
        return
    table = Table(title="discovery inbox", title_justify="left")
    for column in ("score", "kind", "discovery", "found", "status"):
        table.add_column(column)
    for item in items:
        table.add_row(
            f"{item['score']:.2f}",
            escape(str(item["kind"])),
            escape(str(item["explanation"])),
            f"{item['created_at']:%Y-%m-%d}",
            escape(str(item["status"])),
        )
    out.print(table)
    if not show_all:
        more = f"; {waiting} more new (run it again)" if waiting else ""
        out.print(f"{len(items)} shown and marked seen{more}")
