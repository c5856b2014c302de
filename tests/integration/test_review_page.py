"""The review page: in a real browser (Debian's chromium, driven by Playwright), and
against what a hostile web page or DNS rebinding would send it.

Two changes wait for a human; pressing "correct" on one applies it (audited,
undoable), pressing "wrong" on the other leaves the store as it was; both
decisions are recorded and show in the calibration table. A request from another
origin, for another host name, or without the page's per-server token is refused
and writes nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import memvault
from memvault.private import read_file
from memvault.review import list_items
from tests.helpers import require_service, table_dump
from tests.review_support import DOUBT_TEXT, SCRIPT, every_kind, two_waiting_changes

pytestmark = pytest.mark.integration
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _served(url: str) -> Iterator[str]:
    """``memvault review --serve`` on a free loopback port, as an owner starts it; yields the
    page's address with its key (read from the owner's key file, as the owner could)."""
    from pipelines.cli.review_page import key_file

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
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                key = read_file(key_file(port))
                base = f"{root}/k/{key.decode().strip()}" if key else root
                urllib.request.urlopen(base + "/", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    err = server.stderr.read().decode() if server.stderr else ""
                    raise AssertionError(err) from None
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def page_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    require_service(Path(CHROMIUM).exists(), "Debian's chromium (scripts/setup.sh --test)")
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    two_waiting_changes(url, tmp_path)
    with _served(url) as base:
        yield base, url


@contextmanager
def _pages_on_loopback(pages: dict[str, str]) -> Iterator[str]:
    """Static pages served on another loopback port: a local origin other than the page's
    (a public one is kept from framing loopback by the browser's own rules already)."""
    import http.server
    import threading

    class Pages(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _chromium(p: Any, *extra: str) -> Any:
    """Debian's chromium, headless, with nothing that calls home."""
    return p.chromium.launch(
        executable_path=CHROMIUM,
        headless=True,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            *extra,
        ],
    )


def test_another_site_in_a_browser_cannot_decide_frame_or_read_the_page(
    page_server: tuple[str, str],
) -> None:
    """What an attacker's page can make a real browser do: post a form to the review page
    (with a guessed token), frame it, and read it under a name rebound to 127.0.0.1."""
    from playwright.sync_api import sync_playwright

    base, url = page_server
    port = urllib.parse.urlsplit(base).port
    with memvault.open(url) as store:
        item = list_items(store)[0].id
    before = _store_state(url)
    target = f"{base}/items/{urllib.parse.quote(item)}/correct"
    attack = (
        f'<form id="f" method="post" action="{target}">'
        '<input type="hidden" name="token" value="guessed"></form>'
        '<script>document.getElementById("f").submit()</script>'
    )
    framing = f'<iframe id="victim" src="{base}/"></iframe>'
    with sync_playwright() as p:
        browser = _chromium(p, "--host-resolver-rules=MAP rebound.example 127.0.0.1")
        page = browser.new_page()
        pages = {"/attack": attack}
        page.route(
            "http://evil.example/**",
            lambda route: route.fulfill(
                body=pages[urllib.parse.urlsplit(route.request.url).path],
                content_type="text/html",
            ),
        )
        with page.expect_response(lambda r: r.url == target) as posted:
            page.goto("http://evil.example/attack")
        assert posted.value.status == 403
        assert posted.value.request.headers.get("origin") == "http://evil.example"
        with _pages_on_loopback({"/frame": framing}) as neighbour:  # another local origin
            page.goto(f"{neighbour}/frame")
            page.wait_for_timeout(1000)
        framed = [f for f in page.frames if f != page.main_frame]
        assert framed and "Review queue" not in framed[0].content(), "framing is refused"
        reply = page.goto(f"http://rebound.example:{port}/")
        assert reply is not None and reply.status == 403
        assert "Review queue" not in page.content()
        browser.close()
    assert _store_state(url) == before, "nothing written"


def test_pressing_correct_and_wrong_in_a_browser(
    page_server: tuple[str, str], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    base, url = page_server
    with sync_playwright() as p:
        browser = _chromium(p)
        page = browser.new_page()
        page.goto(base + "/")
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


# -- what a hostile page or DNS rebinding sends ----------------------------------------------


def _store_state(url: str) -> tuple[list[dict], list[dict], int]:
    """The queue, the facts and the size of the audit log: what a refused request must
    leave as it was."""
    with memvault.open(url) as store:
        audit = int(store.fetch("SELECT count(*) FROM audit_log")[0][0])
        return table_dump(store, "review_queue"), table_dump(store, "triples"), audit


def _send(base: str, path: str, *, method: str = "GET", data: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, str]:  # fmt: skip
    """One request as curl sends it (redirects not followed): status and body."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    request = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_served_page_refuses_other_origins_and_host_names(tmp_path: Path) -> None:
    """A page on another site posting to the review page, and a rebinding host name reading it,
    are refused by the real server; nothing is written."""
    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    two_waiting_changes(url, tmp_path)
    with memvault.open(url) as store:
        item = list_items(store)[0].id
    with _served(url) as base:
        root = base.split("/k/")[0]
        status, page = _send(base, "/")
        assert status == 200
        found = re.search(r'name="token" value="([^"]+)"', page)
        token = found.group(1) if found else ""
        before = _store_state(url)
        form = urllib.parse.urlencode({"token": token}).encode()
        path = f"/items/{urllib.parse.quote(item)}/correct"
        status, _ = _send(base, path, method="POST", data=form,
                          headers={"Origin": "http://evil.example"})  # fmt: skip
        assert status == 403, "a foreign origin is refused, even with the page's token"
        status, body = _send(base, "/", headers={"Host": "evil.example"})
        assert status in (400, 403, 421) and "Review queue" not in body
        status, _ = _send(base, path, method="POST", data=form, headers={"Host": "evil.example"})
        assert status in (400, 403, 421)
        status, _ = _send(base, path, method="POST", data=b"")
        assert status == 403, "no token: refused"
        # Another local user can reach the port, but not the key: no page, no token, no decision.
        for guess in ("/", "/k/guessed/", f"/k/{token}/"):
            status, body = _send(root, guess)
            assert status == 403 and token not in body and "Review queue" not in body
        status, _ = _send(root, path, method="POST", data=form, headers={"Origin": root})
        assert status == 403, "the form's token without the page's key: refused"
        assert _store_state(url) == before, "a refused request writes nothing"
        status, _ = _send(base, path, method="POST", data=form, headers={"Origin": root})
        assert status == 303, "the page's own form, with its token, is applied"
    with memvault.open(url) as store:
        assert store.get_row("review_queue", item)["status"] == "approved"  # type: ignore[index]


PORT = 8766
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "token-of-this-server"
KEY = "key-of-this-server"
#: Where the page lives: under its key.
PAGE = f"/k/{KEY}"


@pytest.fixture
def waiting(store_url: str, tmp_path: Path) -> str:
    """A store (DuckDB and PostgreSQL) with two changes waiting for a person."""
    two_waiting_changes(store_url, tmp_path)
    return store_url


def _client(url: str, base: str = BASE) -> Any:
    from fastapi.testclient import TestClient

    from pipelines.cli.review_page import create_app

    app = create_app(url, host="127.0.0.1", port=PORT, token=TOKEN, key=KEY)
    return TestClient(app, base_url=base, follow_redirects=False)


def _first_item(url: str) -> str:
    with memvault.open(url) as store:
        return list_items(store)[0].id


@pytest.mark.parametrize(
    ("headers", "form"),
    [
        ({"Origin": "http://evil.example"}, {"token": TOKEN}),
        ({"Origin": "null"}, {"token": TOKEN}),
        ({"Origin": f"http://127.0.0.1:{PORT + 1}"}, {"token": TOKEN}),
        ({"Origin": f"https://127.0.0.1:{PORT}"}, {"token": TOKEN}),
        ({"Host": "evil.example"}, {"token": TOKEN}),
        ({"Host": f"evil.example:{PORT}"}, {"token": TOKEN}),
        ({}, {}),
        ({}, {"token": ""}),
        ({}, {"token": "a-guessed-token"}),
        ({"Origin": BASE}, {"token": TOKEN[:-1]}),
    ],
    ids=[
        "foreign-origin",
        "null-origin",
        "other-port",
        "https",
        "foreign-host",
        "rebound-host",
        "no-token",
        "empty-token",
        "wrong-token",
        "cut-token",
    ],
)
def test_a_refused_decision_writes_nothing(
    waiting: str, headers: dict[str, str], form: dict[str, str]
) -> None:
    item = _first_item(waiting)
    before = _store_state(waiting)
    with _client(waiting) as client:
        reply = client.post(f"{PAGE}/items/{item}/correct", data=form, headers=headers)
    assert reply.status_code == 403
    assert _store_state(waiting) == before, "nothing written: queue, facts, audit log"


@pytest.mark.parametrize("host", ["evil.example", f"evil.example:{PORT}", "127.0.0.1:1"])
def test_the_page_is_not_shown_to_a_rebound_host_name(waiting: str, host: str) -> None:
    with _client(waiting) as client:
        reply = client.get(f"{PAGE}/", headers={"Host": host})
    assert reply.status_code == 403
    assert TOKEN not in reply.text and "Review queue" not in reply.text


@pytest.mark.parametrize("base", [BASE, f"http://localhost:{PORT}", f"http://[::1]:{PORT}"])
def test_the_page_with_its_token_decides_as_before(waiting: str, base: str) -> None:
    item = _first_item(waiting)
    with _client(waiting, base) as client:
        page = client.get(f"{PAGE}/")
        assert page.status_code == 200
        assert f'name="token" value="{TOKEN}"' in page.text
        assert page.headers["X-Frame-Options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
        reply = client.post(
            f"{PAGE}/items/{item}/correct", data={"token": TOKEN}, headers={"Origin": base}
        )
        assert reply.status_code == 303, reply.text
        shown = client.get(reply.headers["location"])
    assert "1 item(s) waiting" in shown.text
    with memvault.open(waiting) as store:
        assert store.get_row("review_queue", item)["status"] == "approved"  # type: ignore[index]


def test_every_server_makes_its_own_token(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from pipelines.cli.review_page import create_app

    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    two_waiting_changes(url, tmp_path)
    tokens, keys = set(), set()
    for _ in range(2):
        app = create_app(url)
        keys.add(app.state.key)
        with TestClient(app, base_url="http://127.0.0.1:8766") as client:
            page = client.get(f"/k/{app.state.key}/").text
            found = re.search(r'name="token" value="([^"]+)"', page)
            tokens.add(found.group(1) if found else "")
    assert len(tokens) == 2 and all(len(t) >= 32 for t in tokens)
    assert len(keys) == 2 and all(len(k) >= 32 for k in keys)


@pytest.mark.parametrize(
    "path", ["/", f"/k/{KEY[:-1]}/", f"/k/{KEY}x/", "/k//", f"/K/{KEY}/", f"/x/k/{KEY}/"]
)
def test_without_the_key_nothing_is_shown_or_decided(waiting: str, path: str) -> None:
    """Any local user can connect to a loopback port: without the page's key they see
    neither the queue nor the form's token, and cannot decide."""
    item = _first_item(waiting)
    before = _store_state(waiting)
    with _client(waiting) as client:
        page = client.get(path)
        assert page.status_code == 403
        assert TOKEN not in page.text and "Review queue" not in page.text
        reply = client.post(
            f"{path.rstrip('/')}/items/{item}/correct", data={"token": TOKEN},
            headers={"Origin": BASE},
        )  # fmt: skip
        assert reply.status_code == 403
    assert _store_state(waiting) == before


def test_the_key_is_kept_for_the_owner_only_and_a_planted_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stat

    from memvault.private import NotPrivate
    from pipelines.cli import review_page

    url = f"duckdb://{tmp_path / 'store.duckdb'}"
    memvault.open(url).close()
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    said: list[str] = []
    served: list[str] = []

    def run(app: Any, **_: Any) -> None:  # instead of uvicorn: look at the key file
        path = review_page.key_file(PORT)
        info = path.lstat()
        assert stat.S_IMODE(info.st_mode) == 0o600 and stat.S_ISREG(info.st_mode)
        assert stat.S_IMODE(path.parent.lstat().st_mode) == 0o700
        served.append(path.read_text().strip())
        assert served[0] == app.state.key

    monkeypatch.setattr("uvicorn.run", run)
    review_page.serve(url, "127.0.0.1", PORT, say=said.append)
    assert len(said) == 1 and f"http://127.0.0.1:{PORT}/k/{served[0]}/" in said[0]
    assert not review_page.key_file(PORT).exists(), "removed when the server stops"
    # Another user planted the directory (here: a symlink to one they can read): refused.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (runtime / "memvault").rmdir()
    (runtime / "memvault").symlink_to(elsewhere)
    with pytest.raises(NotPrivate, match="symlink"):
        review_page.serve(url, "127.0.0.1", PORT, say=said.append)
    assert len(said) == 1 and not list(elsewhere.iterdir()), "nothing written, nothing said"


# -- what the page shows ------------------------------------------------------------------


def _item_html(page: str, item_id: str) -> str:
    """The part of the page about one item."""
    return page.split(f'data-id="{item_id}"', 1)[1].split('<div class="item"', 1)[0]


def test_every_kind_shows_its_memories_escaped(store_url: str, tmp_path: Path) -> None:
    """A low-confidence memory shows its fact, dates and source text; a merge both texts with
    the differences marked; an archive proposal the entity and its facts; markup in a memory
    reaches the browser as text."""
    kinds = every_kind(store_url, tmp_path)
    with _client(store_url) as client:
        page = client.get(f"{PAGE}/").text
    memory = _item_html(page, kinds.memory)
    assert "Ada lives_in Lisbon" in memory
    for field, value in (("subject", "Ada"), ("predicate", "lives_in"), ("object", "Lisbon"),
                         ("valid from", "2025-03-01"), ("until", "—"),
                         ("recorded", "2025-01-10")):  # fmt: skip
        assert f"<th>{field}</th><td>{value}</td>" in memory
    assert DOUBT_TEXT in memory
    merge = _item_html(page, kinds.merge)
    assert "<del>black coffee </del>" in merge and "<ins>green tea </ins>" in merge
    assert "every morning before the standup" in merge
    assert 'data-role="merged away"' in merge and 'data-role="kept"' in merge
    archive = _item_html(page, kinds.archive)
    assert "Acme &lt;script&gt;alert(&#39;memvault&#39;)&lt;/script&gt;" in archive
    assert "based_in Leeds · invalidated · valid 2019-01-01 – 2021-01-01" in archive
    conflict = _item_html(page, "conflict:globex1|globex2")
    assert "Globex located_in <del>Paris</del>" in conflict
    assert "Globex located_in <ins>Berlin</ins>" in conflict
    assert SCRIPT not in page and "<script" not in page.lower(), "memory text is escaped"
    assert "&lt;/script&gt;</del>" in merge
