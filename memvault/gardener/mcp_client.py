"""A small synchronous client for MCP servers reached over stdio.

The gardener is plain synchronous Python; the ``mcp`` SDK is async and keeps
its subprocess pipes inside an anyio task group that must be entered and left
by one task. So the client runs the SDK on an anyio *blocking portal* (a
private event loop in a background thread) and enters the SDK's ``Client``
through ``portal.wrap_async_context_manager``, which keeps enter and exit in
one task. Every call is a ``portal.call`` that waits for the answer.

The server's stderr goes to a temporary file, so an error can quote its tail:
a server that does not start, dies, times out or answers a tool call with an
error raises an :class:`McpError` (a :class:`~memvault.errors.StoreError`)
that says which server, which tool and what the server last said.

Stores are named by URL: ``mcp+stdio:<command line>``, split like a shell
would (``shlex``); leading ``NAME=value`` words are environment variables for
the server, e.g. ``mcp+stdio:MEMORY_FILE_PATH=/data/memory.jsonl
npx -y @modelcontextprotocol/server-memory``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from memvault.errors import StoreError

#: The URL scheme of a store reached by starting an MCP server over stdio.
STDIO_SCHEME = "mcp+stdio:"
#: Seconds to wait for the server's handshake and for each tool call.
DEFAULT_TIMEOUT = 30.0
#: How much of the server's stderr an error message quotes.
STDERR_TAIL_CHARS = 2000

_ENV_WORD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


class McpError(StoreError):
    """An MCP server could not be reached or refused a request."""


class McpServerError(McpError):
    """The server did not start, died, broke the protocol or did not answer in time."""


class McpToolError(McpError):
    """The server answered a tool call with an error (``isError``)."""

    def __init__(self, message: str, *, tool: str, detail: str) -> None:
        super().__init__(message)
        self.tool = tool
        self.detail = detail


@dataclass(frozen=True)
class ToolInfo:
    """One tool a server lists: what the survey matches capabilities against."""

    name: str
    description: str
    input_schema: dict[str, Any]
    #: The server's own hints (MCP tool annotations); ``None`` when it gives none.
    read_only: bool | None = None
    destructive: bool | None = None

    @property
    def parameters(self) -> tuple[str, ...]:
        """Top-level argument names from the input schema."""
        properties = self.input_schema.get("properties") or {}
        return tuple(properties)


@dataclass(frozen=True)
class StdioCommand:
    """How to start a stdio MCP server: argv, extra environment, working directory."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    @property
    def url(self) -> str:
        """The ``mcp+stdio:`` URL that parses back to this command."""
        words = [f"{k}={v}" for k, v in self.env.items()] + list(self.argv)
        return STDIO_SCHEME + shlex.join(words)

    @property
    def display(self) -> str:
        """A short name for messages: the command line without the environment."""
        return shlex.join(self.argv)


def is_stdio_url(url: str) -> bool:
    return url.startswith(STDIO_SCHEME)


def parse_stdio_url(url: str, *, cwd: str | None = None) -> StdioCommand:
    """``mcp+stdio:[NAME=value ...] command [args ...]`` → :class:`StdioCommand`.

    ``mcp+stdio://cmd`` is accepted too (the ``//`` is dropped, so
    ``mcp+stdio:///usr/bin/server`` names ``/usr/bin/server``).
    """
    if not is_stdio_url(url):
        raise McpError(f"not an MCP stdio store URL: {url!r}; expected 'mcp+stdio:<command line>'")
    rest = url[len(STDIO_SCHEME) :]
    if rest.startswith("//"):
        rest = rest[2:]
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise McpError(f"cannot split the command line of {url!r}: {exc}") from exc
    env, argv = split_env_words(words)
    if not argv:
        raise McpError(
            f"{url!r} names no command; write e.g. "
            "'mcp+stdio:MEMORY_FILE_PATH=/path/memory.jsonl npx -y @modelcontextprotocol/server-memory'"
        )
    return StdioCommand(argv=tuple(argv), env=env, cwd=cwd)


