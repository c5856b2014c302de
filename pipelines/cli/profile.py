"""``memvault profile | diary | gaps | backfill``: the daily profile and knowledge gaps.

``profile`` and ``diary`` read what the daily partitions wrote (a day that was
never materialized says how to get it); ``gaps`` lists the knowledge gaps;
``backfill`` materializes a range of days: in this process, one run of
``profile_job`` per batch of days on the instance the UI reads (so every day
shows in the assets' Partitions tab), or, with ``--submit``, as a backfill the
UI's daemon runs.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from memvault.errors import MemvaultError
from memvault.profile.gaps import list_gaps
from memvault.store.queries.profile import (
    daily_snapshot,
    diary_page,
    interest_windows,
    latest_diary_day,
    latest_profile_day,
)
from pipelines.cli.common import (
    JsonOpt,
    StoreOpt,
    app,
    chosen_owner,
    chosen_store,
    emit_json,
    err,
    handles_errors,
    note,
    opened,
    out,
)


def _day(value: str | None, what: str) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise MemvaultError(f"{what} {value!r} is not a date (YYYY-MM-DD)") from None


def _latest(day: dt.date | None) -> dt.date:
    if day is None:
        raise MemvaultError(
            "no day has a profile yet: run `memvault backfill --from DATE --to DATE` "
            "(or the profile_job from the UI)"
        )
    return day


def _names(items: list[dict[str, Any]], key: str = "name") -> str:
    return escape(", ".join(str(i[key]) for i in items)) or "-"


def _decode(row: dict[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    return {
        k: (json.loads(v) if k in columns and isinstance(v, str) else v) for k, v in row.items()
    }


@app.command()
@handles_errors
def profile(
    at: Annotated[str | None, typer.Option("--at", help="The day (default: the latest)")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The interest profile of a day: its snapshot and the 7/30/90-day windows."""
    with opened(store) as handle:
        day = _day(at, "--at") or _latest(latest_profile_day(handle))
        rows = daily_snapshot(handle, day)
        if rows.is_empty():
            raise MemvaultError(
                f"no daily snapshot for {day}: run `memvault backfill --from {day} --to {day}`"
            )
        windows = interest_windows(handle, day)
    snap = _decode(
        rows.row(0, named=True),
        (
            "top_intents",
            "top_entities",
            "delta_vs_yesterday",
            "activity",
            "mentioned",
            "facts_learned",
            "attention",
            "windows",
        ),
    )
    interest = [
        _decode(w, ("attention", "rising", "cooling")) for w in windows.iter_rows(named=True)
    ]
    if as_json:
        emit_json({"day": day.isoformat(), "snapshot": snap, "interest": interest})
        return
    a = snap["activity"]
    out.print(
        f"[bold]{day.isoformat()}[/] ({snap['timezone']}; as the store knew it at "
        f"{snap['known_at']} UTC)"
    )
    out.print(
        f"{a['sessions']} session(s), {a['memories']} memories, {a['recalls']} recall(s) "
        f"({a['recalls_failed']} failed), {a['facts_learned']} fact(s) learned"
    )
    out.print(f"top entities: {_names(snap['top_entities'])}")
    out.print(f"top intents:  {_names(snap['top_intents'], 'intent')}")
    delta = snap["delta_vs_yesterday"]
    moved = [
        f"{label} {_names(delta[key])}"
        for key, label in (("appeared", "new"), ("disappeared", "left"))
        if delta[key]
    ]
    out.print(f"since yesterday: {'; '.join(moved) or 'no change'}")
    table = Table(title="interest", title_justify="left")
    for column in ("window", "days", "attention", "rising", "cooling"):
        table.add_column(column)
    for w in interest:
        table.add_row(
            f"{w['window_days']}d",
            str(w["days_covered"]),
            _names(w["attention"][:5]),
            _names(w["rising"][:5]),
            _names(w["cooling"][:5]),
        )
    out.print(table)


