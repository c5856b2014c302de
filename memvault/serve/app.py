"""The MCP server: memvault's tools on stdio and on streamable HTTP, and the HTTP gate.

``build_mcp`` registers the tools (recall, remember, feedback, asof) on the SDK's
:class:`MCPServer`, each answering from a :class:`~memvault.serve.service.MemoryService`
(or, when another server already holds the store, from that server). ``http_app`` is
the streamable HTTP endpoint (``/mcp``) plus the plain JSON tools the shell's
``memvault recall`` uses (``/memvault/v1/<tool>``), behind :class:`Gate`: only requests
addressed to the host and port the server is bound to, from no other site's page, and,
with a token, only those that carry it (``Authorization: Bearer``).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Annotated, Any, Literal, Protocol

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from memvault.errors import MemvaultError
from memvault.http_guard import Guard
from memvault.serve.client import API_PREFIX, ServerRefused, ServerUnavailable
from memvault.serve.service import MAX_LIMIT

INSTRUCTIONS = """\
memvault is the owner's long-term memory. Call `recall` with the question in the owner's
words before answering from memory; it returns the best memories (text, score, tier,
kind: an 'insight' is the memory's own reading, not a memory) and the current facts about
the entities named. Rate an answer with `feedback` (its recall_id). Use `remember` for
something worth keeping, and `asof` for what was true about an entity at a date."""


class Service(Protocol):
    """Whatever answers the tools: the store's own service, or the server that holds it."""

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


class RemoteService:
    """The tools of another ``memvault serve`` that holds the store (its JSON endpoint)."""

    def __init__(self, info: Any) -> None:
        self.info = info

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        from memvault.serve.client import call

        try:
            return call(self.info, tool, arguments)
        except ServerRefused as exc:
            raise MemvaultError(str(exc)) from None
        except ServerUnavailable as exc:
            raise MemvaultError(
                f"the memvault server that holds the store (PID {self.info.pid}) does not "
                f"answer ({exc}); restart this one"
            ) from None


def build_mcp(service: Service) -> MCPServer:
    """memvault's tools on an MCP server; a refused call is a tool error (nothing written)."""
    from memvault import __version__

    mcp: MCPServer = MCPServer(
        "memvault", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    def run(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return service.call(tool, arguments)
        except MemvaultError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False))
    def recall(
        query: Annotated[str, Field(description="What to recall, in the owner's words")],
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Hits to return")] = 10,
        session_id: Annotated[
            str | None, Field(description="The session asking (kept in the recall log)")
        ] = None,
    ) -> dict[str, Any]:
        """The memories that best answer the query and the current facts about the entities
        it names (as `memvault recall --json`); recorded, rate it with `feedback`."""
        return run("recall", {"query": query, "limit": limit, "session_id": session_id})

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def remember(
        text: Annotated[str, Field(description="The memory, as it should be recalled")],
        speaker: Annotated[
            str | None, Field(description="Who said it (user, assistant, ...)")
        ] = None,
        session_id: Annotated[str | None, Field(description="The conversation it is from")] = None,
        occurred_at: Annotated[
            str | None, Field(description="When it happened, ISO 8601 (default now)")
        ] = None,
    ) -> dict[str, Any]:
        """Keep a memory: validated and written as `memvault ingest` writes (audited, undoable
        with `memvault undo RUN_ID`); returns the new block id."""
        arguments = {"text": text, "speaker": speaker, "session_id": session_id}
        return run("remember", arguments | {"occurred_at": occurred_at})

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def feedback(
        recall_id: Annotated[str, Field(description="The recall_id a recall returned")],
        verdict: Annotated[
            Literal["correct", "incorrect", "ambiguous", "+", "-"],
            Field(description="On the whole answer, or + / - on its blocks"),
        ],
        block_id: Annotated[
            str | None, Field(description="With + or -: only this block of the answer")
        ] = None,
        note: Annotated[str | None, Field(description="Why (kept with the feedback)")] = None,
    ) -> dict[str, Any]:
        """Tell memvault whether a recall was right (as `memvault feedback`)."""
        arguments = {"recall_id": recall_id, "verdict": verdict, "block_id": block_id}
        return run("feedback", arguments | {"note": note})

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
    def asof(
        subject: Annotated[str, Field(description="An entity id or name")],
        at: Annotated[
            str | None, Field(description="Valid time, YYYY-MM-DD or ISO (default now)")
        ] = None,
        predicate: Annotated[str | None, Field(description="Only this relation")] = None,
        known_at: Annotated[
            str | None, Field(description="Answer with what the store believed at this time")
        ] = None,
    ) -> dict[str, Any]:
        """What was true about the subject at a date (as `memvault asof --json`)."""
        arguments = {"subject": subject, "at": at, "predicate": predicate}
        return run("asof", arguments | {"known_at": known_at})

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
    """ASGI middleware: the Host/Origin guard, then the bearer token when one is set.

    A foreign ``Host`` (a rebound name) or ``Origin`` (another site's page) gets 403; a
    request without the right ``Authorization: Bearer <token>`` gets 401."""

    def __init__(self, app: ASGIApp, guard: Guard, token: str | None = None) -> None:
        self.app = app
        self.guard = guard
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the session manager starts and stops
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal: Response | None = None
        if not self.guard.host_ok(headers.get("host")):
            refusal = PlainTextResponse(
                "refused: this server answers only as " + self.guard.names(), status_code=403
            )
        elif not self.guard.origin_ok(headers.get("origin")):
            refusal = PlainTextResponse("refused: a request from another site", status_code=403)
        elif self.token is not None and not _bearer_ok(headers.get("authorization"), self.token):
            refusal = PlainTextResponse(
                "refused: this server needs `Authorization: Bearer <token>` (its --token)",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="memvault"'},
            )
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _bearer_ok(header: str | None, token: str) -> bool:
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(
        given.strip().encode(), token.encode()
    )


def http_app(mcp: MCPServer, guard: Guard, token: str | None = None) -> ASGIApp:
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
    return Gate(inner, guard, token)


def run_stdio(mcp: MCPServer, on_stop: Callable[[], None] | None = None) -> None:
    """Serve MCP on standard input and output until the client closes them."""
    try:
        anyio.run(mcp.run_stdio_async)
    finally:
        if on_stop is not None:
            on_stop()
