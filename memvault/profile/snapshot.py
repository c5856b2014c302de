"""Daily snapshots (P2): for each day, what the owner asked and thought about, from store time.

For a day D the store is read as it stood at the end of D in the owner's
timezone: a memory counts when it was created by then, a fact when it was
created by then and not yet retired, a recall when it was logged that day. A
fact learned on D+10 about D is therefore absent from D and present from D+10
on, and a day backfilled a year later reads exactly as it read that night.

Per day:

* ``top_intents`` — the most frequent recall intents logged that day;
* ``top_entities`` — personalized PageRank over the entity graph as it stood at
  the end of the day (co-mentions in memories plus facts linking two entities,
  weighted like the co-occurrence signal), restarting at that day's entities
  in proportion to how often each was mentioned; an empty day has none;
* ``delta_vs_yesterday`` — entities that entered and left the top list;
* ``attention``, ``mentioned``, ``facts_learned``, ``activity`` — the raw
  numbers the interest windows and the diary read.

A batch of days loads the store once and walks the days in order.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import igraph as ig
import numpy as np
import polars as pl

from memvault.graph.signals import normalize_co_occurrence
from memvault.normalize import utcnow
from memvault.profile.settings import ProfileSettings, day_bounds, day_range
from memvault.profile.write import Written, upsert_rows
from memvault.store import Store

#: Co-mentions at which an edge reaches full weight (the graph's co-occurrence scale).
SATURATION = 32
DAMPING = 0.85
#: People and things listed per day (the diary reads them).
MENTIONED_LIMIT = 20
FACTS_LIMIT = 50

MENTIONS_SQL = """
-- Every mention with the time the store knew it: its memory's creation (else when it was said).
SELECT m.entity_id, m.block_id, COALESCE(m.session_id, b.session_id) AS session_id,
       COALESCE(b.created_at, m.mentioned_at) AS known_at
