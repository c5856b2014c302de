"""The review page: ``memvault review --serve``, a small web app on the review queue.

Each waiting item shows both statements with their dates and sources, the
verdicts and the second judgment, the impact and why it waits, and two buttons:
correct (apply the proposed change) and wrong (leave the store as it is). A
click is the same decision as ``memvault review approve|reject``: applied
through the audited write path, undoable, and counted in the calibration
shown at the bottom of the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from starlette.requests import Request

import memvault
from memvault.errors import MemvaultError
from memvault.review import ReviewPolicy, calibrate, decide, list_items

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).with_name("templates")))


def statements(proposal: dict[str, Any]) -> list[dict[str, Any]]:
    """The two statements of a conflict proposal (empty for other kinds)."""
    out = []
    for side in ("a", "b"):
        triple = proposal.get(f"triple_{side}")
        if triple:
            out.append({"side": side, "id": triple, **proposal.get("statements", {}).get(side, {})})
    return out


def create_app(store_url: str, policy: ReviewPolicy | None = None) -> FastAPI:
    """The review app on one store (each request opens the store briefly: DuckDB has one
    writer process, and the dream may need the file between two clicks)."""
    policy = policy or ReviewPolicy()
    app = FastAPI(title="memvault review", docs_url=None, redoc_url=None)

    @app.get("/", response_class=HTMLResponse)
    def page(request: Request, done: str | None = None) -> HTMLResponse:
        with memvault.open(store_url) as store:
            items = list_items(store)
            calibration = calibrate(store, policy).rows()
        return TEMPLATES.TemplateResponse(
            request,
            "review.html",
            {
                "items": items,
                "calibration": calibration,
                "policy": policy,
                "done": done,
                "statements": statements,
            },
        )

    @app.post("/items/{item_id}/{verdict}")
    def decision(item_id: str, verdict: str) -> RedirectResponse:
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
    import uvicorn

    uvicorn.run(create_app(store_url), host=host, port=port, log_level="warning")
