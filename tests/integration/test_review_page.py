"""The review page in a real browser: Debian's chromium, driven by Playwright.

Two changes wait for a human; pressing "correct" on one applies it (audited,
undoable), pressing "wrong" on the other leaves the store as it was; both
decisions are recorded and show in the calibration table.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import memvault
from memvault.judge import ScriptedJudge
from memvault.review import ReviewPolicy, list_items
from memvault.temporal import apply_conflict_plan, plan_conflicts
from tests.helpers import require_service, table_dump
from tests.store.temporal_history import NOW, History

pytestmark = pytest.mark.integration
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _two_waiting_changes(url: str, tmp_path: Path) -> None:
    h = History()
    for org, a, b in (("globex", "paris", "berlin"), ("initech", "oslo", "rome")):
        h.entity(org, org.capitalize(), "organization")
        h.entity(a, a.capitalize(), "place")
        h.entity(b, b.capitalize(), "place")
        h.fact(f"{org}1", org, "located_in", a.capitalize(), object_id=a, valid="2020-01-01",
               created="2024-05-01")  # fmt: skip
        h.fact(f"{org}2", org, "located_in", b.capitalize(), object_id=b, valid="2024-06-01",
               created="2024-06-02")  # fmt: skip

    def supersede(request):  # type: ignore[no-untyped-def]
        newer = "a" if request.a.triple_id.endswith("2") else "b"
        return {"verdict": "SUPERSEDE", "confidence": 0.95, "newer": newer, "reason": "moved"}

    agree = {"agree": True, "confidence": 0.9, "reason": "later start"}
    judge = ScriptedJudge({"resolve_conflict": supersede, "confirm_change": lambda _: agree})
    with memvault.open(url) as store:
        h.ingest(store, tmp_path)
        policy = ReviewPolicy(impact_thresholds={"conflict": 0.0})
        plan = plan_conflicts(store, judge, now=NOW, policy=policy)
        apply_conflict_plan(store, plan, "dream-page-1")
        assert len(list_items(store)) == 2


@pytest.fixture
def page_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    require_service(Path(CHROMIUM).exists(), "Debian's chromium (scripts/setup.sh --test)")
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    _two_waiting_changes(url, tmp_path)
    port = _free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("memvault")),
            "review",
            "--serve",
            "--port",
            str(port),
            "--store",
            url,
        ],
        env=os.environ | {"MEMVAULT_LOCK_TIMEOUT": "30"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base, timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    err = server.stderr.read().decode() if server.stderr else ""
                    raise AssertionError(err) from None
                time.sleep(0.5)
        yield base, url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_pressing_correct_and_wrong_in_a_browser(
    page_server: tuple[str, str], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    base, url = page_server
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        page = browser.new_page()
        page.goto(base)
        assert page.locator("#count").inner_text() == "2 item(s) waiting"
        first = page.locator("#item-1")
        chosen = first.get_attribute("data-id")
        assert "Paris" in first.inner_text() or "Oslo" in first.inner_text()
        assert "second judgment" in first.inner_text() and "Why it waits" in first.inner_text()
        first.get_by_role("button", name="correct").click()
        page.wait_for_selector("#done")
        assert page.locator("#count").inner_text() == "1 item(s) waiting"
        other = page.locator("#item-1").get_attribute("data-id")
        page.locator("#item-1").get_by_role("button", name="wrong").click()
        page.wait_for_selector("#done")
        assert page.locator("#count").inner_text() == "0 item(s) waiting"
        calibration = page.locator("#calibration").inner_text()
        assert "conflict:supersede" in calibration
        page.screenshot(path=str(tmp_path / "review.png"))
        browser.close()
    with memvault.open(url) as store:
        decided = {r["id"]: r for r in table_dump(store, "review_queue")}
        assert (decided[chosen]["status"], decided[chosen]["decision"]) == ("approved", "correct")
        assert (decided[other]["status"], decided[other]["decision"]) == ("rejected", "wrong")
        retired = store.fetch("SELECT id FROM triples WHERE status = 'superseded'")
        assert len(retired) == 1, "only the approved change was applied"
        audit = store.fetch(
            "SELECT r.kind, a.action FROM audit_log a JOIN runs r ON r.id = a.run_id "
            "WHERE r.kind = 'review' ORDER BY a.id"
        )
        assert ("review", "supersede") in audit and ("review", "review-wrong") in audit
