"""``memvault serve``: the long-lived MCP server (see memvault.serve and docs/serve.md)."""

from __future__ import annotations

from pathlib import Path
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
            min=0,
            max=65535,
            help="Port of the HTTP endpoint (http: 8767; stdio: none unless given)",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="Require `Authorization: Bearer TOKEN` on TCP, the token read from this file "
            "(yours, mode 0600); else MEMVAULT_SERVE_TOKEN",
            show_default=False,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(hidden=True, help="The token itself (shows in `ps`: use the above)"),
    ] = None,
) -> None:
    """Serve recall, remember, feedback and asof to agents over MCP, with the recall index
    kept warm; `memvault recall` in a shell uses it while it runs. stdio opens no network
    port (--port asks for one); a non-loopback --host needs a token."""
    from memvault.serve.runner import resolve_token
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
        token=resolve_token(given=token, token_file=token_file, say=say),
        say=say,
    )
