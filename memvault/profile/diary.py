"""The diary (P3): one page of "you today" per day, from that day's snapshot and nothing else.

The judge writes the page when an LLM is configured (task ``diary_page``); the
heuristic judge fills a clearly labelled template from the same numbers. A day
with nothing recorded gets a page saying so, and no judge is asked: nothing is
ever invented from nothing. Pages are keyed by day, so a re-run rewrites the
same row, and an LLM reply is cached in the store, so it costs no second call.

An LLM's page is checked against the day's numbers before it is stored
(:func:`memvault.grounded_text.check`: every name, number and content word it holds must
be in them, in any case, with no relation turned round and no instruction-like text): a
page that says more than the data — a person who was not there, a count that was not
recorded, an instruction hidden in a memory and obeyed — is refused, counted by reason,
and the template page is written instead, labelled with why (:func:`refused_label`), so
nobody reads it as a day without an LLM.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from memvault.errors import JudgeError
from memvault.grounded_text import check
from memvault.judge.base import Judge
from memvault.judge.tasks import JudgeTask
from memvault.normalize import utcnow
from memvault.profile.stated import divergences
from memvault.profile.write import Written, upsert_rows
from memvault.store import Store
from memvault.store.queries.profile import diary_sources, latest_diary_entry

TEMPLATE_LABEL = "[template page: no LLM configured; written from the day's numbers]"


#: The label of a template page written because the LLM gave no usable page.
FAILED_LABEL = "[template page: the LLM failed; written from the day's numbers]"


def refused_label(reason: str) -> str:
    """The label of a template page written because the LLM's page was refused for ``reason``
    (:data:`memvault.grounded_text.REASONS`; never the refused words themselves)."""
    return f"[template page: the LLM's page was refused ({reason}); written from the day's numbers]"


CONTENT = ["day", "text", "kind", "model", "source"]


class DiaryEntity(BaseModel):
    name: str
    entity_type: str
    mentions: int = 0


class DiaryRequest(BaseModel):
    """One day's numbers: all a diary page may say."""

    model_config = ConfigDict(extra="forbid")

    day: str
    weekday: str
    activity: dict[str, int]
    top_intents: list[str] = Field(description="What the owner asked about most, most first")
    thought_about_most: list[str] = Field(description="Entities by personalized PageRank")
    people: list[DiaryEntity]
    things: list[DiaryEntity]
    rose: list[str] = Field(description="Entities that entered the top list since yesterday")
    cooled: list[str] = Field(description="Entities that left the top list since yesterday")
    facts_learned: list[str]
    stated_not_attended: list[str] = Field(
        default_factory=list,
        description="Things the owner said matter (their attitudes) that got no attention in "
        "the last 30 days",
    )


class DiaryPage(BaseModel):
    """One diary page about one day."""

    title: str = Field(min_length=1, description="A short title for the day, under ten words")
    text: str = Field(
        min_length=1,
        description="The page: what the owner thought about most, the people and things "
        "mentioned, what rose and cooled since yesterday, what they said matters but did not "
        "attend to; second person, under 200 words, "
        "only what the data says",
    )


