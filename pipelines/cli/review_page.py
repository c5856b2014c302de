"""The review page: ``memvault review --serve``, a small web app on the review queue.

Each waiting item shows the memories it is about, read from the store (both
statements or both texts side by side with their differences marked, the fact
with its dates and the text it came from), the verdicts and the second
judgment, the impact and why it waits, and two buttons: correct (apply the
proposed change) and wrong (leave the store as it is). A
click is the same decision as ``memvault review approve|reject``: applied
through the audited write path, undoable, and counted in the calibration
shown at the bottom of the page.

The page trusts nothing a browser sends, and no other user of this machine: anyone
on it can connect to a loopback port. So the page lives under a key this server
made at start (``/k/KEY/``), printed once to the owner's terminal and kept in a
0600 file of the owner's private runtime directory (:mod:`memvault.private`: a
directory that is not the owner's, not 0700 or a symlink is refused); a request
without the key is refused before the store is opened. The key is in the path,
not in a cookie: a browser sends a loopback cookie to every port, including
another user's server. The page also listens on 127.0.0.1 by default, answers
only requests addressed to the host and port it was started on (a rebinding
host name such as ``evil.example`` is refused), refuses requests whose
``Origin`` is another site, and applies a decision only when the form carries
the random token of this server. Responses forbid framing (no clickjacking),
caching, and referrers to other sites. A refused request writes nothing.
"""

from __future__ import annotations

import secrets
import urllib.parse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated

import jinja2
from fastapi import FastAPI, Form, HTTPException
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.requests import Request

import memvault
from memvault.errors import MemvaultError
from memvault.http_guard import BodyLimit, Guard
from memvault.private import remove, runtime_dir, write_file
from memvault.review import ReviewPolicy, calibrate, decide, list_items
from memvault.review.evidence import evidence, when

#: Every value put into the page is HTML-escaped: memory texts and reasons come from
#: conversations and LLM replies, so they may hold markup.
TEMPLATES = Jinja2Templates(
    env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).with_name("templates"))),
        autoescape=True,
    )
)
#: Headers on every response: no framing by other sites, nothing cached, nothing loaded.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # (no-referrer would make a browser's form say Origin: null)
    "Cache-Control": "no-store",
}


def create_app(
    store_url: str,
    policy: ReviewPolicy | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8766,
    token: str | None = None,
    key: str | None = None,
) -> FastAPI:
    """The review app on one store, answering as ``host:port`` under ``/k/KEY/`` (each
    request opens the store briefly: DuckDB has one writer process, and the dream may need
    the file between two clicks). ``token`` and ``key`` are made at random unless given;
    the key is ``app.state.key``."""
    policy = policy or ReviewPolicy()
    guard = Guard.bound_to(host, port, token)
    key = key or secrets.token_urlsafe(32)
    app = FastAPI(title="memvault review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.key = key
    app.add_middleware(BodyLimit, limit=64 * 1024)  # a decision is a few bytes of form

    @app.middleware("http")
    async def refuse_strangers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if not guard.host_ok(request.headers.get("host")):
            reply: Response = PlainTextResponse(
                "refused: this page answers only as " + guard.names(), status_code=403
            )
        elif not guard.origin_ok(request.headers.get("origin")):
            reply = PlainTextResponse("refused: a request from another site", status_code=403)
        elif not _key_ok(request.url.path, key):
            reply = PlainTextResponse(
                "refused: the review page is only at the address with its key that "
                "`memvault review --serve` printed when it started (also in its key file, "
                "readable by its owner only)",
                status_code=403,
            )
        else:
            reply = await call_next(request)
        reply.headers.update(SECURITY_HEADERS)
        return reply

    @app.get("/k/{_key}/", response_class=HTMLResponse)
    def page(request: Request, done: str | None = None) -> HTMLResponse:
        with memvault.open(store_url) as store:
            items = list_items(store)
            shown = {item.id: evidence(store, item) for item in items}
            calibration = calibrate(store, policy).rows()
        return TEMPLATES.TemplateResponse(
            request,
            "review.html",
            {
                "items": items,
                "calibration": calibration,
                "policy": policy,
                "done": done,
                "evidence": shown,
                "when": when,
                "token": guard.token,
            },
        )

    @app.post("/k/{_key}/items/{item_id}/{verdict}")
    def decision(
        item_id: str, verdict: str, token: Annotated[str | None, Form()] = None
    ) -> RedirectResponse:
        if not guard.token_ok(token):
            raise HTTPException(
                403, "refused: the form's token is missing or wrong; reload the page"
            )
        if verdict not in ("correct", "wrong"):
            raise HTTPException(404, f"no such decision {verdict!r}: correct or wrong")
        try:
            with memvault.open(store_url) as store:
                made = decide(store, item_id, verdict)  # type: ignore[arg-type]
        except MemvaultError as exc:
            raise HTTPException(409, str(exc)) from None
        done = urllib.parse.quote(f"{made.item_id}: {made.applied}")
        return RedirectResponse(f"/k/{key}/?done={done}", status_code=303)

    return app


def _key_ok(path: str, key: str) -> bool:
    """The request's path starts with ``/k/KEY/`` (compared in constant time)."""
    parts = path.split("/", 3)
    if len(parts) < 4 or parts[0] or parts[1] != "k":
        return False
    return secrets.compare_digest(parts[2].encode(), key.encode())


def key_file(port: int) -> Path:
    """Where the key of the page on ``port`` is kept: the owner's private runtime directory
    (refused when it is not the owner's, not 0700, or a symlink)."""
    return runtime_dir() / f"review-{port}.key"


def serve(store_url: str, host: str, port: int, say: Callable[[str], None] = print) -> None:
    """Serve the page on ``host:port`` under a key and a token made now (a restart makes new
    ones). The key is written to :func:`key_file` (0600) and its address given to ``say``
    once; the file is removed when the server stops."""
    import uvicorn

    app = create_app(store_url, host=host, port=port)
    path = key_file(port)
    write_file(path, f"{app.state.key}\n".encode())
    shown = f"[{host}]" if ":" in host else host
    say(
        f"review page: http://{shown}:{port}/k/{app.state.key}/  (the key is in {path}, readable by you only)"
    )
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="warning",
            proxy_headers=False,
            server_header=False,
        )
    finally:
        remove(path)
