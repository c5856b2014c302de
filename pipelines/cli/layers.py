"""``memvault attitudes`` and ``memvault skills``: the owner's preferences and skills.

``attitudes`` lists the current preferences with their confidence decayed to now
and whether they still bind (``--all``: every version of every chain);
``attitudes set CATEGORY STATEMENT`` states one (a replacement of a current
preference waits in ``memvault review``). ``skills`` lists the skills with
their level ("heard of", "have done", "can teach"); ``skills use NAME`` records
a use.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from pipelines.cli.common import JsonOpt, StoreOpt, emit_json, handles_errors, opened, out

attitudes_app = typer.Typer(
    name="attitudes",
    help="The owner's preferences: how sure each still is, whether it still binds, and its "
    "versions.",
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)
skills_app = typer.Typer(
    name="skills",
    help="The owner's skills: heard of (L1), have done (L2), can teach (L3).",
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


# -- attitudes --------------------------------------------------------------------------------


@attitudes_app.callback(invoke_without_command=True)
def attitudes(
    ctx: typer.Context,
    all_versions: Annotated[
        bool, typer.Option("--all", help="Every version of every chain, superseded ones too")
    ] = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Without a command: the current preferences, their confidence now, and whether they bind."""
    if ctx.invoked_subcommand is None:
        handles_errors(_list_attitudes)(store, all_versions, as_json)


def _list_attitudes(store: str | None, all_versions: bool, as_json: bool) -> None:
    import json

    from memvault.layers.attitudes import REVIEW_KIND, DecaySettings, binding
    from memvault.normalize import utcnow
    from memvault.review import list_items

    settings, now = DecaySettings.from_env(), utcnow()
    with opened(store) as handle:
        frame = binding(handle, now, settings, all_versions=all_versions)
        waiting = list_items(handle, kinds=[REVIEW_KIND])
    rows = [
        {
            "id": r["id"],
            "category": r["category"],
            "topic": r["topic"],
            "statement": r["statement"],
            "stated_confidence": r["stated"],
            "confidence": r["decayed"],
            "binding": r["binding"],
            "days_since_evidence": round(r["days_since_evidence"], 1),
            "evidence": json.loads(r["evidence"] or "[]"),
            "weight": r["weight"],
            "created_at": r["created_at"],
            "superseded_at": r["superseded_at"],
            "previous_id": r["previous_id"],
        }
        for r in frame.iter_rows(named=True)
    ]
    pending = [
        {"review_id": i.id, "category": i.proposal.get("category"),
         "statement": i.proposal.get("statement"), "replaces": i.proposal.get("current")}
        for i in waiting
    ]  # fmt: skip
    if as_json:
        emit_json(
            {
                "now": now.isoformat(),
                "decay_per_day": settings.decay_per_day,
                "binding_threshold": settings.binding_threshold,
                "attitudes": [_plain(r) for r in rows],
                "waiting_for_review": pending,
            }
        )
        return
    if not rows:
        out.print("no preferences yet: `memvault attitudes set CATEGORY STATEMENT` states one")
    else:
        table = Table("category", "statement", "confidence", "binds", "days")
        if all_versions:
            table.add_column("version")
        for r in rows:
            topic = f"/{r['topic']}" if r["topic"] != r["category"] else ""
            cells = [
                escape(r["category"] + topic),
                escape(r["statement"]),
                f"{r['stated_confidence']:.2f}→{r['confidence']:.2f}",
                "yes" if r["binding"] else "[dim]no[/]",
                f"{r['days_since_evidence']:.0f}",
            ]
            if all_versions:
                cells.append("current" if r["superseded_at"] is None else f"old, w {r['weight']:g}")
            table.add_row(*cells)
        out.print(table)
        binds = sum(r["binding"] for r in rows)
        out.print(
            f"{binds} binding (confidence as stated → now, binding from "
            f"{settings.binding_threshold:g}; λ = {settings.decay_per_day:g} per day since the "
            "last evidence; `--json` shows ids and evidence)",
            highlight=False,
        )
    for p in pending:
        out.print(
            f"waiting for review: {escape(str(p['statement']))} replaces "
            f"{escape(str(p['replaces']))} (`memvault review approve {escape(str(p['review_id']))}`)",
            highlight=False,
        )