FROM mentions m LEFT JOIN blocks b ON b.id = m.block_id
WHERE COALESCE(b.created_at, m.mentioned_at) < :cut
"""

FACTS_SQL = """
SELECT t.id, t.subject_id, t.predicate, t.object, t.object_id, t.created_at, t.expired_at
FROM triples t WHERE t.created_at < :cut
"""

#: Columns that make a snapshot's content (compared on re-materialization).
CONTENT = [
    "day",
    "top_intents",
    "top_entities",
    "delta_vs_yesterday",
    "known_at",
    "timezone",
    "activity",
    "attention",
    "mentioned",
    "facts_learned",
]


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _local_day(column: str, timezone: str) -> pl.Expr:
    return (
        pl.col(column)
        .dt.replace_time_zone("UTC")
        .dt.convert_time_zone(timezone)
        .dt.date()
        .alias(f"{column}_day")
    )


@dataclass
class _History:
    """What the store knew by the end of the last day of a batch, tagged with local days."""

    mentions: pl.DataFrame  # entity_id, block_id, session_id, known_at, known_at_day
    pairs: pl.DataFrame  # u, v, day (co-mention or fact edge, first known that day), until
    facts: pl.DataFrame
    recalls: pl.DataFrame
    sessions: pl.DataFrame
    blocks: pl.DataFrame
    entities: dict[str, tuple[str, str]]  # id -> (name, type)


def _load(store: Store, first: dt.date, last: dt.date, settings: ProfileSettings) -> _History:
    tz = settings.timezone
    start, _ = day_bounds(first, tz)
    _, cut = day_bounds(last, tz)
    mentions = store.fetch_df(MENTIONS_SQL, {"cut": cut})
    if mentions.is_empty():
        mentions = pl.DataFrame(
            schema={
                "entity_id": pl.Utf8,
                "block_id": pl.Utf8,
                "session_id": pl.Utf8,
                "known_at": pl.Datetime("us"),
            }
        )
    mentions = mentions.cast({"known_at": pl.Datetime("us")}).with_columns(
        _local_day("known_at", tz)
    )
    in_blocks = (
        mentions.filter(pl.col("block_id").is_not_null())
        .select("entity_id", "block_id", "known_at_day")
        .unique(["entity_id", "block_id"])
    )
    co = (
        in_blocks.join(in_blocks, on="block_id", suffix="_b")
        .filter(pl.col("entity_id") < pl.col("entity_id_b"))
        .select(
            u=pl.col("entity_id"),
            v=pl.col("entity_id_b"),
            day=pl.max_horizontal("known_at_day", "known_at_day_b"),
            until=pl.lit(None, dtype=pl.Date),
        )
    )
    facts = store.fetch_df(FACTS_SQL, {"cut": cut})
    if facts.is_empty():
        facts = pl.DataFrame(
            schema={
                "id": pl.Utf8,
                "subject_id": pl.Utf8,
                "predicate": pl.Utf8,
                "object": pl.Utf8,
                "object_id": pl.Utf8,
                "created_at": pl.Datetime("us"),
                "expired_at": pl.Datetime("us"),
            }
        )
    facts = facts.cast({"created_at": pl.Datetime("us"), "expired_at": pl.Datetime("us")})
    facts = facts.with_columns(_local_day("created_at", tz), _local_day("expired_at", tz))
    linked = facts.filter(
        pl.col("object_id").is_not_null() & (pl.col("object_id") != pl.col("subject_id"))
    ).select(
        u=pl.min_horizontal("subject_id", "object_id"),
        v=pl.max_horizontal("subject_id", "object_id"),
        day=pl.col("created_at_day"),
        # Retired during day X: no longer known at the end of X.
        until=pl.col("expired_at_day"),
    )
    recalls = store.fetch_df(
        "SELECT intent_label, verdict, created_at FROM recall_log "
        "WHERE created_at >= :start AND created_at < :cut",
        {"start": start, "cut": cut},
    )
    if recalls.is_empty():
        recalls = pl.DataFrame(
            schema={"intent_label": pl.Utf8, "verdict": pl.Utf8, "created_at": pl.Datetime("us")}
        )
    recalls = recalls.cast({"created_at": pl.Datetime("us")}).with_columns(
        _local_day("created_at", tz)
    )
    sessions = store.fetch_df(
        "SELECT started_at FROM sessions WHERE started_at >= :start AND started_at < :cut",
        {"start": start, "cut": cut},
    )
    sessions = (
        sessions.cast({"started_at": pl.Datetime("us")}).with_columns(_local_day("started_at", tz))
        if sessions.height
        else pl.DataFrame(schema={"started_at_day": pl.Date})
    )
    blocks = store.fetch_df(
        "SELECT created_at FROM blocks WHERE created_at >= :start AND created_at < :cut",
        {"start": start, "cut": cut},
    )
    blocks = (
        blocks.cast({"created_at": pl.Datetime("us")}).with_columns(_local_day("created_at", tz))
        if blocks.height
        else pl.DataFrame(schema={"created_at_day": pl.Date})
    )
    names = store.fetch("SELECT id, name, entity_type FROM entities")
    return _History(
        mentions=mentions,
        pairs=pl.concat([co, linked]),
        facts=facts,
        recalls=recalls,
        sessions=sessions,
        blocks=blocks,
        entities={str(i): (str(n), str(t)) for i, n, t in names},
    )


def _ppr(edges: pl.DataFrame, attention: pl.DataFrame, top_n: int) -> list[tuple[str, float]]:
    """Top entities by personalized PageRank restarting at the day's entities (by mentions)."""
    if attention.is_empty():
        return []
    ids = pl.concat([edges["u"], edges["v"], attention["entity_id"]]).unique().sort().to_list()
    index = {name: i for i, name in enumerate(ids)}
    graph = ig.Graph(
        n=len(ids),
        edges=list(
            zip(
                [index[u] for u in edges["u"].to_list()],
                [index[v] for v in edges["v"].to_list()],
                strict=True,
            )
        ),
        directed=False,
    )
    graph.es["weight"] = edges["weight"].to_list()
    reset = np.zeros(len(ids))
    for name, n in attention.iter_rows():
        reset[index[name]] = float(n)
    scores = graph.personalized_pagerank(
        reset=reset.tolist(), weights="weight" if graph.ecount() else None, damping=DAMPING
    )
    ranked = sorted(
        ((ids[i], round(float(s), 6)) for i, s in enumerate(scores) if s > 0),
        key=lambda kv: (-kv[1], kv[0]),
    )
    return ranked[:top_n]


