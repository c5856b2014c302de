"""The server's gate, request by request: who gets through on the Unix socket and on TCP,
with and without a token, and how large a body may be."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from memvault.http_guard import Guard
from memvault.serve.app import Gate
from memvault.serve.client import HELLO_PATH, NONCE_HEADER, proof

SOCKET_TOKEN = "s" * 40
TCP_TOKEN = "t" * 20


async def _app(scope: Any, receive: Any, send: Any) -> None:
    """The app behind the gate: reads the whole body, answers 200 with its length."""
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


def _call(
    gate: Gate,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    socket: bool = False,
    client: str = "127.0.0.1",
    chunks: list[bytes] | None = None,
) -> tuple[int, bytes]:
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "server": ("/run/x.sock", None) if socket else ("127.0.0.1", 8767),
        "client": None if socket else (client, 50000),
    }
    parts = list(chunks or [b""])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        body = parts.pop(0) if parts else b""
        return {"type": "http.request", "body": body, "more_body": bool(parts)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    anyio.run(gate, scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body


def _gate(token: str | None = None, max_body: int = 1 << 20) -> Gate:
    guard = Guard.bound_to("127.0.0.1", 8767)
    return Gate(_app, guard, token, socket_token=SOCKET_TOKEN, max_body=max_body)


HOST = {"Host": "127.0.0.1:8767"}


def test_on_the_socket_the_server_proves_its_token_and_asks_for_it() -> None:
    gate = _gate()
    nonce = "n" * 32
    status, body = _call(gate, HELLO_PATH, headers={NONCE_HEADER: nonce}, socket=True)
    assert status == 200 and proof(SOCKET_TOKEN, nonce).encode() in body
    assert proof("another token", nonce).encode() not in body
    assert _call(gate, "/memvault/v1/recall", socket=True)[0] == 401
    bearer = {"Authorization": f"Bearer {SOCKET_TOKEN}"}
    assert _call(gate, "/memvault/v1/recall", headers=bearer, socket=True)[0] == 200


def test_on_tcp_without_a_token_the_json_tools_are_not_there_and_strangers_are_refused() -> None:
    gate = _gate()
    assert _call(gate, "/memvault/v1/recall", headers=HOST)[0] == 404
    assert _call(gate, "/mcp", headers=HOST)[0] == 200  # loopback, warned at start
    assert _call(gate, "/mcp", headers=HOST, client="10.0.0.9")[0] == 403
    assert _call(gate, "/mcp", headers={"Host": "evil.example:8767"})[0] == 403
    # The socket's token opens nothing on TCP.
    bearer = {"Authorization": f"Bearer {SOCKET_TOKEN}"} | HOST
    assert _call(gate, "/memvault/v1/recall", headers=bearer)[0] == 404


def test_on_tcp_with_a_token_every_request_must_carry_it() -> None:
    gate = _gate(TCP_TOKEN)
    for path in ("/mcp", "/memvault/v1/recall"):
        assert _call(gate, path, headers=HOST, client="10.0.0.9")[0] == 401
        bearer = HOST | {"Authorization": f"Bearer {TCP_TOKEN}"}
        assert _call(gate, path, headers=bearer, client="10.0.0.9")[0] == 200
        forged = {"Host": "127.0.0.1:8767", "Authorization": f"Bearer {SOCKET_TOKEN}"}
        assert _call(gate, path, headers=forged, client="10.0.0.9")[0] == 401


@pytest.mark.parametrize("declared", [True, False])
def test_a_body_over_the_limit_is_refused_before_the_app_has_it(declared: bool) -> None:
    gate = _gate(max_body=4096)
    bearer = {"Authorization": f"Bearer {SOCKET_TOKEN}"}
    chunks = [b"x" * 1024] * 8
    if declared:
        bearer["Content-Length"] = str(8 * 1024)
    status, body = _call(gate, "/memvault/v1/remember", headers=bearer, socket=True, chunks=chunks)
    assert status == 413 and b"larger than 4,096 bytes" in body
    bearer.pop("Content-Length", None)
    status, body = _call(
        gate, "/memvault/v1/remember", headers=bearer, socket=True, chunks=chunks[:3]
    )
    assert (status, body) == (200, b"3072")