@attitudes_app.command("set")
def set_attitude(
    category: Annotated[str, typer.Argument(help="One of the ten categories (see the docs)")],
    statement: Annotated[str, typer.Argument(help="The preference, in the owner's words")],
    confidence: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="How sure the owner is, 0 to 1")
    ] = 0.7,
    session: Annotated[
        list[str] | None, typer.Option("--session", help="A session it was said in (repeatable)")
    ] = None,
    topic: Annotated[
        str | None, typer.Option(help="Narrower than the category (default: the category)")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """State a preference (the same again reinforces it; a new one replacing the current waits
    for review)."""
    handles_errors(_set)(category, statement, confidence, session or [], topic, store, as_json)


def _set(category: str, statement: str, confidence: float, sessions: list[str],
         topic: str | None, store: str | None, as_json: bool) -> None:  # fmt: skip
    from dataclasses import asdict

    from memvault.layers.attitudes import upsert

    with opened(store) as handle:
        result = upsert(handle, category, statement, confidence, sessions, topic=topic)
    if as_json:
        emit_json(asdict(result))
        return
    said = {
        "created": f"stored {result.attitude_id}",
        "reinforced": f"reinforced {result.attitude_id}",
        "replaced": f"stored {result.attitude_id}, replacing {result.replaces}",
        "queued": f"waits for review: `memvault review approve {result.review_id}` makes it "
        f"replace {result.replaces}",
        "already_queued": f"already waiting for review as {result.review_id}",
    }[result.status]
    tail = f" (run {result.run_id})" if result.run_id else ""
    out.print(escape(said + tail), highlight=False)


# -- skills -----------------------------------------------------------------------------------


@skills_app.callback(invoke_without_command=True)
def skills(ctx: typer.Context, store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Without a command: every skill with its level, experience and last use."""
    if ctx.invoked_subcommand is None:
        handles_errors(_list_skills)(store, as_json)


def _list_skills(store: str | None, as_json: bool) -> None:
    from memvault.layers.skills import skill_table

    with opened(store) as handle:
        frame = skill_table(handle)
    rows = frame.select(
        "id", "name", "level", "label", "xp", "uses", "last_used_at", "half_life_days",
        "updated_at",
    ).to_dicts()  # fmt: skip
    if as_json:
        emit_json({"skills": [_plain(r) for r in rows]})
        return
    if not rows:
        out.print("no skills yet: `memvault skills use NAME` records a use")
        return
    # A level is shown with its words ("L3 can teach"), never as a bare code.
    table = Table("skill", "level", "experience", "uses", "last used")
    for r in rows:
        table.add_row(
            escape(r["name"]),
            f"{r['level']} {r['label']}",
            f"{r['xp']:.2f}",
            str(r["uses"]),
            f"{r['last_used_at']:%Y-%m-%d}" if r["last_used_at"] else "—",
        )
    out.print(table)
    aged = max(r["updated_at"] for r in rows)
    out.print(
        f"experience as of {aged:%Y-%m-%d %H:%M} UTC, halving every "
        f"{rows[0]['half_life_days']:g} days unused (layers_job ages it daily; a use "
        "updates its skill at once)",
        highlight=False,
    )


@skills_app.command("use")
def use(
    name: Annotated[str, typer.Argument(help="The skill")],
    proficiency: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="How well it was done, 0 to 1")
    ] = 0.5,
    session: Annotated[str | None, typer.Option(help="The session it was used in")] = None,
    note: Annotated[str | None, typer.Option(help="What was done (the evidence)")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a use of a skill (now) and show its level."""
    handles_errors(_use)(name, proficiency, session, note, store, as_json)


def _use(name: str, proficiency: float, session: str | None, note: str | None,
         store: str | None, as_json: bool) -> None:  # fmt: skip
    from dataclasses import asdict

    from memvault.layers.skills import LEVEL_LABELS, record_use

    with opened(store) as handle:
        result = record_use(handle, name, proficiency, note, session_id=session)
    if as_json:
        emit_json(asdict(result) | {"label": LEVEL_LABELS[result.level]})
        return
    moved = (
        f" (was {result.previous_level} {LEVEL_LABELS[result.previous_level]})"
        if result.previous_level and result.previous_level != result.level
        else ""
    )
    out.print(
        escape(
            f"{name}: {result.level} {LEVEL_LABELS[result.level]}{moved}, experience "
            f"{result.xp:.2f} (run {result.run_id})"
        ),
        highlight=False,
    )
