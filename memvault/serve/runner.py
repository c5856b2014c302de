"""Run ``memvault serve``: claim the store, open it, listen, clean up.

Two transports: ``stdio`` (the MCP client starts the server and talks over its standard
input and output; the default, what Claude Code runs) and ``http`` (streamable HTTP on
``host:port``). Whichever it is, the server that holds a store also answers on a Unix
socket in this user's private runtime directory, named by the discovery file
(:mod:`memvault.serve.discovery`), so the shell's ``memvault recall`` shares the warm
index. stdio mode opens no network port unless ``--port`` asks for one.

Exposure: a TCP endpoint on a non-loopback address needs a token (else the server does
not start); on loopback without one it warns, since any local user may then call the
tools. The token comes from ``MEMVAULT_SERVE_TOKEN`` or a 0600 ``--token-file``.

A second ``memvault serve --transport stdio`` for a store that a live server holds (a
second agent session) passes its calls to that server, and takes the store over when
that server goes (:mod:`memvault.serve.relay`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

from memvault import private
from memvault.errors import MemvaultError
from memvault.http_guard import DEFAULT_MAX_BODY, LOOPBACK, Guard
from memvault.serve import discovery

if TYPE_CHECKING:
    import uvicorn

    from memvault.serve.app import Service

Transport = Literal["stdio", "http"]
#: The token's environment variable.
TOKEN_VARIABLE = "MEMVAULT_SERVE_TOKEN"
#: The largest request body, in bytes (``MEMVAULT_SERVE_MAX_BODY``).
MAX_BODY_VARIABLE = "MEMVAULT_SERVE_MAX_BODY"
#: The shortest token accepted: a guessable one is no lock.
MIN_TOKEN_LENGTH = 16
#: Seconds a starting server waits for the store's lock (a reader takes it for a moment).
CLAIM_WAIT = 1.0
Say = Callable[[str], None]


# -- what the server is started with ---------------------------------------------------------------


def resolve_token(
    *, given: str | None = None, token_file: Path | None = None, say: Say = lambda line: None
) -> str | None:
    """The TCP token: from ``--token-file`` (a private file), else ``MEMVAULT_SERVE_TOKEN``,
    else a token given on the command line (it shows in ``ps``: warned)."""
    if token_file is not None:
        data = private.read_file(token_file, limit=4096)
        if data is None:
            raise MemvaultError(f"--token-file {token_file} does not exist")
        token = data.decode("utf-8", "replace").strip()
        if not token:
            raise MemvaultError(f"--token-file {token_file} is empty")
    elif os.environ.get(TOKEN_VARIABLE):
        token = os.environ[TOKEN_VARIABLE].strip()
    elif given:
        say(
            "warning: a token on the command line shows in `ps` to every local user; set "
            f"{TOKEN_VARIABLE} or use --token-file (a 0600 file) instead"
        )
        token = given.strip()
    else:
        return None
    if len(token) < MIN_TOKEN_LENGTH or any(c.isspace() for c in token):
        raise MemvaultError(
            f"the token must be at least {MIN_TOKEN_LENGTH} characters without spaces (make "
            "one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    return token


def max_body() -> int:
    """The largest request body in bytes (``MEMVAULT_SERVE_MAX_BODY``, default 1 MiB)."""
    raw = os.environ.get(MAX_BODY_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_MAX_BODY
    try:
        value = int(raw)
    except ValueError:
        raise MemvaultError(f"{MAX_BODY_VARIABLE}={raw!r} is not a number of bytes") from None
    if value < 1024:
        raise MemvaultError(f"{MAX_BODY_VARIABLE}={raw!r}: at least 1024 bytes")
    return value


def check_exposure(host: str, port: int, token: str | None, say: Say) -> None:
    """Refuse a non-loopback TCP endpoint without a token; warn of a loopback one."""
    if token is not None:
        return
    name = host.strip("[]").lower()
    if name not in LOOPBACK:
        raise MemvaultError(
            f"refused to listen on {host}:{port} without a token: anyone who can reach it could "
            f"read and write the memory. Set {TOKEN_VARIABLE} or --token-file, or keep the "
            "default --host 127.0.0.1"
        )
    say(
        f"warning: http://{host}:{port}/mcp has no token: any user of this machine can call "
        f"the tools. Set {TOKEN_VARIABLE} or --token-file to require one"
    )


def require_store(store_url: str) -> None:
    """Refuse a store that was never made (a mistyped path would be served empty)."""
    from memvault.store.backends import store_exists

    if not store_exists(store_url):
        raise MemvaultError(
            f"no memvault store at {discovery.duckdb_path(store_url) or store_url}: check the "
            f"path, or create it first with `memvault init --store {store_url}`"
        )


# -- sockets --------------------------------------------------------------------------------------


def _bind_tcp(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), bound before serving so the
    guard knows the real port."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise MemvaultError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def _bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at ``path`` (in the private directory), mode 0600; a path
    longer than ``sun_path`` is bound through its directory's descriptor."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        sock.bind(str(path) if len(os.fsencode(path)) <= 107 else f"/proc/self/fd/{folder}/{path.name}")  # fmt: skip
        os.chmod(path.name, 0o600, dir_fd=folder, follow_symlinks=False)
    except BaseException:
        sock.close()
        raise
    finally:
        os.close(folder)
    sock.listen(128)
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


# -- holding a store --------------------------------------------------------------------------------


class Holding:
    """This process serves the store: its claim (the lock), the store and its service, the
    HTTP app on the Unix socket (and on TCP when asked), the discovery file.

    :meth:`open` opens the store and warms the index; :meth:`listen` binds the socket and
    publishes the discovery file last; :meth:`run` or :meth:`start` serves; :meth:`close`
    undoes it all in reverse (what is queued written first, the lock given up last)."""

    def __init__(
        self,
        store_url: str,
        claim: discovery.Claim,
        *,
        tcp: socket.socket | None = None,
        host: str = "127.0.0.1",
        token: str | None = None,
    ) -> None:
        self.store_url = store_url
        self.claim = claim
        self.tcp = tcp
        self.host = host
        self.token = token
        self.service: Any = None
        self.server: uvicorn.Server | None = None
        self._store: Any = None
        self._unix: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def open(self) -> dict[str, Any]:
        """Open the store and warm the index; returns the warm-up figures."""
        from memvault.serve.service import MemoryService
        from memvault.store import Store

        # A DuckDB file is held only while no other process asks for it (the night's jobs,
        # the owner's commands): see memvault.store.attached and memvault.serve.writer.
        self._store = Store.open(self.store_url, detachable=True)
        self.service = MemoryService(self._store)
        return dict(self.service.warm())

    def listen(self) -> discovery.ServerInfo:
        """Build the HTTP app, bind the Unix socket and publish the discovery file."""
        import uvicorn

        from memvault.serve.app import build_mcp, http_app

        port = self.tcp.getsockname()[1] if self.tcp is not None else 0
        app = http_app(
            build_mcp(self.service),
            Guard.bound_to(self.host, port),
            self.token,
            socket_token=self.claim.token,
            max_body=max_body(),
        )
        config = uvicorn.Config(
            app, log_level="warning", proxy_headers=False, server_header=False, lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self._unix = _bind_unix(self.claim.paths.socket)
        url = _local_url(self.host, port) if self.tcp is not None else None
        return self.claim.publish(store=self._store.url, url=url)

    @property
    def sockets(self) -> list[socket.socket]:
        return [s for s in (self.tcp, self._unix) if s is not None]

    def run(self) -> None:
        """Serve HTTP in this thread until stopped."""
        assert self.server is not None
        self.server.run(sockets=self.sockets)

    def start(self) -> None:
        """Serve HTTP in a thread of its own (stdio mode: the main thread speaks MCP)."""
        assert self.server is not None
        self._thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": self.sockets},
            name="memvault-http",
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        """Stop listening, write what is queued, close the store, give the store up."""
        try:
            if self.server is not None:
                self.server.should_exit = True
            if self._thread is not None:
                self._thread.join(timeout=5)
            if self.service is not None:
                self.service.close()  # what is queued, applied now (or left for the next)
        finally:
            try:
                for sock in self.sockets:
                    sock.close()
                if self._store is not None:
                    self._store.close()
            finally:
                self.claim.release()


def serve(
    store_url: str,
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int | None = None,
    token: str | None = None,
    say: Say = lambda line: None,
) -> None:
    """Serve ``store_url`` until the client goes (stdio) or the process is stopped (http).

    ``token`` is the TCP token already resolved (:func:`resolve_token`)."""
    require_store(store_url)
    listens = transport == "http" or port is not None
    tcp_port = port if port is not None else 8767
    if listens:
        check_exposure(host, tcp_port, token, say)
    holder = discovery.read(store_url)
    claim = None if holder is not None else discovery.claim(store_url, wait=CLAIM_WAIT)
    if claim is None:
        if transport == "http":
            who = holder.describe() if holder else "another process"
            raise MemvaultError(
                f"the store is already served by `memvault serve`, {who}; use that one, or "
                "stop it first"
            )
        _relay(store_url, holder, listens, say)
        return
    try:
        tcp = _bind_tcp(host, tcp_port) if listens else None
    except BaseException:
        claim.release()
        raise
    holding = Holding(store_url, claim, tcp=tcp, host=host, token=token)
    try:
        warmed = holding.open()
        info = holding.listen()
        where = f"MCP {'on stdio' if transport == 'stdio' else ''}"
        if info.url:
            where += f"{' and ' if transport == 'stdio' else ''}at {info.url}/mcp"
            where += " (bearer token required)" if token else ""
        say(
            f"memvault serve: index of {warmed['blocks']:,} blocks ready in "
            f"{warmed['seconds']:g} s; {where}; the shell's socket {info.socket}"
        )
        with _terminated_as_interrupt(), contextlib.suppress(KeyboardInterrupt):
            if transport == "http":
                holding.run()
            else:
                from memvault.serve.app import build_mcp, run_stdio

                holding.start()
                run_stdio(build_mcp(holding.service))
    finally:
        holding.close()


def _relay(store_url: str, holder: discovery.ServerInfo | None, asked_port: bool, say: Say) -> None:
    """A second session: pass the calls on to the holder, take over when it goes."""
    from memvault.serve.app import build_mcp, run_stdio
    from memvault.serve.relay import Relay

    def take_over(claim: discovery.Claim) -> Service:
        holding = Holding(store_url, claim)
        relay.closers.append(holding.close)
        holding.open()
        holding.listen()
        holding.start()
        say(f"memvault serve: the store's server ended; this session serves it now (PID {os.getpid()})")  # fmt: skip
        return holding.service

    relay = Relay(store_url, holder, take_over)
    who = holder.describe() if holder else "another session"
    say(
        f"memvault serve: the store is served by {who}; passing calls to it"
        + ("; --port is not opened by a second session" if asked_port else "")
    )
    try:
        with _terminated_as_interrupt(), contextlib.suppress(KeyboardInterrupt):
            relay.watch()
            run_stdio(build_mcp(relay))
    finally:
        relay.close()
