"""The shell's side of the socket: it sends nothing to a server that cannot prove the
discovery file's token, and gives up on one that accepts but does not answer, naming it.
The "servers" here are sockets this test listens on, so each misbehaves on purpose."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memvault.errors import MemvaultError
from memvault.serve import client, discovery
from memvault.serve.runner import MIN_TOKEN_LENGTH, check_exposure, resolve_token


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[tuple[socket.socket, discovery.ServerInfo]]:
    """A Unix socket this process listens on, and a ServerInfo naming this process."""
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    identity = discovery.process_identity(os.getpid())
    assert identity is not None
    info = discovery.ServerInfo(
        pid=os.getpid(),
        started=identity[0],
        cmdline=identity[1],
        token="t" * 32,
        socket=str(path),
        store="duckdb:///x.duckdb",
    )
    yield server, info
    server.close()


def _serve_once(server: socket.socket, answer: Callable[[bytes], bytes | None]) -> list[bytes]:
    """Accept one connection in a thread; ``answer`` maps what arrived to a reply (None:
    say nothing). Returns the list that will hold everything received."""
    received: list[bytes] = []

    def run() -> None:
        conn, _ = server.accept()
        conn.settimeout(5)
        with conn:
            try:
                while data := conn.recv(65536):
                    received.append(data)
                    reply = answer(b"".join(received))
                    if reply is not None:
                        conn.sendall(reply)
            except OSError:
                return

    threading.Thread(target=run, daemon=True).start()
    return received


def test_a_server_that_accepts_and_never_answers_is_named_within_the_timeout(
    listening: tuple[socket.socket, discovery.ServerInfo], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, info = listening
    monkeypatch.setenv(client.TIMEOUT_VARIABLE, "1")
    _serve_once(server, lambda data: None)
    started = time.monotonic()
    with pytest.raises(client.ServerStuck) as caught:
        client.call(info, "recall", {"query": "secret question"})
    assert time.monotonic() - started < 3
    message = str(caught.value)
    assert f"PID {info.pid}" in message and info.cmdline[0] in message
    assert "within 1 s (MEMVAULT_SERVE_TIMEOUT)" in message


def test_nothing_is_sent_to_a_server_that_cannot_prove_the_token(
    listening: tuple[socket.socket, discovery.ServerInfo],
) -> None:
    server, info = listening
    forged = b'{"proof": "' + b"0" * 64 + b'"}'
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(forged),
        forged,
    )
    received = _serve_once(server, lambda data: reply if b"\r\n\r\n" in data else None)
    with pytest.raises(client.ServerUnavailable, match="does not know the discovery file's token"):
        client.call(info, "remember", {"text": "the owner's secret"})
    seen = b"".join(received)
    assert seen.startswith(b"GET /memvault/v1/hello")
    assert b"secret" not in seen and info.token.encode() not in seen


def test_a_socket_held_by_another_process_is_not_trusted(
    listening: tuple[socket.socket, discovery.ServerInfo],
) -> None:
    server, info = listening
    received = _serve_once(server, lambda data: None)
    impostor = discovery.ServerInfo(**{**info.__dict__, "pid": info.pid + 1})
    with pytest.raises(client.ServerUnavailable, match="held by PID"):
        client.call(impostor, "recall", {"query": "q"})
    time.sleep(0.1)
    assert received == []


def test_a_long_socket_path_is_reached_through_its_directory(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 90) / ("e" * 40)
    deep.mkdir(parents=True)
    path = deep / "s.sock"
    fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(f"/proc/self/fd/{fd}/s.sock")
    server.listen(1)
    os.close(fd)
    assert len(str(path)) > 107
    with client.connect_unix(str(path), 2) as sock:
        assert sock.getpeername()
    server.close()


def test_the_timeout_must_be_a_positive_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(client.TIMEOUT_VARIABLE, "soon")
    with pytest.raises(MemvaultError, match="not a number"):
        client.timeout()
    monkeypatch.setenv(client.TIMEOUT_VARIABLE, "0")
    with pytest.raises(MemvaultError, match="more than 0"):
        client.timeout()
    monkeypatch.delenv(client.TIMEOUT_VARIABLE)
    assert client.timeout() == client.DEFAULT_TIMEOUT


# -- tokens and exposure ------------------------------------------------------------------------


def test_a_token_comes_from_a_private_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []
    good = "k" * MIN_TOKEN_LENGTH
    file = tmp_path / "token"
    file.write_text(good + "\n")
    file.chmod(0o600)
    monkeypatch.setenv("MEMVAULT_SERVE_TOKEN", "e" * MIN_TOKEN_LENGTH)
    assert resolve_token(token_file=file, say=said.append) == good
    assert resolve_token(say=said.append) == "e" * MIN_TOKEN_LENGTH
    monkeypatch.delenv("MEMVAULT_SERVE_TOKEN")
    assert resolve_token(given=good, say=said.append) == good
    assert said and "shows in `ps`" in said[0]
    file.chmod(0o644)
    with pytest.raises(MemvaultError, match="mode 0644"):
        resolve_token(token_file=file)
    with pytest.raises(MemvaultError, match="at least 16 characters"):
        resolve_token(given="s3cret")


def test_a_port_beyond_loopback_needs_a_token_and_loopback_without_one_warns() -> None:
    said: list[str] = []
    for host in ("0.0.0.0", "10.0.0.5", "::"):
        with pytest.raises(MemvaultError, match=r"refused to listen .* without a token"):
            check_exposure(host, 8767, None, said.append)
    check_exposure("0.0.0.0", 8767, "k" * 20, said.append)
    assert said == []
    check_exposure("127.0.0.1", 8767, None, said.append)
    assert len(said) == 1 and "any user of this machine" in said[0]