def compute_snapshots(store: Store, days: list[dt.date], settings: ProfileSettings) -> pl.DataFrame:
    """One row per day of ``days`` (consecutive), as ``profile_daily`` holds it."""
    if not days:
        return pl.DataFrame()
    first, last = min(days), max(days)
    yesterday = first - dt.timedelta(days=1)
    history = _load(store, yesterday, last, settings)
    names = history.entities

    def entity(eid: str, **extra: Any) -> dict[str, Any]:
        name, etype = names.get(eid, (eid, "unknown"))
        return {"id": eid, "name": name, "type": etype, **extra}

    # Edge increments per (day, pair); days before the batch are folded into its day before.
    pairs = history.pairs.with_columns(pl.max_horizontal("day", pl.lit(yesterday)).alias("day"))
    daily_pairs = pairs.group_by("day", "u", "v", "until").agg(pl.len().alias("n"))
    attention_by_day = history.mentions.group_by("known_at_day", "entity_id").agg(
        pl.len().alias("n")
    )
    facts_known = history.facts.with_columns(
        pl.max_horizontal("created_at_day", pl.lit(yesterday)).alias("day")
    )
    _, cut_all = day_bounds(last, settings.timezone)
    rows: list[dict[str, Any]] = []
    previous: list[str] | None = None
    for day in day_range(yesterday, last):
        _, end = day_bounds(day, settings.timezone)
        edges = (
            daily_pairs.filter(
                (pl.col("day") <= day) & (pl.col("until").is_null() | (pl.col("until") > day))
            )
            .group_by("u", "v")
            .agg(pl.col("n").sum())
            .sort("u", "v")
        )
        edges = edges.with_columns(
            weight=pl.Series(normalize_co_occurrence(edges["n"].to_numpy(), SATURATION))
        )
        attention = (
            attention_by_day.filter(pl.col("known_at_day") == day)
            .select("entity_id", "n")
            .sort("entity_id")
        )
        top = _ppr(edges, attention, settings.top_n)
        top_ids = [eid for eid, _ in top]
        if day < first:
            previous = top_ids
            continue
        counts = dict(attention.iter_rows())
        intents = (
            history.recalls.filter(
                (pl.col("created_at_day") == day) & pl.col("intent_label").is_not_null()
            )
            .group_by("intent_label")
            .agg(pl.len().alias("count"))
            .sort(["count", "intent_label"], descending=[True, False])
            .head(settings.top_n)
        )
        learned = history.facts.filter(pl.col("created_at_day") == day).sort("created_at", "id")
        known = facts_known.filter(
            (pl.col("day") <= day)
            & (pl.col("expired_at_day").is_null() | (pl.col("expired_at_day") > day))
        ).height
        recalls_today = history.recalls.filter(pl.col("created_at_day") == day)
        before = previous or []
        rows.append(
            {
                "id": f"profile:{day.isoformat()}",
                "day": day,
                "top_intents": _dumps([{"intent": i, "count": c} for i, c in intents.iter_rows()]),
                "top_entities": _dumps([entity(eid, score=s) for eid, s in top]),
                "delta_vs_yesterday": _dumps(
                    {
                        "appeared": [entity(e) for e in top_ids if e not in before],
                        "disappeared": [entity(e) for e in before if e not in top_ids],
                    }
                ),
                "known_at": end if end <= cut_all else cut_all,
                "timezone": settings.timezone,
                "activity": _dumps(
                    {
                        "sessions": history.sessions.filter(pl.col("started_at_day") == day).height,
                        "memories": history.blocks.filter(pl.col("created_at_day") == day).height,
                        "mentions": int(sum(counts.values())),
                        "recalls": recalls_today.height,
                        "recalls_failed": recalls_today.filter(
                            pl.col("verdict") == "INCORRECT"
                        ).height,
                        "facts_learned": learned.height,
                        "facts_known": known,
                    }
                ),
                "attention": _dumps(counts),
                "mentioned": _dumps(
                    [
                        entity(eid, mentions=n)
                        for eid, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[
                            :MENTIONED_LIMIT
                        ]
                    ]
                ),
                "facts_learned": _dumps(
                    [
                        {
                            "id": r["id"],
                            "subject": names.get(r["subject_id"], (r["subject_id"], ""))[0],
                            "predicate": r["predicate"],
                            "object": r["object"],
                        }
                        for r in learned.head(FACTS_LIMIT).iter_rows(named=True)
                    ]
                ),
            }
        )
        previous = top_ids
    return pl.DataFrame(rows, schema_overrides={"day": pl.Date, "known_at": pl.Datetime("us")})


def write_snapshots(store: Store, snapshots: pl.DataFrame, run_id: str) -> Written:
    """Insert or rewrite the days' rows (unchanged rows are left alone)."""
    now = utcnow()
    frame = snapshots.with_columns(
        windows=pl.lit("{}"), run_id=pl.lit(run_id), created_at=pl.lit(now)
    )
    return upsert_rows(store, "profile_daily", frame, CONTENT, run_id, "daily_snapshot")


def read_snapshots(store: Store, first: dt.date, last: dt.date) -> pl.DataFrame:
    """Stored snapshots of [first, last], oldest first."""
    return store.fetch_df(
        "SELECT * FROM profile_daily WHERE day >= :a AND day <= :b ORDER BY day",
        {"a": first, "b": last},
    )
