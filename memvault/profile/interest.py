"""Interest over trailing windows (P1): attention over 7, 30 and 90 days, rising and cooling.

For a day D and a window of W days, attention is the mentions per entity in
the daily snapshots of D-W+1 .. D; rising and cooling compare it with the W
days before (D-2W+1 .. D-W). Read from the stored snapshots only (what each day
knew), so a window never sees the future either. ``days_covered`` says how many
of the W days had a snapshot (fewer at the start of the history).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import polars as pl

from memvault.normalize import utcnow
from memvault.profile.settings import ProfileSettings, day_range
from memvault.profile.write import Written, upsert_rows
from memvault.store import Store
from memvault.store.queries.entities import entity_labels_of
from memvault.store.queries.profile import daily_attention

#: The windows, in days, each its own asset.
WINDOWS: tuple[int, ...] = (7, 30, 90)
CONTENT = ["day", "window_days", "days_covered", "attention", "rising", "cooling"]


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def attention_frame(
    store: Store, first: dt.date, last: dt.date
) -> tuple[pl.DataFrame, set[dt.date]]:
    """(day, entity_id, n) from the snapshots of [first, last], and the days that have one."""
    rows = daily_attention(store, first, last)
    days: set[dt.date] = set()
    records: list[tuple[dt.date, str, int]] = []
    for day, attention in rows:
        day = day if isinstance(day, dt.date) else dt.date.fromisoformat(str(day))
        days.add(day)
        records.extend((day, eid, int(n)) for eid, n in json.loads(attention or "{}").items())
    frame = pl.DataFrame(
        records, schema={"day": pl.Date, "entity_id": pl.Utf8, "n": pl.Int64}, orient="row"
    )
    return frame, days


def compute_interest(
    store: Store, days: list[dt.date], window: int, settings: ProfileSettings
) -> pl.DataFrame:
    """One ``interest_window`` row per day of ``days`` for a window of ``window`` days."""
    if not days:
        return pl.DataFrame()
    first, last = min(days), max(days)
    frame, covered = attention_frame(store, first - dt.timedelta(days=2 * window - 1), last)
    found = []  # each day's lists, by entity id (named below)
    for day in day_range(first, last):
        now_from = day - dt.timedelta(days=window - 1)
        before_from = day - dt.timedelta(days=2 * window - 1)
        part = frame.filter(pl.col("day") >= before_from, pl.col("day") <= day)
        sums = (
            part.group_by("entity_id")
            .agg(
                now=pl.col("n").filter(pl.col("day") >= now_from).sum(),
                before=pl.col("n").filter(pl.col("day") < now_from).sum(),
            )
            .with_columns(change=pl.col("now") - pl.col("before"))
        )
        total = int(sums["now"].sum() or 0)
        top = (
            sums.filter(pl.col("now") > 0)
            .sort(["now", "entity_id"], descending=[True, False])
            .head(settings.top_n)
        )
        rising = (
            sums.filter(pl.col("change") > 0)
            .sort(["change", "entity_id"], descending=[True, False])
            .head(settings.top_n)
        )
        cooling = (
            sums.filter(pl.col("change") < 0)
            .sort(["change", "entity_id"], descending=[False, False])
            .head(settings.top_n)
        )
        found.append((day, now_from, total, top, rising, cooling))
    # Only the entities the rows name are looked up, not every entity of the store.
    named = {e for f in found for lists in f[3:] for e in lists["entity_id"].to_list()}
    names = entity_labels_of(store, sorted(named)) if named else {}

    def entity(eid: str, **extra: Any) -> dict[str, Any]:
        name, etype = names.get(eid, (eid, "unknown"))
        return {"id": eid, "name": name, "type": etype, **extra}

    rows = []
    for day, now_from, total, top, rising, cooling in found:
        rows.append(
            {
                "id": f"interest:{window}d:{day.isoformat()}",
                "day": day,
                "window_days": window,
                "days_covered": sum(1 for d in covered if now_from <= d <= day),
                "attention": _dumps(
                    [
                        entity(
                            r["entity_id"],
                            mentions=r["now"],
                            share=round(r["now"] / total, 4) if total else 0.0,
                        )
                        for r in top.iter_rows(named=True)
                    ]
                ),
                "rising": _dumps(
                    [
                        entity(r["entity_id"], now=r["now"], before=r["before"])
                        for r in rising.iter_rows(named=True)
                    ]
                ),
                "cooling": _dumps(
                    [
                        entity(r["entity_id"], now=r["now"], before=r["before"])
                        for r in cooling.iter_rows(named=True)
                    ]
                ),
            }
        )
    return pl.DataFrame(rows, schema_overrides={"day": pl.Date, "window_days": pl.Int32})


def write_interest(
    store: Store, days: list[dt.date], window: int, settings: ProfileSettings, run_id: str
) -> tuple[pl.DataFrame, Written]:
    """Compute and write the window's rows for ``days``."""
    rows = compute_interest(store, days, window, settings)
    if rows.is_empty():
        return rows, Written()
    frame = rows.with_columns(run_id=pl.lit(run_id), created_at=pl.lit(utcnow()))
    return rows, upsert_rows(
        store, "interest_window", frame, CONTENT, run_id, f"interest_{window}d"
    )
