"""`memvault ui` serves Dagster's UI on memvault's asset graph (a real webserver, queried over HTTP)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pipelines.definitions import defs

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _asset_keys(port: int) -> list[str]:
    query = json.dumps({"query": "{ assetNodes { assetKey { path } } }"}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=query, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        nodes = json.load(response)["data"]["assetNodes"]
    return sorted("/".join(n["assetKey"]["path"]) for n in nodes)


def test_ui_serves_the_asset_graph(tmp_path: Path) -> None:
    port = _free_port()
    env = os.environ | {"MEMVAULT_STORE": f"duckdb://{tmp_path / 's.duckdb'}"}
    env.pop("DAGSTER_HOME", None)
    cli = Path(sys.executable).with_name("memvault")
    process = subprocess.Popen(
        [str(cli), "ui", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                keys = _asset_keys(port)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        process.stderr.read().decode() if process.stderr else "no output"
                    ) from None
                time.sleep(1)
        graph = defs.resolve_asset_graph()
        assert keys == sorted(k.to_user_string() for k in graph.get_all_asset_keys())
        assert {"collected_sessions", "dream_prune", "garden_report"} <= set(keys)
        assert (tmp_path / ".dagster" / "dagster.yaml").exists()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
