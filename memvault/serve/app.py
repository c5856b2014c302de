"""The MCP server: memvault's tools on stdio and on streamable HTTP, and the HTTP gate.

``build_mcp`` registers the tools (recall, remember, feedback, asof) on the SDK's
:class:`MCPServer`, each answering from a :class:`~memvault.serve.service.MemoryService`
(or, when another server already holds the store, from a
:class:`~memvault.serve.relay.Relay`). ``http_app`` is the streamable HTTP endpoint
(``/mcp``) plus the plain JSON tools the shell's ``memvault recall`` uses
(``/memvault/v1/<tool>``), behind :class:`Gate`: on the Unix socket, only callers with
the discovery file's token; on TCP, only requests addressed to the host and port the
server is bound to, from no other site's page, and, with a token, only those that carry
it (``Authorization: Bearer``).
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from typing import Any, Protocol

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from memvault.http_guard import DEFAULT_MAX_BODY, BodyLimit, Guard, is_loopback
from memvault.serve.client import API_PREFIX, HELLO_PATH, NONCE_HEADER, proof
from memvault.serve.tools import INSTRUCTIONS, build_tools


class Service(Protocol):
    """Whatever answers the tools: the store's own service, or the server that holds it."""

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


def build_mcp(service: Service) -> MCPServer:
    """memvault's tools (:mod:`memvault.serve.tools`) on an MCP server; a refused call is a
    tool error (nothing written)."""
    from memvault import __version__

    mcp: MCPServer = MCPServer(
        "memvault",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=build_tools(service.call),
    )

    @mcp.custom_route(API_PREFIX + "release", methods=["POST"], include_in_schema=False)
    async def release(request: Request) -> Response:
        """Another process of this user needs the DuckDB file (a nightly job, an owner's
        command): let go of it after the call under way (see memvault.serve.writer)."""
        let_go = getattr(service, "release", None)
        if let_go is None:  # a server that passes calls on holds no store
            return JSONResponse({"result": {"held": False, "detachable": False}})
        result = await anyio.to_thread.run_sync(let_go)
        return JSONResponse({"result": result})

    @mcp.custom_route(API_PREFIX + "{tool}", methods=["POST"], include_in_schema=False)
    async def plain_call(request: Request) -> Response:
        """The same tools as plain JSON (``{"result": ...}`` or ``{"error": ...}``), for the
        shell's ``memvault recall``: arguments are checked exactly as over MCP."""
        tool = request.path_params["tool"]
        try:
            arguments = json.loads(await request.body() or b"{}")
        except ValueError:
            return JSONResponse({"error": "the body is not JSON"}, status_code=400)
        if not isinstance(arguments, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        if tool not in {"recall", "remember", "feedback", "asof"}:
            return JSONResponse({"error": f"no tool {tool!r}"}, status_code=404)
        try:
            result = await mcp.call_tool(tool, arguments)
        except ToolError as exc:
            message = str(exc).removeprefix(f"Error executing tool {tool}: ")
            return JSONResponse({"error": message}, status_code=400)
        structured = getattr(result, "structured_content", None)
        if getattr(result, "is_error", False) or structured is None:
            text = " ".join(getattr(c, "text", "") for c in getattr(result, "content", []))
            return JSONResponse({"error": text or "the tool failed"}, status_code=400)
        return JSONResponse({"result": structured, "served_by": "server"})

    return mcp


class Gate:
    """ASGI middleware: who may use the server, by the way they came.

    * On the Unix socket (this user's alone, in a 0700 directory): the server first proves
      it holds the discovery file's token (``GET /memvault/v1/hello`` answers an HMAC of
      the client's nonce); every other request must carry that token as a bearer token.
    * On TCP: a foreign ``Host`` (a rebound name) or ``Origin`` (another site's page) gets
      403; with a token (``MEMVAULT_SERVE_TOKEN``, ``--token-file``) a request without
      ``Authorization: Bearer <token>`` gets 401; without one, only loopback peers are
      answered and the plain JSON tools are not there (404): the shell uses the socket.
    * Everywhere: a body over the limit gets 413 (:class:`~memvault.http_guard.BodyLimit`).
    """

    def __init__(
        self,
        app: ASGIApp,
        guard: Guard,
        token: str | None = None,
        *,
        socket_token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.app = BodyLimit(app, max_body)
        self.guard = guard
        self.token = token
        self.socket_token = socket_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the session manager starts and stops
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        server = scope.get("server")
        # uvicorn gives (path, None) as the server of a request on a Unix socket.
        on_socket = server is not None and server[1] is None
        if on_socket:
            refusal = self._socket_refusal(scope, headers)
        else:
            refusal = self._tcp_refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _socket_refusal(self, scope: Scope, headers: Headers) -> Response | None:
        if self.socket_token is None:
            return PlainTextResponse("refused: no socket token", status_code=403)
        if scope["path"] == HELLO_PATH:
            nonce = headers.get(NONCE_HEADER, "")
            if not 16 <= len(nonce) <= 128:
                return JSONResponse({"error": f"a hello needs {NONCE_HEADER}"}, status_code=400)
            return JSONResponse({"proof": proof(self.socket_token, nonce), "pid": os.getpid()})
        if not _bearer_ok(headers.get("authorization"), self.socket_token):
            return _unauthorized("the discovery file's token")
        return None

    def _tcp_refusal(self, scope: Scope, headers: Headers) -> Response | None:
        if not self.guard.host_ok(headers.get("host")):
            return PlainTextResponse(
                "refused: this server answers only as " + self.guard.names(), status_code=403
            )
        if not self.guard.origin_ok(headers.get("origin")):
            return PlainTextResponse("refused: a request from another site", status_code=403)
        if self.token is not None:
            if not _bearer_ok(headers.get("authorization"), self.token):
                return _unauthorized("its MEMVAULT_SERVE_TOKEN")
            return None
        client = scope.get("client")
        if not is_loopback(client[0] if client else None):
            return PlainTextResponse(
                "refused: without a token this server answers this machine only", status_code=403
            )
        if str(scope["path"]).startswith(API_PREFIX):
            return JSONResponse({"error": "not found"}, status_code=404)
        return None


def _unauthorized(which: str) -> Response:
    return PlainTextResponse(
        f"refused: this server needs `Authorization: Bearer <token>` ({which})",
        status_code=401,
        headers={"WWW-Authenticate": 'Bearer realm="memvault"'},
    )


def _bearer_ok(header: str | None, token: str) -> bool:
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(
        given.strip().encode(), token.encode()
    )


def http_app(
    mcp: MCPServer,
    guard: Guard,
    token: str | None = None,
    *,
    socket_token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> ASGIApp:
    """The streamable HTTP endpoint (``/mcp``) and the JSON tools behind :class:`Gate`."""
    # The SDK's own DNS-rebinding check is off: the Gate checks the same headers, stricter
    # (the bound port only) and for every route.
    from mcp.server.transport_security import TransportSecuritySettings

    inner = mcp.streamable_http_app(
        # A tool call's answer as one JSON body, not an event stream (no notifications are
        # sent mid-call): fewer round trips per recall.
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return Gate(inner, guard, token, socket_token=socket_token, max_body=max_body)


def run_stdio(mcp: MCPServer) -> None:
    """Serve MCP on standard input and output until the client closes them, or until this
    thread is interrupted (Ctrl-C, or SIGTERM turned into one).

    The SDK reads standard input in a worker thread that no cancellation can stop, so the
    MCP loop runs in a thread of its own and this one only waits: an interrupt returns at
    once, and the process ends (its cleanup done) without waiting for input that may never
    come. The reading thread ends with the process."""
    done = threading.Event()
    failure: list[BaseException] = []

    def loop() -> None:
        try:
            anyio.run(mcp.run_stdio_async)
        except BaseException as exc:  # said by the waiting thread
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=loop, name="memvault-stdio", daemon=True).start()
    while not done.wait(0.5):
        pass
    if failure:
        raise failure[0]
