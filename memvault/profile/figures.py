"""What one day of the profile shows as its figures: the snapshot, a window, the diary page.

A run of a backfill covers a batch of days, but each day is a partition of its own in an
orchestrator's catalog: these are built from one day's row, so a day reports that day (its
activity, its lists, whether its row was written) and never the batch's totals or last day.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memvault.profile.write import Written

ACTIVITY = ("sessions", "memories", "recalls", "facts_learned")


def _loads(text: str | None, default: str = "[]") -> Any:
    return json.loads(text or default)


def names(items: list[dict[str, Any]], n: int = 5) -> str:
    """The first ``n`` entities (or intents) of a stored list, by name."""
    return ", ".join(str(i.get("name") or i.get("intent")) for i in items[:n]) or "none"


def snapshot_figures(row: Mapping[str, Any], written: Written) -> dict[str, Any]:
    """One day's snapshot: its activity, its top lists and what changed since the day before."""
    activity = _loads(row["activity"], "{}")
    delta = _loads(row["delta_vs_yesterday"], "{}")
    return {
        "day": row["day"].isoformat(),
        "row": written.of(row["id"]),
        **{key: int(activity.get(key, 0)) for key in ACTIVITY},
        "mentions": int(activity.get("mentions", 0)),
        "timezone": row["timezone"],
        "top_entities": names(_loads(row["top_entities"]), 10),
        "top_intents": names(_loads(row["top_intents"]), 10),
        "appeared": names(delta.get("appeared", [])),
        "disappeared": names(delta.get("disappeared", [])),
    }


def interest_figures(row: Mapping[str, Any], written: Written) -> dict[str, Any]:
    """One day's interest window: how many of its days had a snapshot, and what it shows."""
    return {
        "day": row["day"].isoformat(),
        "row": written.of(row["id"]),
        "window_days": int(row["window_days"]),
        "days_covered": int(row["days_covered"]),
        "attention": names(_loads(row["attention"])),
        "rising": names(_loads(row["rising"])),
        "cooling": names(_loads(row["cooling"])),
    }


def diary_figures(row: Mapping[str, Any], written: Written) -> dict[str, Any]:
    """One day's diary page: who wrote it (the LLM, the template, or an empty day) and the page."""
    return {
        "day": row["day"].isoformat(),
        "row": written.of(row["id"]),
        "page_kind": row["kind"],
        "page": str(row["text"]),
    }
