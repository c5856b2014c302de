"""``memvault serve``: the long-lived MCP server (see memvault.serve and docs/serve.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from memvault.errors import MemvaultError
from pipelines.cli.common import OwnerOpt, StoreOpt, app, chosen_store, err, handles_errors


@app.command()
@handles_errors
def serve(
    store: StoreOpt = None,
    owner: OwnerOpt = None,
    transport: Annotated[
        str,
        typer.Option(
            help="stdio (an MCP client starts this command; the default) or http (streamable "
            "HTTP at http://HOST:PORT/mcp)"
        ),
    ] = "stdio",
    host: Annotated[
        str, typer.Option(help="Interface of the HTTP endpoint (loopback by default)")
    ] = "127.0.0.1",
    port: Annotated[
        int | None,
        typer.Option(
            min=0, max=65535, help="Port of the HTTP endpoint (http: 8767; stdio: a free one)"
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="Require `Authorization: Bearer TOKEN` on HTTP (else MEMVAULT_SERVE_TOKEN)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve recall, remember, feedback and asof to agents over MCP, with the recall index
    kept warm; `memvault recall` in a shell uses it while it runs."""
    from memvault.serve.runner import serve as run_server

    if transport not in ("stdio", "http"):
        raise MemvaultError(f"unknown --transport {transport!r}: use stdio or http")

    def say(line: str) -> None:
        err.print(line, highlight=False, soft_wrap=True, markup=False)

    run_server(
        chosen_store(store, owner),
        transport=transport,  # type: ignore[arg-type]
        host=host,
        port=port,
        token=token,
        say=say,
    )
