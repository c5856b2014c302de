"""`memvault serve` against the attackers it must hold off: another local user (``nobody``:
the tests run as root and drop to it), a machine on another network (a network namespace
joined by a veth pair), a PID taken over after a kill, a body too large to hold; and the
process troubles of a real day: a stopped server, a second agent session whose server
ends, a mistyped store."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import memvault
from memvault.serve import client, discovery
from tests.helpers import PG_URL, require_service
from tests.integration.test_serve import MEMVAULT, _cli, _counts, _env, _free_port, _mcp
from tests.recall_support import fill

pytestmark = pytest.mark.integration

NOBODY = 65534
#: The other user's interpreter: the project's is under /root, which nobody cannot enter.
SYSTEM_PYTHON = "/usr/bin/python3"
TOKEN = "tok-" + "x" * 28
LISTEN = "0A"  # a TCP socket's state in /proc/net/tcp


def _root() -> bool:
    return os.geteuid() == 0


@pytest.fixture
def shared_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp dir like /tmp (every user may create in it, sticky), used as TMPDIR without
    XDG_RUNTIME_DIR: the private runtime dir is then ``<it>/memvault-<uid>``, where another
    user can get at it first."""
    require_service(_root(), "root (to act as the other local user `nobody`)")
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="mv-shared-"))
    folder.chmod(0o1777)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _shared_env(tmp_path: Path, shared: Path) -> dict[str, str]:
    env = _env(tmp_path) | {"TMPDIR": str(shared)}
    env.pop("XDG_RUNTIME_DIR", None)
    return env