@app.command()
@handles_errors
def diary(
    day: Annotated[str | None, typer.Argument(help="The day (default: the latest)")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The diary page of a day."""
    with opened(store) as handle:
        chosen = _day(day, "DATE") or _latest(latest_diary_day(handle))
        rows = diary_page(handle, chosen)
    if rows.is_empty():
        raise MemvaultError(
            f"no diary page for {chosen}: run `memvault backfill --from {chosen} --to {chosen}`"
        )
    page = rows.row(0, named=True)
    if as_json:
        emit_json(page)
        return
    out.print(escape(str(page["text"])), highlight=False)


@app.command()
@handles_errors
def gaps(
    store: StoreOpt = None,
    open_only: Annotated[bool, typer.Option("--open", help="Only the open gaps")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Knowledge gaps: recalls that failed twice or more, structural gaps; answered ones stay."""
    with opened(store) as handle:
        rows = list_gaps(handle, "open" if open_only else None)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        out.print("no knowledge gaps (run the gaps_job, or `memvault dream`, to look for them)")
        return
    table = Table(title="knowledge gaps", title_justify="left")
    for column in ("status", "kind", "gap", "fails", "why"):
        table.add_column(column)
    for r in rows:
        detail = r["detail"]
        table.add_row(
            escape(str(r["status"])),
            escape(str(r["kind"])),
            escape(str(detail.get("entity") or r["query_signature"])),
            str(r["fail_count"] or ""),
            escape(str(detail.get("reason", ""))),
        )
    out.print(table)


@app.command()
@handles_errors
def backfill(
    first: Annotated[str, typer.Option("--from", help="First day (YYYY-MM-DD)")],
    last: Annotated[str, typer.Option("--to", help="Last day (YYYY-MM-DD)")],
    submit: Annotated[
        bool, typer.Option("--submit", help="Submit to the UI's daemon instead of running here")
    ] = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Materialize the daily profile (snapshot, interest windows, diary) for a range of days."""
    start, end = _day(first, "--from"), _day(last, "--to")
    assert start is not None and end is not None
    if end < start:
        raise MemvaultError(f"--to {end} is before --from {start}")
    url = chosen_store(store)
    summary = backfill_range(url, start, end, submit=submit, say=note, owner=chosen_owner())
    if as_json:
        emit_json(summary)
        return
    if submit:
        out.print(
            f"backfill {summary['backfill_id']} submitted ({summary['days']} days); the daemon "
            "of `memvault ui` runs it: see Overview → Backfills"
        )
        return
    out.print(
        f"materialized {summary['days']} day(s) in {len(summary['runs'])} run(s) "
        f"({summary['seconds']} s); see them in the UI: Assets → daily_snapshot → Partitions"
    )
    if not summary["success"]:
        for line in summary["failures"]:
            err.print(f"[red]failed:[/] {escape(line)}", highlight=False)
        raise typer.Exit(1)


def backfill_range(
    url: str,
    first: dt.date,
    last: dt.date,
    *,
    submit: bool = False,
    say: Any = None,
    owner: str | None = None,
) -> dict[str, Any]:
    """Run (or submit) the profile's partitions from ``first`` to ``last``; a summary. With
    several owners, ``owner``'s days, a run a day (a run covers one owner × day partition)."""
    import time

    import memvault
    from pipelines.runner import (
        failures,
        materializations,
        owner_tags,
        partition_keys,
        partition_range_tags,
        persistent_instance,
        profile_batches,
        run_job,
        submit_backfill,
    )

    memvault.open(url).close()  # a bad store URL fails here, with a clear message
    instance = persistent_instance()
    keys = partition_keys(first, last)
    if not keys:
        raise MemvaultError(
            f"no daily partition between {first} and {last} (partitions start at "
            "MEMVAULT_PROFILE_START and end yesterday)"
        )
    if submit:
        backfill_id = submit_backfill(instance, first, last, url, owner)
        return {"backfill_id": backfill_id, "days": len(keys)}
    started = time.monotonic()
    runs: list[str] = []
    failed: list[str] = []
    assets: dict[str, Any] = {}
    owned = bool(owner_tags(owner))
    batches = [(k, k) for k in keys] if owned else profile_batches(first, last)
    for batch_first, batch_last in batches:
        tags = (
            owner_tags(owner, batch_first)
            if owned
            else partition_range_tags(batch_first, batch_last)
        )
        with err.status(f"profile_job {batch_first} .. {batch_last} ..."):
            result = run_job("profile_job", url, instance=instance, tags=tags, say=say)
        runs.append(result.run_id)
        assets |= materializations(result)
        if not result.success:
            failed += failures(result) or [f"run {result.run_id} failed"]
            break
    return {
        "success": not failed,
        "days": len(keys),
        "first": keys[0],
        "last": keys[-1],
        "runs": runs,
        "failures": failed,
        "seconds": round(time.monotonic() - started, 1),
        "assets": assets,
    }
