"""The review page: ``memvault review --serve``, a small web app on the review queue.

Each waiting item shows the memories it is about, read from the store (both
statements or both texts side by side with their differences marked, the fact
with its dates and the text it came from), the verdicts and the second
judgment, the impact and why it waits, and two buttons: correct (apply the
proposed change) and wrong (leave the store as it is). A
click is the same decision as ``memvault review approve|reject``: applied
through the audited write path, undoable, and counted in the calibration
shown at the bottom of the page.

The page trusts nothing a browser sends. It listens on 127.0.0.1 by default,
answers only requests addressed to the host and port it was started on (a
rebinding host name such as ``evil.example`` is refused, so another site cannot
read it), refuses requests whose ``Origin`` is another site, and applies a
decision only when the form carries the random token this server made at start
(other sites never see it). Responses forbid framing (no clickjacking) and
caching. A refused request writes nothing.
"""

from __future__ import annotations

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
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def create_app(
    store_url: str,
    policy: ReviewPolicy | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8766,
    token: str | None = None,
) -> FastAPI:
    """The review app on one store, answering as ``host:port`` (each request opens the store
    briefly: DuckDB has one writer process, and the dream may need the file between two
    clicks). ``token`` is made at random unless given."""
    policy = policy or ReviewPolicy()
    guard = Guard.bound_to(host, port, token)
    app = FastAPI(title="memvault review", docs_url=None, redoc_url=None, openapi_url=None)
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
        else:
            reply = await call_next(request)
        reply.headers.update(SECURITY_HEADERS)
        return reply

    @app.get("/", response_class=HTMLResponse)
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

    @app.post("/items/{item_id}/{verdict}")
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
        return RedirectResponse(f"/?done={made.item_id}: {made.applied}", status_code=303)

    return app


def serve(store_url: str, host: str, port: int) -> None:
    """Serve the page on ``host:port`` with a token made now (a restart makes a new one)."""
    import uvicorn

    uvicorn.run(
        create_app(store_url, host=host, port=port),
        host=host,
        port=port,
        log_level="warning",
        proxy_headers=False,
        server_header=False,
    )