@pytest.fixture
def seeded_duck(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    with memvault.open(url) as store:
        fill(store, tmp_path)
    return url


@contextmanager
def _serving(
    url: str, env: dict[str, str], *args: str, log: Path
) -> Iterator[tuple[subprocess.Popen[bytes], discovery.ServerInfo]]:
    """`memvault serve` (stdio unless ``args`` say otherwise, its input kept open) until
    its discovery file names it; stopped (SIGTERM, or SIGKILL if it is stopped) after."""
    with log.open("w") as out:
        process = subprocess.Popen(
            [MEMVAULT, "serve", "--store", url, *args],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=out,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while (info := discovery.read(url)) is None or info.pid != process.pid:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        yield process, info
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _as_nobody(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        user=NOBODY, group=NOBODY, extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _tcp_listening(pid: int) -> list[str]:
    """The TCP addresses a process listens on (from its socket descriptors)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == LISTEN and fields[9] in inodes:
                found.append(fields[1])
    return found


def test_in_stdio_mode_no_port_is_open_and_another_user_cannot_reach_the_server(
    seeded_duck: str, shared_tmp: Path, tmp_path: Path
) -> None:
    env = _shared_env(tmp_path, shared_tmp)
    before = _counts(seeded_duck)
    with _serving(seeded_duck, env, log=tmp_path / "serve.log") as (process, info):
        assert _tcp_listening(process.pid) == []
        where = discovery.paths(seeded_duck)
        assert where is not None
        probe = (
            "import json, os, socket, sys\n"
            "out = {}\n"
            "for name, act in [('read file', lambda: open(sys.argv[1]).read()),\n"
            "                  ('list dir', lambda: os.listdir(os.path.dirname(sys.argv[1]))),\n"
            "                  ('connect', lambda: socket.socket(socket.AF_UNIX).connect(sys.argv[2]))]:\n"
            "    try:\n"
            "        act(); out[name] = 'allowed'\n"
            "    except OSError as exc:\n"
            "        out[name] = type(exc).__name__\n"
            "print(json.dumps(out))\n"
        )
        seen = _as_nobody([SYSTEM_PYTHON, "-c", probe, str(where.info), info.socket])
        assert seen.returncode == 0, seen.stderr
        assert json.loads(seen.stdout) == dict.fromkeys(
            ("read file", "list dir", "connect"), "PermissionError"
        )
        shell = subprocess.run(
            [MEMVAULT, "recall", "status of Quill", "--json", "--store", seeded_duck],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert shell.returncode == 0, shell.stderr
        assert json.loads(shell.stdout)["served_by"] == "server"
        process.stdin.close()  # type: ignore[union-attr]  # the client goes: the server ends
        process.wait(timeout=30)
    assert _counts(seeded_duck)["recall_log"] == before["recall_log"] + 1
    assert discovery.read(seeded_duck) is None


def test_over_http_without_a_token_another_user_gets_no_json_api(
    seeded_duck: str, tmp_path: Path
) -> None:
    """The issue's read and write as `nobody`: curl to /memvault/v1/recall and /remember."""
    require_service(_root(), "root (to act as the other local user `nobody`)")
    port = _free_port()
    before = _counts(seeded_duck)
    args = ("--transport", "http", "--port", str(port))
    with _serving(seeded_duck, _env(tmp_path), *args, log=tmp_path / "serve.log"):
        assert "has no token: any user of this machine" in (tmp_path / "serve.log").read_text()
        for tool, body in (("recall", '{"query": "Quill"}'), ("remember", '{"text": "pwned"}')):
            reply = _as_nobody([
                "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                "-H", "Content-Type: application/json", "-d", body,
                f"http://127.0.0.1:{port}/memvault/v1/{tool}",
            ])  # fmt: skip
            assert reply.stdout == "404", reply
    assert _counts(seeded_duck) == before


@pytest.mark.parametrize("planted", ["a dir of theirs", "a symlink to a dir of theirs"])
def test_a_private_dir_another_user_made_first_is_refused_and_nothing_is_overwritten(
    store_url: str, shared_tmp: Path, tmp_path: Path, planted: str
) -> None:
    """`nobody` makes `<tmp>/memvault-0` before root's server, with the discovery file's
    name in it pointing at a file of root's: the server refuses to start and the file is
    untouched; the shell works in-process."""
    with memvault.open(store_url) as store:
        fill(store, tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("root's precious file")
    key = discovery.store_key(store_url)
    runtime = shared_tmp / f"memvault-{os.getuid()}"
    theirs = shared_tmp / "theirs" if planted.startswith("a symlink") else runtime
    setup = (
        "import os, sys\n"
        "theirs, runtime, key, victim = sys.argv[1:5]\n"
        "os.mkdir(theirs, 0o777); os.chmod(theirs, 0o777)\n"
        "for ext in ('json', 'lock', 'sock'):\n"
        "    os.symlink(victim, os.path.join(theirs, f'serve-{key}.{ext}'))\n"
        "if theirs != runtime:\n"
        "    os.symlink(theirs, runtime)\n"
    )
    made = _as_nobody(
        [SYSTEM_PYTHON, "-c", setup, str(theirs), str(runtime), str(key), str(victim)]
    )
    assert made.returncode == 0, made.stderr
    env = _shared_env(tmp_path, shared_tmp) | {"MEMVAULT_EMBEDDER": "hashing"}
    refused = subprocess.run(
        [MEMVAULT, "serve", "--store", store_url],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 1
    message = " ".join(refused.stderr.split())
    assert str(runtime) in message
    assert ("is a symlink" if theirs != runtime else f"belongs to uid {NOBODY}") in message
    assert victim.read_text() == "root's precious file"
    shell = subprocess.run(
        [MEMVAULT, "recall", "status of Quill", "--json", "--store", store_url],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shell.returncode == 0, shell.stderr
    assert json.loads(shell.stdout)["served_by"] == "process"
    assert victim.read_text() == "root's precious file"


def test_a_killed_server_whose_pid_another_process_took_is_not_trusted(
    seeded_duck: str, tmp_path: Path
) -> None:
    """SIGKILL leaves the discovery file behind; a process of another user then has the
    PID. Nothing is sent to it, no command advises killing it, the file is cleaned up."""
    require_service(_root(), "root (to run the other process as `nobody`)")
    with _serving(seeded_duck, _env(tmp_path), log=tmp_path / "serve.log") as (process, info):
        process.kill()
        process.wait()
    where = discovery.paths(seeded_duck)
    assert where is not None and where.info.exists()  # left behind, as by a crash
    other = subprocess.Popen(["sleep", "60"], user=NOBODY, group=NOBODY, extra_groups=[])
    try:
        where.info.write_text(json.dumps({**info.__dict__, "pid": other.pid}))
        where.info.chmod(0o600)
        shell = _cli(seeded_duck, tmp_path, "recall", "status of Quill", "--json")
        assert shell.returncode == 0, shell.stderr
        assert json.loads(shell.stdout)["served_by"] == "process"
        status = _cli(seeded_duck, tmp_path, "status")
        assert status.returncode == 0, status.stderr
        assert str(other.pid) not in status.stdout + status.stderr
        assert not where.info.exists()
    finally:
        other.kill()
        other.wait()


def _vm_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _raw_request(sock: socket.socket, head: str, body: Iterator[bytes] | None = None) -> bytes:
    """Send a request (the body as it comes, stopping if the server has answered and
    closed), return the whole answer."""
    sock.sendall(head.encode())
    try:
        for chunk in body or ():
            sock.sendall(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server refused and closed: it read no more of it
    answer = b""
    try:
        while data := sock.recv(65536):
            answer += data
    except ConnectionResetError:
        pass  # after the answer: the server closed with the rest of the body unread
    return answer


def test_every_endpoint_refuses_a_body_over_the_limit_without_reading_it(
    seeded_duck: str, tmp_path: Path
) -> None:
    port = _free_port()
    before = _counts(seeded_duck)
    env = _env(tmp_path) | {"MEMVAULT_SERVE_TOKEN": TOKEN}
    args = ("--transport", "http", "--port", str(port))
    with _serving(seeded_duck, env, *args, log=tmp_path / "serve.log") as (process, info):
        rss = _vm_rss_kb(process.pid)
        auth = f"Authorization: Bearer {info.token}\r\n"
        # Declared too large: refused before a byte of it is read.
        with client.connect_unix(info.socket, 30) as sock:
            head = f"POST /memvault/v1/remember HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: {2 << 20}\r\n\r\n"  # fmt: skip
            assert _raw_request(sock, head).startswith(b"HTTP/1.1 413")
        # Sent without a length, 64 MiB of it: cut off at the limit.
        with client.connect_unix(info.socket, 30) as sock:
            head = f"POST /memvault/v1/remember HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"  # fmt: skip
            chunk = b"%x\r\n%s\r\n" % (1 << 16, b'"' * (1 << 16))
            answer = _raw_request(sock, head, iter([chunk] * 1024))
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        # The MCP endpoint on TCP too.
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {5 << 20}\r\n\r\n"  # fmt: skip
            assert _raw_request(sock, head).startswith(b"HTTP/1.1 413")
        grown_mb = (_vm_rss_kb(process.pid) - rss) / 1024
        # A body just under the limit is taken (and refused by the tool as too long, or kept).
        fits = client.call(info, "recall", {"query": "status of Quill " * 10})
        assert fits["results"]
    assert grown_mb < 32, f"the server grew {grown_mb:.0f} MB on refused bodies"
    assert _counts(seeded_duck)["blocks"] == before["blocks"]


def test_a_stopped_server_fails_the_shell_within_the_timeout_naming_it_and_sigterm_ends_it(
    seeded_duck: str, tmp_path: Path
) -> None:
    with _serving(seeded_duck, _env(tmp_path), log=tmp_path / "serve.log") as (process, _):
        os.kill(process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            env = _env(tmp_path) | {"MEMVAULT_SERVE_TIMEOUT": "3"}
            shell = subprocess.run(
                [MEMVAULT, "recall", "status of Quill", "--store", seeded_duck],
                env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            took = time.monotonic() - started
        finally:
            os.kill(process.pid, signal.SIGCONT)
        assert shell.returncode == 1
        message = " ".join(shell.stderr.split())
        assert f"PID {process.pid}" in message and "memvault serve --store" in message
        assert "stopped" in message
        assert took < 3 + 10, took  # the timeout and a Python start, never minutes
        again = _cli(seeded_duck, tmp_path, "recall", "status of Quill", "--json")
        assert again.returncode == 0 and json.loads(again.stdout)["served_by"] == "server"
        # SIGTERM ends a stdio server whose client says nothing (its input open, empty):
        # it does not wait for input that never comes, and cleans up on its way out.
        process.terminate()
        assert process.wait(timeout=20) == 0
        where = discovery.paths(seeded_duck)
        assert where is not None and not where.info.exists() and not where.socket.exists()


def test_serve_refuses_a_store_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "memvualt.duckdb"
    schema = f"mvabsent_{secrets.token_hex(4)}"
    for url in (f"duckdb://{missing}", f"{PG_URL}?schema={schema}"):
        refused = subprocess.run(
            [MEMVAULT, "serve", "--store", url],
            env=_env(tmp_path), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert refused.returncode == 1, refused.stderr
        assert "memvault init --store" in " ".join(refused.stderr.split())
    assert not missing.exists() and not missing.parent.exists()
    import psycopg

    with psycopg.connect(PG_URL) as con:
        found = con.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]).fetchall()
    assert found == []


# -- another network -------------------------------------------------------------------------------


@pytest.fixture
def netns() -> Iterator[tuple[str, str]]:
    """A network namespace joined to this one by a veth pair: (its name, this side's address)."""
    require_service(_root() and shutil.which("ip") is not None, "root and iproute2 (netns)")
    tag = secrets.token_hex(3)
    name, here, there = f"mvns{tag}", f"mv{tag}a", f"mv{tag}b"
    subnet = 16 + secrets.randbelow(200)
    mine, theirs = f"10.254.{subnet}.1", f"10.254.{subnet}.2"
    steps = [
        ["ip", "netns", "add", name],
        ["ip", "link", "add", here, "type", "veth", "peer", "name", there],
        ["ip", "link", "set", there, "netns", name],
        ["ip", "addr", "add", f"{mine}/30", "dev", here],
        ["ip", "link", "set", here, "up"],
        ["ip", "netns", "exec", name, "ip", "addr", "add", f"{theirs}/30", "dev", there],
        ["ip", "netns", "exec", name, "ip", "link", "set", there, "up"],
    ]
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True, timeout=30)
        yield name, mine
    finally:
        subprocess.run(["ip", "link", "del", here], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


def _from_netns(name: str, url: str, headers: dict[str, str], body: str) -> str:
    command = ["ip", "netns", "exec", name, "curl", "-s", "-m", "20", "-o", "/dev/null"]
    command += ["-w", "%{http_code}", "-X", "POST", "-d", body]
    for key, value in headers.items():
        command += ["-H", f"{key}: {value}"]
    return subprocess.run([*command, url], capture_output=True, text=True, timeout=60).stdout


def test_from_another_network_a_forged_host_header_gets_nothing_without_the_token(
    seeded_duck: str, tmp_path: Path, netns: tuple[str, str]
) -> None:
    name, address = netns
    port = _free_port()
    args = ("--transport", "http", "--host", "0.0.0.0", "--port", str(port))
    open_door = subprocess.run(
        [MEMVAULT, "serve", "--store", seeded_duck, *args],
        env=_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert open_door.returncode == 1
    assert "refused to listen on 0.0.0.0" in " ".join(open_door.stderr.split())
    before = _counts(seeded_duck)
    env = _env(tmp_path) | {"MEMVAULT_SERVE_TOKEN": TOKEN}
    with _serving(seeded_duck, env, *args, log=tmp_path / "serve.log"):
        forged = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"}
        init = '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}'
        base = f"http://{address}:{port}"
        assert _from_netns(name, f"{base}/memvault/v1/recall", forged, '{"query": "Quill"}') == "401"  # fmt: skip
        assert _from_netns(name, f"{base}/memvault/v1/remember", forged, '{"text": "pwned"}') == "401"  # fmt: skip
        assert _from_netns(name, f"{base}/mcp", forged | {"Accept": "application/json, text/event-stream"}, init) == "401"  # fmt: skip
        with_token = forged | {"Authorization": f"Bearer {TOKEN}"}
        assert _from_netns(name, f"{base}/memvault/v1/recall", with_token, '{"query": "Quill"}') == "200"  # fmt: skip
    after = _counts(seeded_duck)
    assert after["recall_log"] == before["recall_log"] + 1  # the one with the token
    assert after["blocks"] == before["blocks"]


# -- a second session ------------------------------------------------------------------------------


def test_a_second_session_takes_the_store_over_when_the_first_ends(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agent sessions: the second passes its calls to the first; the first is killed;
    the second serves the store itself from its next call on (and the shell finds it)."""
    from mcp import StdioServerParameters

    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")
    with memvault.open(store_url) as store:
        fill(store, tmp_path)
    before = _counts(store_url)
    env = _env(tmp_path)
    seen: dict[str, Any] = {}
    with _serving(store_url, env, log=tmp_path / "first.log") as (first, _):
        params = StdioServerParameters(command=MEMVAULT, args=["serve", "--store", store_url], env=env)  # fmt: skip

        async def second_session(session: Any) -> None:
            found = await session.call_tool("recall", {"query": "status of Quill"})
            seen["before"] = (found.is_error, discovery.read(store_url))
            first.kill()  # the first session's server dies without a word
            first.wait()
            remembered = await session.call_tool(
                "remember", {"text": "The Quill retro moved to Thursday.", "speaker": "user"}
            )
            seen["remember"] = remembered
            seen["after"] = await session.call_tool("recall", {"query": "Quill retro Thursday"})
            seen["holder"] = discovery.read(store_url)
            shell = _cli(store_url, tmp_path, "recall", "Quill retro", "--json")
            seen["shell"] = json.loads(shell.stdout) if shell.returncode == 0 else shell.stderr

        _mcp(params, second_session)
    is_error, holder = seen["before"]
    assert not is_error and holder is not None and holder.pid == first.pid
    assert not seen["remember"].is_error, seen["remember"].content
    block_id = seen["remember"].structured_content["block_id"]
    assert seen["after"].structured_content["results"][0]["block_id"] == block_id
    assert seen["holder"] is not None and seen["holder"].pid not in (first.pid, os.getpid())
    assert isinstance(seen["shell"], dict) and seen["shell"]["served_by"] == "server"
    deadline = time.monotonic() + 30
    while discovery.read(store_url) is not None:  # the second session gives it up at its end
        assert time.monotonic() < deadline
        time.sleep(0.1)
    after = _counts(store_url)
    assert after["blocks"] == before["blocks"] + 1
    # The recall the first server answered just before it was killed may not have been
    # logged yet (a crash loses at most that); the second session's and the shell's are.
    assert after["recall_log"] - before["recall_log"] in (2, 3)
