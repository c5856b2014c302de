"""Who may talk to a memvault web server on this machine: the Host/Origin guard.

A server on 127.0.0.1 is still reachable from a web page the owner opens: another
site can point a name it controls at 127.0.0.1 (DNS rebinding) or post to the port
from its own page. :class:`Guard` answers only requests addressed to the host and port
the server was started on and refuses an ``Origin`` that is another site. The review
page (``memvault review --serve``) and ``memvault serve`` both use it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
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
