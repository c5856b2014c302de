"""Who may talk to a memvault web server on this machine: the Host/Origin guard.

A server on 127.0.0.1 is still reachable from a web page the owner opens: another
site can point a name it controls at 127.0.0.1 (DNS rebinding) or post to the port
from its own page. :class:`Guard` answers only requests addressed to the host and port
the server was started on and refuses an ``Origin`` that is another site. The review
page (``memvault review --serve``) and ``memvault serve`` both use it, and both cap the
size of a request's body (:class:`BodyLimit`).
"""

from __future__ import annotations

import ipaddress
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: Names that reach this machine only: with one of them bound, all of them are accepted.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Guard:
    """Who may use a server: the host names and port it was started on, and a token."""

    hosts: frozenset[tuple[str, int]]
    token: str

    @classmethod
    def bound_to(cls, host: str, port: int, token: str | None = None) -> Guard:
        """The loopback names when a loopback (or every) interface is bound, and the host
        given; a fresh random token unless one is given (tests)."""
        names = {host.strip("[]").lower()}
        if names & LOOPBACK or names & {"0.0.0.0", "::", ""}:
            names |= LOOPBACK
        return cls(frozenset((n, port) for n in names), token or secrets.token_urlsafe(32))

    def _known(self, netloc: str, default_port: int) -> bool:
        try:
            parts = urlsplit(f"//{netloc}")
            port = parts.port or default_port
        except ValueError:
            return False
        return (parts.hostname or "", port) in self.hosts

    def host_ok(self, host: str | None) -> bool:
        """The ``Host`` header names this server (not a name rebound to 127.0.0.1)."""
        return bool(host) and self._known(str(host), 80)

    def origin_ok(self, origin: str | None) -> bool:
        """No ``Origin`` (curl, the CLI's own requests) or this server's own origin."""
        if origin is None:
            return True
        parts = urlsplit(origin)
        return parts.scheme == "http" and self._known(parts.netloc, 80)

    def token_ok(self, token: str | None) -> bool:
        return token is not None and secrets.compare_digest(token.encode(), self.token.encode())

    def names(self) -> str:
        """The ``host:port`` pairs it answers as, for a refusal message."""
        return ", ".join(sorted(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts))


def is_loopback(address: str | None) -> bool:
    """Whether an IP address (a peer's) is this machine's loopback."""
    try:
        return address is not None and ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


# -- the body limit ------------------------------------------------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The largest request body a memvault web server reads, unless told otherwise.
DEFAULT_MAX_BODY = 1 << 20


class _TooLarge(Exception):
    """Raised to the app that reads a body past the limit (the 413 has gone)."""


class BodyLimit:
    """ASGI middleware: a request body larger than ``limit`` bytes is answered 413 and never
    read into memory. A declared ``Content-Length`` over the limit is refused before a byte
    is read; a body sent without one is counted as it arrives and cut off at the limit
    (the app's next read fails, and what it would answer is dropped)."""

    def __init__(self, app: ASGIApp, limit: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await self._refuse(send)
            return
        seen = 0
        refused = False
        started = False

        async def counted_receive() -> Message:
            nonlocal seen, refused
            if refused:
                raise _TooLarge
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    refused = True
                    if not started:
                        await self._refuse(send)
                    raise _TooLarge  # the app stops reading; caught below
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 went instead
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except _TooLarge:
            return

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {"error": f"the request body is larger than {self.limit:,} bytes; nothing was read"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
