"""Run ``memvault serve``: open the store once, warm the index, listen, clean up.

Two transports: ``stdio`` (the MCP client starts the server and talks over its standard
input and output; the default, what Claude Code runs) and ``http`` (streamable HTTP on
``host:port``). In both, the server also listens on loopback HTTP and writes the
discovery file, so the shell's ``memvault recall`` (and any other MCP client) shares the
warm index instead of trying to open a DuckDB file the server holds. A second
``memvault serve --transport stdio`` for a store that a live server already holds (a
second agent session) does not open the store: it passes its calls on to that server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Literal

from memvault.errors import MemvaultError
from memvault.http_guard import LOOPBACK, Guard
from memvault.serve import discovery

Transport = Literal["stdio", "http"]
#: The token's environment variable (``--token`` wins).
TOKEN_VARIABLE = "MEMVAULT_SERVE_TOKEN"


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), bound before serving so the
    guard and the discovery file know the real port."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise MemvaultError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _local_url(host: str, port: int) -> str:
    """The URL this machine reaches the server by (loopback when every interface is bound)."""
    name = host.strip("[]")
    if name in ("0.0.0.0", "", "::") or name in LOOPBACK:
        name = "127.0.0.1" if ":" not in name else "::1"
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


@contextlib.contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the server as Ctrl-C does: the finally blocks run (discovery file
    removed, store closed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve(
    store_url: str,
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int | None = None,
    token: str | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> None:
    """Serve ``store_url`` until the client goes (stdio) or the process is stopped (http)."""
    import uvicorn

    from memvault.serve.app import RemoteService, build_mcp, http_app, run_stdio

    token = token or os.environ.get(TOKEN_VARIABLE) or None
    holder = discovery.read(store_url)
    if holder is not None:
        if transport == "stdio":
            say(f"the store is served by PID {holder.pid} ({holder.url}); passing calls to it")
            with _terminated_as_interrupt(), contextlib.suppress(KeyboardInterrupt):
                run_stdio(build_mcp(RemoteService(holder)))
            return
        raise MemvaultError(
            f"the store is already served by `memvault serve` (PID {holder.pid}) at "
            f"{holder.url}; use that one, or stop it first"
        )

    import memvault
    from memvault.serve.service import MemoryService

    sock = _bind(host, port if port is not None else (8767 if transport == "http" else 0))
    bound = sock.getsockname()[1]
    try:
        store = memvault.open(store_url)
    except BaseException:
        sock.close()
        raise
    service: MemoryService | None = None
    try:
        service = MemoryService(store)
        warmed = service.warm()
        mcp = build_mcp(service)
        guard = Guard.bound_to(host, bound)
        config = uvicorn.Config(
            http_app(mcp, guard, token),
            log_level="warning",
            proxy_headers=False,
            server_header=False,
            lifespan="on",
        )
        server = uvicorn.Server(config)
        url = _local_url(host, bound)
        written = discovery.write(
            store_url, discovery.ServerInfo(url=url, pid=os.getpid(), store=store.url, token=token)
        )
        say(
            f"memvault serve: index of {warmed['blocks']:,} blocks ready in {warmed['seconds']:g} s; "
            f"MCP {'on stdio and ' if transport == 'stdio' else ''}at {url}/mcp"
            + (" (bearer token required)" if token else "")
            + (f"; discovery file {written}" if written else "")
        )
        with _terminated_as_interrupt(), contextlib.suppress(KeyboardInterrupt):
            if transport == "http":
                server.run(sockets=[sock])
            else:
                thread = threading.Thread(
                    target=server.run, kwargs={"sockets": [sock]}, name="memvault-http", daemon=True
                )
                thread.start()
                try:
                    run_stdio(mcp)
                finally:
                    server.should_exit = True
                    thread.join(timeout=5)
    finally:
        try:
            if service is not None:
                service.close()  # the recalls answered and not yet written, written now
        finally:
            discovery.remove(store_url)
            sock.close()
            store.close()
