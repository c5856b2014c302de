"""Ask a running ``memvault serve`` from another process (the shell's ``memvault recall``).

The server answers plain JSON on ``POST /memvault/v1/<tool>`` (the tools its MCP endpoint
offers) on its Unix socket. Before sending anything the client makes sure it talks to
the server the discovery file names: the socket's peer is this user's process with that
PID (``SO_PEERCRED``), and it proves it knows the file's token (an HMAC of a fresh
nonce); only then does the request go, with the token. The whole call gives up after
``MEMVAULT_SERVE_TIMEOUT`` seconds (a stopped server's socket still accepts: the kernel
does), naming the process that does not answer.

Standard library only, so a ``memvault recall`` answered by the server costs a Python
start and one local request, not an import of the store and its search index.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import secrets
import socket
import struct
import time
from typing import Any

from memvault.errors import MemvaultError
from memvault.serve import discovery

#: Where the plain JSON tools live under the server's URL.
API_PREFIX = "/memvault/v1/"
#: The handshake by which a server proves it holds the discovery file's token.
HELLO_PATH = API_PREFIX + "hello"
NONCE_HEADER = "X-Memvault-Nonce"
#: Seconds a call to the server may take, all of it (``MEMVAULT_SERVE_TIMEOUT``).
TIMEOUT_VARIABLE = "MEMVAULT_SERVE_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
#: The longest path ``connect()`` takes for a Unix socket (``sun_path`` less its NUL).
_SUN_PATH_MAX = 107


#: Tools that may be asked again (or done in-process) when an answer was cut off.
READ_ONLY = frozenset({"recall", "asof"})


class ServerUnavailable(Exception):
    """No trusted server answered. ``sent``: the call had gone out when the connection
    broke (the server may have done it); else nothing was sent and the caller may do it."""

    def __init__(self, message: str, *, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


class ServerStuck(MemvaultError):
    """The server accepted but did not answer in time (stopped, or hung): said with its PID
    and command line, so the user knows which process it is."""


class ServerRefused(Exception):
    """The server answered with a refusal the user can act on (its one-line message)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def timeout() -> float:
    """``MEMVAULT_SERVE_TIMEOUT`` in seconds (default 10)."""
    raw = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        raise MemvaultError(f"{TIMEOUT_VARIABLE}={raw!r} is not a number of seconds") from None
    if not value > 0:
        raise MemvaultError(f"{TIMEOUT_VARIABLE}={raw!r} must be more than 0 seconds")
    return value


def proof(token: str, nonce: str) -> str:
    """What a server answers a hello with: the HMAC of the client's nonce under the token."""
    return hmac.new(token.encode(), b"memvault-serve-hello:" + nonce.encode(), hashlib.sha256).hexdigest()  # fmt: skip


def connect_unix(path: str, seconds: float) -> socket.socket:
    """A connected Unix socket; a path longer than ``sun_path`` is reached through its
    directory's descriptor (``/proc/self/fd/N/name``)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(seconds)
    try:
        if len(os.fsencode(path)) <= _SUN_PATH_MAX:
            sock.connect(path)
        else:
            folder, name = os.path.split(path)
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                sock.connect(f"/proc/self/fd/{fd}/{name}")
            finally:
                os.close(fd)
    except BaseException:
        sock.close()
        raise
    return sock


def _peer(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket."""
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return pid, uid


