"""Ask a running ``memvault serve`` from another process (the shell's ``memvault recall``).

The server answers plain JSON on ``POST <url>/memvault/v1/<tool>`` (the same tools its
MCP endpoint offers), behind the same Host/Origin guard and bearer token. This module
uses the standard library only, so a ``memvault recall`` answered by the server costs a
Python start and one loopback request, not an import of the store and its search index.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from memvault.serve import discovery

#: Seconds to wait for the server to accept the connection: a server that is gone (or
#: hung) is given up quickly, and the caller does the work itself.
CONNECT_TIMEOUT = 1.0
#: Seconds to wait for an answer once connected (a first recall builds the index).
ANSWER_TIMEOUT = 120.0
#: Where the plain JSON tools live under the server's URL.
API_PREFIX = "/memvault/v1/"


class ServerUnavailable(Exception):
    """No server answered; the caller does the work in-process."""


class ServerRefused(Exception):
    """The server answered with a refusal the user can act on (its one-line message)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def call(info: discovery.ServerInfo, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``tool(**arguments)`` on the server ``info`` names; raises :class:`ServerUnavailable`
    when it cannot be reached, :class:`ServerRefused` when it refuses the call."""
    parts = urlsplit(info.url)
    if parts.scheme != "http" or not parts.hostname:
        raise ServerUnavailable(f"unsupported server URL {info.url!r}")
    connection = http.client.HTTPConnection(
        parts.hostname, parts.port or 80, timeout=CONNECT_TIMEOUT
    )
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if info.token:
        headers["Authorization"] = f"Bearer {info.token}"
    body = json.dumps(arguments).encode("utf-8")
    try:
        connection.connect()
        if connection.sock is not None:
            connection.sock.settimeout(ANSWER_TIMEOUT)
        connection.request("POST", API_PREFIX + tool, body=body, headers=headers)
        response = connection.getresponse()
        payload = response.read()
    except (TimeoutError, OSError, http.client.HTTPException) as exc:
        raise ServerUnavailable(f"{info.url}: {exc}") from exc
    finally:
        connection.close()
    try:
        data = json.loads(payload or b"{}")
    except ValueError:
        data = {}
    if response.status == 200 and isinstance(data, dict) and "result" in data:
        result = data["result"]
        return result if isinstance(result, dict) else {"result": result}
    message = data.get("error") if isinstance(data, dict) else None
    if response.status in (400, 404, 409, 422) and message:
        raise ServerRefused(str(message), response.status)
    raise ServerUnavailable(f"{info.url} answered {response.status}: {message or payload[:200]!r}")


def ask(store_url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The server's answer when a live server holds ``store_url``, else None (do it
    in-process). A refusal (:class:`ServerRefused`) is raised: the server has the store."""
    info = discovery.read(store_url)
    if info is None:
        return None
    try:
        return call(info, tool, arguments)
    except ServerUnavailable:
        return None
