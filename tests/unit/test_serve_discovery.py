"""How the shell finds the server of a store: the lock says whether one lives, the file
says who it is beyond its PID, and a file whose process is not that one is ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from memvault.serve import discovery


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    return f"duckdb://{tmp_path / 'store.duckdb'}"


def _rewrite(claim: discovery.Claim, info: discovery.ServerInfo) -> None:
    claim.paths.info.write_text(json.dumps(asdict(info)))


def test_a_claimed_store_is_found_and_a_second_claim_is_refused(url: str) -> None:
    claim = discovery.claim(url)
    assert claim is not None
    published = claim.publish(store=url)
    assert discovery.read(url) == published
    assert published.pid == os.getpid() and published.cmdline[0] == sys.executable
    assert discovery.held(url) and discovery.claim(url) is None
    claim.release()
    assert discovery.read(url) is None and not discovery.held(url)
    assert not claim.paths.info.exists()


def test_spellings_of_one_file_are_one_store(url: str, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path)
    other = f"duckdb://{tmp_path / 'link' / 'store.duckdb'}"
    assert discovery.store_key(url) == discovery.store_key(other)
    assert discovery.store_key("duckdb:///:memory:") is None
    masked = discovery.store_key("postgresql://me:pw@db/x")
    assert masked == discovery.store_key("postgresql://me:other@db/x")


def test_a_pid_now_held_by_another_process_is_not_taken_for_the_server(url: str) -> None:
    """The lock is held (by this test), but the file names a process that did not start
    when it says, or runs another command: an impostor on a reused PID, ignored."""
    claim = discovery.claim(url)
    assert claim is not None
    real = claim.publish(store=url)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        identity = discovery.process_identity(sleeper.pid)
        assert identity is not None
        # Its PID with the start time and command line of the server that had it.
        _rewrite(claim, replace(real, pid=sleeper.pid))
        assert discovery.read(url) is None
        # Its PID and start time, another command line.
        _rewrite(claim, replace(real, pid=sleeper.pid, started=identity[0]))
        assert discovery.read(url) is None
        # The file names this process but was started earlier: a PID reused after a reboot.
        _rewrite(claim, replace(real, started=real.started - 1))
        assert discovery.read(url) is None
        _rewrite(claim, real)
        assert discovery.read(url) == real
    finally:
        sleeper.kill()
        sleeper.wait()
        claim.release()


def test_a_killed_server_leaves_a_stale_file_that_is_ignored_and_removed(url: str) -> None:
    """A server killed with SIGKILL removes nothing; its lock goes with it, so what it left
    is ignored (even if its PID were taken again) and cleaned up by the next reader."""
    code = (
        "import os, sys; from memvault.serve import discovery; "
        "c = discovery.claim(sys.argv[1]); c.publish(store=sys.argv[1]); "
        "open(c.paths.socket, 'w').close(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, url], check=True, env=os.environ)
    where = discovery.paths(url)
    assert where is not None and where.info.exists() and where.socket.exists()
    assert not discovery.held(url)
    assert discovery.read(url) is None
    assert not where.info.exists() and not where.socket.exists()
    claim = discovery.claim(url)  # the store is free for the next server
    assert claim is not None
    claim.release()


def test_a_discovery_file_others_may_read_is_ignored(url: str) -> None:
    claim = discovery.claim(url)
    assert claim is not None
    claim.publish(store=url)
    claim.paths.info.chmod(0o644)
    assert discovery.read(url) is None
    claim.release()