class _Connection(http.client.HTTPConnection):
    """HTTP over an already connected socket (the server's Unix socket)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__("localhost")
        self.sock = sock

    def connect(self) -> None:  # already connected; a second connect is a bug
        raise ServerUnavailable("the connection to the server was closed")


def call(info: discovery.ServerInfo, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``tool(**arguments)`` on the server ``info`` names.

    Raises :class:`ServerUnavailable` when nothing was sent (no socket, not the process
    the file names, no proof of the token), :class:`ServerStuck` when it does not answer
    within the timeout, :class:`ServerRefused` when it refuses the call."""
    budget = timeout()
    deadline = time.monotonic() + budget
    if discovery.process_state(info.pid) in ("T", "t"):
        raise ServerStuck(
            f"the memvault server that holds the store, {info.describe()}, is stopped "
            f"(Ctrl-Z or SIGSTOP): resume it (`fg` in its shell, or `kill -CONT {info.pid}`) "
            "or end it"
        )
    try:
        sock = connect_unix(info.socket, budget)
    except OSError as exc:
        raise ServerUnavailable(f"{info.socket}: {exc.strerror or exc}") from None
    connection = _Connection(sock)
    stage = "prove who it is"
    sent = False
    try:
        pid, uid = _peer(sock)
        if uid != os.getuid() or pid != info.pid:
            raise ServerUnavailable(
                f"the socket {info.socket} is held by PID {pid} (uid {uid}), not {info.describe()}"
            )
        nonce = secrets.token_hex(16)
        _request(connection, deadline, "GET", HELLO_PATH, None, {NONCE_HEADER: nonce})
        status, hello = _response(connection, deadline)
        shown = hello.get("proof") if isinstance(hello, dict) else None
        if status != 200 or not isinstance(shown, str):
            raise ServerUnavailable(f"{info.describe()} did not answer the hello ({status})")
        if not hmac.compare_digest(shown, proof(info.token, nonce)):
            raise ServerUnavailable(f"{info.describe()} does not know the discovery file's token")
        stage = f"answer {tool}"
        sent = True
        body = json.dumps(arguments).encode("utf-8")
        headers = {
            "Authorization": f"Bearer {info.token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        _request(connection, deadline, "POST", API_PREFIX + tool, body, headers)
        status, data = _response(connection, deadline)
    except TimeoutError:
        raise ServerStuck(
            f"the memvault server that holds the store, {info.describe()}, did not "
            f"{stage} within {budget:g} s ({TIMEOUT_VARIABLE}); it may be stopped or hung: "
            f"see `ps -o pid,stat,cmd -p {info.pid}`, end it or wait for it"
        ) from None
    except (OSError, http.client.HTTPException) as exc:
        raise ServerUnavailable(f"{info.describe()}: {exc}", sent=sent) from None
    finally:
        connection.close()
    if status == 200 and isinstance(data, dict) and "result" in data:
        result = data["result"]
        return result if isinstance(result, dict) else {"result": result}
    message = data.get("error") if isinstance(data, dict) else None
    if status in (400, 404, 409, 413, 422) and message:
        raise ServerRefused(str(message), status)
    raise ServerUnavailable(
        f"{info.describe()} answered {status}: {message or data!r}"[:300], sent=True
    )


def _request(
    connection: _Connection,
    deadline: float,
    method: str,
    path: str,
    body: bytes | None,
    headers: dict[str, str],
) -> None:
    _arm(connection, deadline)
    connection.request(method, path, body=body, headers=headers)


def _response(connection: _Connection, deadline: float) -> tuple[int, Any]:
    _arm(connection, deadline)
    response = connection.getresponse()
    payload = bytearray()
    while chunk := response.read(65536):  # a socket timeout per read, the deadline overall
        payload += chunk
        _arm(connection, deadline)
    try:
        return response.status, json.loads(bytes(payload) or b"{}")
    except ValueError:
        return response.status, {}


def _arm(connection: _Connection, deadline: float) -> None:
    """The socket's timeout set to what is left of the call's time."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    if connection.sock is not None:
        connection.sock.settimeout(left)


def ask(store_url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The server's answer when a live server holds ``store_url``, else None (do it
    in-process). A refusal (:class:`ServerRefused`), a server that does not answer
    (:class:`ServerStuck`) or one that ended while writing is raised: the server has the
    store, or may have done the write."""
    info = discovery.read(store_url)
    if info is None:
        return None
    try:
        return call(info, tool, arguments)
    except ServerUnavailable as exc:
        if exc.sent and tool not in READ_ONLY:
            raise MemvaultError(
                f"the memvault server that holds the store, {info.describe()}, ended while "
                f"answering this {tool}; check whether it was recorded before giving it again"
            ) from None
        return None


def request_release(store_url: str) -> bool:
    """Ask the running server of ``store_url``, if any, to let go of its DuckDB file (another
    process of this user needs it: a nightly job, an owner's command); True once it has.
    It takes the file back later, when the file is free (see memvault.serve.writer). Best
    effort: no server, or one that does not answer, is no error (the caller waits on)."""
    info = discovery.read(store_url)
    if info is None:
        return False
    try:
        answer = call(info, "release", {})
    except (ServerUnavailable, ServerRefused, ServerStuck, MemvaultError):
        return False
    return answer.get("held") is False