def split_env_words(words: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Leading ``NAME=value`` words (the environment) and the command line after them."""
    env: dict[str, str] = {}
    rest = list(words)
    while rest and (match := _ENV_WORD.match(rest[0])):
        env[match.group(1)] = match.group(2)
        rest.pop(0)
    return env, rest


def _leaf_errors(exc: BaseException) -> list[BaseException]:
    """The non-group exceptions inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        leaves: list[BaseException] = []
        for inner in exc.exceptions:
            leaves.extend(_leaf_errors(inner))
        return leaves
    return [exc]


def _describe(exc: BaseException) -> str:
    parts = []
    for leaf in _leaf_errors(exc):
        text = str(leaf) or type(leaf).__name__
        message = getattr(leaf, "message", None)
        if isinstance(message, str) and message:
            text = message
        parts.append(f"{type(leaf).__name__}: {text}")
    return "; ".join(parts)


def _parse_content(result: Any) -> Any:
    """A tool result as data: the JSON of its text, else the text, else its structured content."""
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    if not texts:
        return result.structured_content
    text = "\n".join(texts)
    try:
        return json.loads(text)
    except ValueError:
        return text


class McpStdioClient(AbstractContextManager["McpStdioClient"]):
    """A running stdio MCP server and a session with it, used synchronously.

    ``with McpStdioClient(["node", "server.js"], env={...}) as client:``
    ``client.tools()`` lists the tools; ``client.call(name, arguments)`` calls one.
    The server is stopped when the block ends (stdin closed, then terminated).
    It inherits only the SDK's safe environment (``PATH``, ``HOME``, ``USER``, ...)
    plus ``env``.
    """

    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if not command:
            raise McpError("an MCP stdio server needs a command to start")
        self.command = StdioCommand(
            argv=tuple(str(word) for word in command),
            env=dict(env or {}),
            cwd=str(cwd) if cwd is not None else None,
        )
        self.timeout = timeout
        self._portal_cm: AbstractContextManager[Any] | None = None
        self._portal: Any = None
        self._session_cm: AbstractContextManager[Any] | None = None
        self._session: Any = None
        self._stderr: IO[str] | None = None
        self._tools: list[ToolInfo] | None = None
        self._broken: str | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> McpStdioClient:
        command = parse_stdio_url(url)
        return cls(command.argv, env=command.env, cwd=cwd, timeout=timeout)

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> McpStdioClient:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._session is not None and self._broken is None

    def start(self) -> None:
        """Start the server and finish the MCP handshake (within ``timeout`` seconds)."""
        if self._session is not None:
            return
        self._tools, self._broken = None, None
        # Imported here: the SDK is only needed by stores reached over MCP.
        from anyio.from_thread import start_blocking_portal
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        argv = self.command.argv
        params = StdioServerParameters(
            command=argv[0], args=list(argv[1:]), env=dict(self.command.env), cwd=self.command.cwd
        )
        # Lives as long as the session (closed in close()), so no with block here.
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        # "legacy" = the initialize handshake every server speaks; "auto" first probes
        # server/discover and, against a silent server, waits out two timeouts instead of one.
        client = Client(
            stdio_client(params, errlog=self._stderr),
            mode="legacy",
            read_timeout_seconds=self.timeout,
        )
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._session_cm = self._portal.wrap_async_context_manager(client)
        try:
            self._session = self._session_cm.__enter__()
            # A client nobody closed would hang the interpreter at exit (the portal's thread
            # waits for the session task): stop it at garbage collection or exit instead.
            self._finalizer = weakref.finalize(
                self, _stop, self._session_cm, self._portal_cm, self._stderr
            )
        except OSError as exc:  # not found, not executable, bad cwd
            self._session_cm = None
            message = (
                f"cannot start MCP server {self.command.display!r}: {exc.strerror or exc}: "
                f"{exc.filename or argv[0]!r}; install it or fix the store URL"
            )
            self.close()
            raise McpServerError(message) from exc
        except (Exception, BaseExceptionGroup) as exc:
            self._session_cm = None
            message = (
                f"MCP server {self.command.display!r} did not complete the MCP handshake "
                f"(timeout {self.timeout:g} s): {_describe(exc)}{self._stderr_note()}"
            )
            self.close()
            raise McpServerError(message) from exc

    def close(self) -> None:
        """Stop the server (idempotent); errors while stopping are not raised."""
        if self._finalizer is not None:
            self._finalizer()  # runs _stop once, whoever calls first (this, GC or exit)
            self._finalizer = None
        else:
            _stop(self._session_cm, self._portal_cm, self._stderr)
        self._session_cm = self._session = None
        self._portal_cm = self._portal = None
        self._stderr = None

    # -- requests ----------------------------------------------------------------------------

    @property
    def server_name(self) -> str:
        """The name the server gave in the handshake (or the command, if it gave none)."""
        info = self._require().server_info
        return info.name if info is not None else self.command.display

    @property
    def server_version(self) -> str | None:
        info = self._require().server_info
        return info.version if info is not None else None

    def tools(self) -> list[ToolInfo]:
        """Every tool the server lists (all pages), cached for the session."""
        if self._tools is None:
            session = self._require()
            found: list[ToolInfo] = []
            cursor: str | None = None
            while True:
                page = self._run(session.list_tools, what="tools/list", cursor=cursor)
                for tool in page.tools:
                    hints = tool.annotations
                    found.append(
                        ToolInfo(
                            name=tool.name,
                            description=tool.description or "",
                            input_schema=dict(tool.input_schema or {}),
                            read_only=hints.read_only_hint if hints is not None else None,
                            destructive=hints.destructive_hint if hints is not None else None,
                        )
                    )
                cursor = page.next_cursor
                if not cursor:
                    break
            self._tools = found
        return list(self._tools)

    def tool_names(self) -> set[str]:
        return {tool.name for tool in self.tools()}

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call a tool; its text content parsed as JSON when it is JSON, else the text.

        Raises :class:`McpToolError` when the server reports a tool error and
        :class:`McpServerError` when it is gone or does not answer in time.
        """
        session = self._require()
        result = self._run(session.call_tool, name, dict(arguments or {}), what=f"tool {name!r}")
        if result.is_error:
            detail = _parse_content(result)
            text = detail if isinstance(detail, str) else json.dumps(detail)
            raise McpToolError(
                f"MCP server {self.server_name!r} refused tool {name!r}: {text}",
                tool=name,
                detail=text,
            )
        return _parse_content(result)

    def stderr_tail(self, chars: int = STDERR_TAIL_CHARS) -> str:
        """The last ``chars`` characters the server wrote to stderr."""
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        text = self._stderr.read()
        self._stderr.seek(0, os.SEEK_END)
        return text[-chars:]

    def _stderr_note(self) -> str:
        tail = self.stderr_tail().strip()
        return f"; server stderr:\n{tail}" if tail else "; the server wrote nothing to stderr"

    def _require(self) -> Any:
        if self._broken is not None:
            raise McpServerError(self._broken)
        if self._session is None:
            raise McpServerError(
                f"MCP server {self.command.display!r} is not running; use the client in a with block"
            )
        return self._session

    def _run(self, func: Any, *args: Any, what: str, **kwargs: Any) -> Any:
        try:
            return self._portal.call(lambda: func(*args, **kwargs))
        except (Exception, BaseExceptionGroup) as exc:
            message = (
                f"MCP server {self.command.display!r} failed on {what} ({_describe(exc)})"
                f"{self._stderr_note()}"
            )
            if _connection_lost(exc):
                self._broken = f"MCP server {self.command.display!r} is gone: {_describe(exc)}"
            raise McpServerError(message) from exc


def _stop(
    session_cm: AbstractContextManager[Any] | None,
    portal_cm: AbstractContextManager[Any] | None,
    stderr: IO[str] | None,
) -> None:
    """Leave the session (stops the server), then the portal (its event loop thread)."""
    # Errors here mean the server already died: nothing is left to stop.
    for cm in (session_cm, portal_cm):
        if cm is not None:
            with suppress(Exception, BaseExceptionGroup):
                cm.__exit__(None, None, None)
    if stderr is not None:
        stderr.close()


def _connection_lost(exc: BaseException) -> bool:
    """Whether the session cannot be used again (closed pipe, dead process)."""
    import anyio

    for leaf in _leaf_errors(exc):
        code = getattr(leaf, "code", None)
        if code == -32000 or isinstance(
            leaf, anyio.ClosedResourceError | anyio.BrokenResourceError | BrokenPipeError
        ):
            return True
    return False


def resolve_relative(value: str, cwd: str | os.PathLike[str] | None) -> str:
    """``value`` as an absolute path, resolved against ``cwd`` (or the current directory)."""
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = Path(cwd or os.getcwd()) / path
    return str(path.resolve())