def _names(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def template_page(request: DiaryRequest, label: str = TEMPLATE_LABEL) -> DiaryPage:
    """The page without an LLM's words: the same numbers, in fixed sentences, labelled with
    why (no LLM configured, by default)."""
    a = request.activity
    lines = [
        label,
        f"{a.get('sessions', 0)} session(s), {a.get('memories', 0)} memories, "
        f"{a.get('recalls', 0)} recall(s) ({a.get('recalls_failed', 0)} failed).",
    ]
    if request.thought_about_most:
        lines.append(f"You thought most about {_names(request.thought_about_most[:5])}.")
    if request.top_intents:
        lines.append(f"What you asked about most: {_names(request.top_intents[:3])}.")
    if request.people:
        lines.append(f"People mentioned: {_names([p.name for p in request.people[:8]])}.")
    if request.things:
        lines.append(f"Things mentioned: {_names([t.name for t in request.things[:8]])}.")
    if request.rose:
        lines.append(f"New in your focus since yesterday: {_names(request.rose[:5])}.")
    if request.cooled:
        lines.append(f"Out of focus since yesterday: {_names(request.cooled[:5])}.")
    if request.facts_learned:
        lines.append(f"Learned: {'; '.join(request.facts_learned[:5])}.")
    if request.stated_not_attended:
        lines.append(f"Said but not attended to: {'; '.join(request.stated_not_attended[:3])}.")
    return DiaryPage(title=f"{request.weekday} {request.day}", text="\n".join(lines))


DIARY: JudgeTask[DiaryRequest, DiaryPage] = JudgeTask(
    "diary_page",
    request_model=DiaryRequest,
    reply_model=DiaryPage,
    description="Write one diary page about one day from that day's numbers.",
    heuristic=template_page,
)


def diary_request(
    snapshot: dict[str, Any], stated_not_attended: list[str] | None = None
) -> DiaryRequest:
    """The request for one stored ``profile_daily`` row (JSON columns as text), with the
    day's divergences between stated preferences and attention."""

    def load(name: str, default: str) -> Any:
        return json.loads(snapshot.get(name) or default)

    day = snapshot["day"]
    day = day if isinstance(day, dt.date) else dt.date.fromisoformat(str(day))
    mentioned = load("mentioned", "[]")
    delta = load("delta_vs_yesterday", "{}")
    return DiaryRequest(
        day=day.isoformat(),
        weekday=day.strftime("%A"),
        activity={k: int(v) for k, v in load("activity", "{}").items()},
        top_intents=[i["intent"] for i in load("top_intents", "[]")],
        thought_about_most=[e["name"] for e in load("top_entities", "[]")],
        people=[
            DiaryEntity(name=e["name"], entity_type=e["type"], mentions=e["mentions"])
            for e in mentioned
            if e["type"] == "person"
        ],
        things=[
            DiaryEntity(name=e["name"], entity_type=e["type"], mentions=e["mentions"])
            for e in mentioned
            if e["type"] != "person"
        ],
        rose=[e["name"] for e in delta.get("appeared", [])],
        cooled=[e["name"] for e in delta.get("disappeared", [])],
        facts_learned=[
            f"{f['subject']} {f['predicate']} {f['object']}" for f in load("facts_learned", "[]")
        ],
        stated_not_attended=stated_not_attended or [],
    )


def is_empty(request: DiaryRequest) -> bool:
    a = request.activity
    return not any(
        a.get(k, 0) for k in ("sessions", "memories", "mentions", "recalls", "facts_learned")
    )


@dataclass
class DiaryResult:
    pages: pl.DataFrame
    written: Written = field(default_factory=Written)
    kinds: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    #: LLM pages refused by the check against the day's numbers, by reason.
    refused: dict[str, int] = field(default_factory=dict)


def unsupported(page: DiaryPage, source: str) -> str | None:
    """Why an LLM's page says more than the day's numbers (``source``), or None: every name
    and number in it is in them, and it holds no instruction-like text."""
    return check(f"{page.title}\n{page.text}", [source]).problem


def write_diary(store: Store, snapshots: pl.DataFrame, judge: Judge, run_id: str) -> DiaryResult:
    """One page per snapshot row; the judge is asked only for days with something in them.

    A failed judgment falls back to the template page for that day (labelled), so a flaky
    endpoint never leaves a day without its page."""
    rows, kinds, failures = [], {"llm": 0, "template": 0, "empty": 0, "reused": 0}, []
    refused: dict[str, int] = {}
    model = None if judge.kind == "heuristic" else judge.kind
    wanted = "template" if judge.kind == "heuristic" else "llm"
    stored = diary_sources(store, [f"diary:{d}" for d in snapshots["day"].to_list()])
    days = [
        d if isinstance(d, dt.date) else dt.date.fromisoformat(str(d))
        for d in snapshots["day"].to_list()
    ]
    diverging = divergences(store, days)
    for day, snap in zip(days, snapshots.iter_rows(named=True), strict=True):
        request = diary_request(snap, [d.describe() for d in diverging[day]])
        source = json.dumps(request.model_dump(), sort_keys=True, ensure_ascii=False)
        before = stored.get(f"diary:{request.day}")
        if is_empty(request):
            kind, text = "empty", f"{request.weekday} {request.day}\nNothing was recorded this day."
        elif before is not None and before[0] == source and before[1] == wanted:
            # Same numbers, same kind of writer: the page stands (a re-run costs no LLM call).
            kind, text = wanted, str(before[2])
            kinds["reused"] += 1
        else:
            try:
                page = judge.ask(DIARY, request)
                kind = "template" if judge.kind == "heuristic" else "llm"
            except JudgeError as exc:
                failures.append(f"{request.day}: {exc}")
                page, kind = template_page(request, FAILED_LABEL), "template"
            if kind == "llm" and (why := unsupported(page, source)) is not None:
                failures.append(f"{request.day}: the page was refused ({why})")
                reason = why.split(":", 1)[0]
                refused[reason] = refused.get(reason, 0) + 1
                page, kind = template_page(request, refused_label(reason)), "template"
            text = f"{page.title}\n{page.text}"
        kinds[kind] += 1
        rows.append(
            {
                "id": f"diary:{request.day}",
                "day": dt.date.fromisoformat(request.day),
                "text": text,
                "kind": kind,
                "model": model if kind == "llm" else None,
                "source": source,
            }
        )
    pages = pl.DataFrame(rows, schema_overrides={"day": pl.Date, "model": pl.Utf8})
    result = DiaryResult(pages=pages, kinds=kinds, failures=failures, refused=refused)
    if pages.height:
        frame = pages.with_columns(run_id=pl.lit(run_id), created_at=pl.lit(utcnow()))
        result.written = upsert_rows(store, "diary", frame, CONTENT, run_id, "diary_page")
    return result


def latest_entry(store: Store, id_prefix: str) -> dict[str, Any] | None:
    """The newest diary entry whose id starts with ``id_prefix`` (the profile's pages are
    ``diary:<day>``, the gardener's journal entries ``garden-<run>``): id, text, created_at."""
    rows = latest_diary_entry(store, id_prefix)
    return rows.row(0, named=True) if rows.height else None
