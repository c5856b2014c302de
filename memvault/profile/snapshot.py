"""Daily snapshots (P2): for each day, what the owner asked and thought about, from store time.

For a day D the store is read as it stood at the end of D in the owner's
timezone: a memory counts when it was created by then, a fact when it was
created by then and not yet retired, a recall when it was logged that day. A
fact learned on D+10 about D is therefore absent from D and present from D+10
on, and a day backfilled a year later reads exactly as it read that night.

Per day:

* ``top_intents`` — the most frequent recall intents logged that day;
* ``top_entities`` — personalized PageRank over the entity graph as it stood at
  the end of the day (pairs co-mentioned in memories, a fact linking two
  entities counting as a co-mention, from their second one on; weighted like
  the co-occurrence signal), restarting at that day's entities in proportion
  to how often each was mentioned; an empty day has none;
* ``delta_vs_yesterday`` — entities that entered and left the top list;
* ``attention``, ``mentioned``, ``facts_learned``, ``activity`` — the raw
  numbers the interest windows and the diary read.

A batch of days loads the store once and walks the days in order. What it reads of the whole
history is what the entity graph needs (every mention and every fact linking two entities,
known by the last day's end); the facts learned, the sessions, memories and recalls are read
for the batch's days only, the facts known at each day's end are counted by the store, and
only the entities the rows name are looked up.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import igraph as ig
import numpy as np
import polars as pl

from memvault.graph.centrality import personalized_pagerank
from memvault.graph.signals import normalize_co_occurrence
from memvault.normalize import utcnow
from memvault.profile.settings import ProfileSettings, day_bounds, day_range
from memvault.profile.write import Written, upsert_rows
from memvault.store import Store
from memvault.store.queries.entities import entity_labels_of
from memvault.store.queries.profile import (
    facts_known_at,
    facts_learned_between,
    facts_linking_before,
    memories_created_between,
    mentions_known_before,
    recalls_between,
    sessions_started_between,
    snapshots_between,
)

#: Co-mentions at which an edge reaches full weight (the graph's co-occurrence scale).
SATURATION = 32
#: A pair joins the day's graph from its second co-mention (or a fact linking the two plus one
#: co-mention): a one-off co-mention is noise, as the entity graph's connect threshold says.
MIN_CO_MENTIONS = 2
DAMPING = 0.85
#: People and things listed per day (the diary reads them).
MENTIONED_LIMIT = 20
FACTS_LIMIT = 50

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


class _Days:
    """Local days of store times, for the days of one batch (``span``).

    A time is placed by the UTC instants at which the span's days begin (so any timezone, DST
    included, costs one binary search per row); anything earlier falls on the day before the
    span (every reader only asks "on or before day D" of those), anything at or after the end of
    the span's last day is null (not yet known)."""

    def __init__(self, span: list[dt.date], timezone: str) -> None:
        starts = [day_bounds(d, timezone)[0] for d in span] + [day_bounds(span[-1], timezone)[1]]
        self.bounds = np.array(starts, dtype="datetime64[us]")
        self.base = (span[0] - dt.date(1970, 1, 1)).days
        self.size = len(span)

    def of(self, frame: pl.DataFrame, column: str) -> pl.Series:
        times = frame[column].cast(pl.Datetime("us")).to_numpy()
        index = np.searchsorted(self.bounds, times, side="right") - 1  # NaT sorts last: null
        days = pl.Series(f"{column}_day", self.base + index, dtype=pl.Int32)
        known = pl.Series(index < self.size)
        return (
            pl.select(pl.when(known).then(days).otherwise(None).cast(pl.Date))
            .to_series()
            .alias(f"{column}_day")
        )


@dataclass
class _History:
    """What the store knew by the end of the last day of a batch, tagged with local days."""

    mentions: pl.DataFrame  # code, block_id, session_id, known_at, known_at_day
    pairs: pl.DataFrame  # u, v (codes), day (co-mention or fact, first known then), until
    learned: pl.DataFrame  # the facts learned during the batch, with created_at_day
    recalls: pl.DataFrame
    sessions: pl.DataFrame
    blocks: pl.DataFrame
    ids: list[str]  # entity id of each code (sorted, so code order is id order)


#: What each read holds, typed (an empty read carries no column types).
_MENTIONS = {
    "entity_id": pl.Utf8,
    "block_id": pl.Utf8,
    "session_id": pl.Utf8,
    "known_at": pl.Datetime("us"),
}
_LINKED = {
    "subject_id": pl.Utf8,
    "object_id": pl.Utf8,
    "created_at": pl.Datetime("us"),
    "expired_at": pl.Datetime("us"),
}
_LEARNED = {
    "id": pl.Utf8,
    "subject_id": pl.Utf8,
    "predicate": pl.Utf8,
    "object": pl.Utf8,
    "created_at": pl.Datetime("us"),
}
_RECALLS = {
    "intent_label": pl.Utf8,
    "verdict": pl.Utf8,
    "created_at": pl.Datetime("us"),
}


def _placed(frame: pl.DataFrame, schema: dict[str, Any], local: _Days, *times: str) -> pl.DataFrame:
    """``frame`` (an empty read as ``schema``) with its ``times`` as microsecond datetimes and
    each placed on its local day (``<time>_day``): the readers ask by day, some by time too."""
    if frame.is_empty():
        frame = pl.DataFrame(schema=schema)
    frame = frame.cast({t: pl.Datetime("us") for t in times})
    return frame.with_columns(*(local.of(frame, t) for t in times))


def _days_of(frame: pl.DataFrame, local: _Days, time: str) -> pl.DataFrame:
    """Only the local day of each row's ``time`` (``<time>_day``): the activity counts need
    no more."""
    if not frame.height:
        return pl.DataFrame(schema={f"{time}_day": pl.Date})
    return frame.with_columns(local.of(frame, time))


def _entity_pairs(
    mentions: pl.DataFrame, linked: pl.DataFrame, ids: pl.Series
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the mentions with their entity as an integer code, the entity pairs the day graphs are
    made of): codes follow the sorted ids (an Enum of them), so code order is id order and the
    day walk can work on arrays."""
    enum = pl.Enum(ids)

    def code(column: str) -> pl.Expr:
        return pl.col(column).cast(enum).to_physical().cast(pl.Int64)

    mentions = mentions.with_columns(code=code("entity_id")).drop("entity_id")
    facts = linked.select(
        u=pl.min_horizontal(code("subject_id"), code("object_id")),
        v=pl.max_horizontal(code("subject_id"), code("object_id")),
        day=pl.col("created_at_day"),
        # Retired during day X: no longer known at the end of X.
        until=pl.col("expired_at_day"),
    )
    return mentions, pl.concat([_co_mentions(mentions), facts])


def _co_mentions(mentions: pl.DataFrame) -> pl.DataFrame:
    """Each pair of entities named in one memory, once per memory, known when the later of its
    two mentions was: the co-mentions an edge counts (u < v, codes; never retired)."""
    in_blocks = (
        mentions.filter(pl.col("block_id").is_not_null())
        .select("code", "known_at_day", block=pl.col("block_id").rank("dense"))
        .unique(["code", "block"])
    )
    return (
        in_blocks.join(in_blocks, on="block", suffix="_b")
        .filter(pl.col("code") < pl.col("code_b"))
        .select(
            u=pl.col("code"),
            v=pl.col("code_b"),
            day=pl.max_horizontal("known_at_day", "known_at_day_b"),
            until=pl.lit(None, dtype=pl.Date),
        )
    )


def _load(store: Store, first: dt.date, last: dt.date, settings: ProfileSettings) -> _History:
    """Read the batch's history once, every store time placed on its local day, the entities
    coded as integers: the whole history the entity graph needs (known by the end of ``last``),
    the rest for [first, last] only."""
    tz = settings.timezone
    local = _Days(day_range(first, last), tz)
    start, _ = day_bounds(first, tz)
    _, cut = day_bounds(last, tz)
    mentions = _placed(mentions_known_before(store, cut), _MENTIONS, local, "known_at")
    linked = _placed(facts_linking_before(store, cut), _LINKED, local, "created_at", "expired_at")
    learned = _placed(facts_learned_between(store, start, cut), _LEARNED, local, "created_at")
    recalls = _placed(recalls_between(store, start, cut), _RECALLS, local, "created_at")
    sessions = _days_of(sessions_started_between(store, start, cut), local, "started_at")
    blocks = _days_of(memories_created_between(store, start, cut), local, "created_at")
    ids = (
        pl.concat([mentions["entity_id"], linked["subject_id"], linked["object_id"]])
        .unique()
        .sort()
    )
    mentions, pairs = _entity_pairs(mentions, linked, ids)
    return _History(
        mentions=mentions,
        pairs=pairs,
        ids=ids.to_list(),
        learned=learned,
        recalls=recalls,
        sessions=sessions,
        blocks=blocks,
    )


class _EdgeCounts:
    """Co-mentions (and linking facts) per entity pair, day by day, as integer-coded arrays.

    Pairs are keyed by the codes of their two entities (codes follow the sorted entity ids,
    so code order is id order); ``advance(day)`` applies that day's changes, and ``edges()``
    gives the pairs counting at least ``MIN_CO_MENTIONS``, sorted.
    """

    def __init__(self, pairs: pl.DataFrame, n: int, before: dt.date) -> None:
        # pairs: u, v (codes, u < v), day (first known), until (retired that day, or null)
        floor = pl.lit(before)
        ended = pairs.filter(pl.col("until").is_not_null())
        key = (pl.col("u") * n + pl.col("v")).cast(pl.Int64)
        keys = pl.concat([pairs.select(key), ended.select(key)]).to_series().to_numpy()
        days = (
            pl.concat(
                [
                    pairs.select(day=pl.max_horizontal("day", floor)),
                    ended.select(day=pl.max_horizontal("until", floor)),
                ]
            )
            .to_series()
            .cast(pl.Int32)
            .to_numpy()
        )
        delta = np.concatenate([np.ones(pairs.height, np.int64), -np.ones(ended.height, np.int64)])
        self.keys, index = np.unique(keys, return_inverse=True)
        self.n = n
        self.counts = np.zeros(len(self.keys), dtype=np.int64)
        order = np.argsort(days, kind="stable")
        days, index, delta = days[order], index[order], delta[order]
        cuts = np.flatnonzero(np.diff(days)) + 1
        epoch = dt.date(1970, 1, 1)
        self.by_day = {
            epoch + dt.timedelta(days=int(d[0])): (i, x)
            for d, i, x in zip(
                np.split(days, cuts),
                np.split(index, cuts),
                np.split(delta, cuts),
                strict=True,
            )
            if len(d)
        }
        self.applied: dt.date | None = None

    def advance(self, day: dt.date) -> None:
        """Apply every change up to the end of ``day`` (days must come in order)."""
        pending = sorted(
            d for d in self.by_day if d <= day and (self.applied is None or d > self.applied)
        )
        for d in pending:
            index, delta = self.by_day[d]
            np.add.at(self.counts, index, delta)
        self.applied = day

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(edge ids in the batch graph, co-mentions) of the pairs that count now, in order."""
        live = self.counts[self.union] >= MIN_CO_MENTIONS
        return np.flatnonzero(live), self.counts[self.union][live]

    def batch_graph(self, last: dt.date) -> None:
        """Every pair that counts on some day up to ``last``, as one graph (vertices: the codes
        of their ends, in order; edges: the pairs, in order); each day's graph is cut from it."""
        peak = np.zeros_like(self.counts)
        running = np.zeros_like(self.counts)
        for d in sorted(d for d in self.by_day if d <= last):
            index, delta = self.by_day[d]
            np.add.at(running, index, delta)
            np.maximum(peak, running, out=peak)
        self.union = np.flatnonzero(peak >= MIN_CO_MENTIONS)
        u, v = self.keys[self.union] // self.n, self.keys[self.union] % self.n
        self.codes = np.unique(np.concatenate([u, v]))
        self.ends_u = np.searchsorted(self.codes, u)  # vertex of each edge's ends
        self.ends_v = np.searchsorted(self.codes, v)
        self.graph = ig.Graph(
            n=len(self.codes),
            edges=np.column_stack([self.ends_u, self.ends_v]).tolist(),
            directed=False,
        )


def _ppr(
    counts: _EdgeCounts, seeds: np.ndarray, weights: np.ndarray, top_n: int
) -> list[tuple[int, float]]:
    """Top entity codes by personalized PageRank restarting at ``seeds`` (codes) in proportion
    to ``weights``, over the day's graph: the pairs that count that day (cut from the batch's
    graph, order kept: ends in code order, which is id order; pairs sorted) and then the seeds
    that have no such pair, in code order. The same day gives the same graph, built the same
    way, whatever else the store learned later."""
    if len(seeds) == 0:
        return []
    edge_ids, n = counts.edges()
    graph = counts.graph.subgraph_edges(edge_ids.tolist(), delete_vertices=True)
    incident = np.zeros(len(counts.codes), dtype=bool)
    incident[counts.ends_u[edge_ids]] = incident[counts.ends_v[edge_ids]] = True
    linked = counts.codes[incident]  # what subgraph_edges keeps, in the same order
    alone = np.setdiff1d(seeds, linked)  # sorted
    graph.add_vertices(len(alone))
    vertices = np.concatenate([linked, alone])
    position = np.where(
        np.isin(seeds, linked),
        np.searchsorted(linked, seeds),
        len(linked) + np.searchsorted(alone, seeds),
    )
    reset = np.zeros(len(vertices))
    reset[position] = weights
    scores = np.round(
        np.asarray(
            personalized_pagerank(
                graph,
                reset.tolist(),
                weights=normalize_co_occurrence(n, SATURATION).tolist() if len(n) else None,
                damping=DAMPING,
            )
        ),
        6,
    )
    order = np.lexsort((vertices, -scores))[:top_n]
    return [(int(vertices[i]), float(scores[i])) for i in order if scores[i] > 0]


def compute_snapshots(store: Store, days: list[dt.date], settings: ProfileSettings) -> pl.DataFrame:
    """One row per day of ``days`` (consecutive), as ``profile_daily`` holds it."""
    if not days:
        return pl.DataFrame()
    first, last = min(days), max(days)
    yesterday = first - dt.timedelta(days=1)
    history = _load(store, yesterday, last, settings)
    found = _walk(history, yesterday, first, last, settings)
    labels = _Labels(history.ids, _names_of(store, history.ids, found))
    _, cut_all = day_bounds(last, settings.timezone)
    rows = [_row(store, history, f, labels, cut_all, settings) for f in found]
    return pl.DataFrame(rows, schema_overrides={"day": pl.Date, "known_at": pl.Datetime("us")})


def _attention_by_day(mentions: pl.DataFrame, since: dt.date) -> dict[dt.date, pl.DataFrame]:
    """Each day's mentions per entity from ``since`` on (code, n, by code): where that day's
    PageRank restarts, and how much."""
    return {
        day: part.select("code", "n").sort("code")
        for (day,), part in mentions.filter(pl.col("known_at_day") >= since)
        .group_by("known_at_day", "code")
        .agg(pl.len().alias("n"))
        .partition_by("known_at_day", as_dict=True)
        .items()
    }


def _walk(
    history: _History,
    yesterday: dt.date,
    first: dt.date,
    last: dt.date,
    settings: ProfileSettings,
) -> list[dict[str, Any]]:
    """Each day's figures, entities as codes (named later), the days walked in order so the
    edge counts advance once per day; the day before ``first`` is walked only for its top list,
    which the first day's change is measured against."""
    counts = _EdgeCounts(history.pairs, len(history.ids), yesterday)
    counts.batch_graph(last)
    attention_by_day = _attention_by_day(history.mentions, yesterday)
    found: list[dict[str, Any]] = []
    previous: list[int] | None = None
    for day in day_range(yesterday, last):
        _, end = day_bounds(day, settings.timezone)
        counts.advance(day)
        attention = attention_by_day.get(
            day, pl.DataFrame(schema={"code": pl.Int64, "n": pl.UInt32})
        )
        top = _ppr(
            counts,
            attention["code"].to_numpy(),
            attention["n"].to_numpy().astype(float),
            settings.top_n,
        )
        top_ids = [code for code, _ in top]
        if day >= first:
            found.append(_figures(history, day, end, top, previous or [], attention))
        previous = top_ids
    return found


def _figures(
    history: _History,
    day: dt.date,
    end: dt.datetime,
    top: list[tuple[int, float]],
    before: list[int],
    attention: pl.DataFrame,
) -> dict[str, Any]:
    """One day's figures (entities as codes): its top list and what entered and left it since
    ``before`` (yesterday's), its attention, the most mentioned, the facts learned."""
    top_ids = [code for code, _ in top]
    return {
        "day": day,
        "end": end,
        "top": top,
        "appeared": [c for c in top_ids if c not in before],
        "disappeared": [c for c in before if c not in top_ids],
        "attention": attention,
        "mentioned": sorted(attention.iter_rows(), key=lambda ck: (-ck[1], ck[0]))[
            :MENTIONED_LIMIT
        ],
        "learned": history.learned.filter(pl.col("created_at_day") == day).sort("created_at", "id"),
    }


def _names_of(
    store: Store, ids: list[str], found: list[dict[str, Any]]
) -> dict[str, tuple[str, str]]:
    """The labels (id → name, type) of the entities the days' rows name: only those are looked
    up, not every entity of the store."""
    named: set[str] = set()
    for f in found:
        codes = [c for c, _ in f["top"]] + f["appeared"] + f["disappeared"]
        named |= {ids[c] for c in codes + [c for c, _ in f["mentioned"]]}
        named |= set(f["learned"].head(FACTS_LIMIT)["subject_id"].to_list())
    return entity_labels_of(store, sorted(named)) if named else {}


@dataclass
class _Labels:
    """Entity codes and ids as the rows show them (an id the store no longer names shows as
    itself)."""

    ids: list[str]
    names: dict[str, tuple[str, str]]

    def entity(self, code: int, **extra: Any) -> dict[str, Any]:
        eid = self.ids[code]
        name, etype = self.names.get(eid, (eid, "unknown"))
        return {"id": eid, "name": name, "type": etype, **extra}

    def subject(self, eid: str) -> str:
        return self.names.get(eid, (eid, ""))[0]


def _row(
    store: Store,
    history: _History,
    f: dict[str, Any],
    labels: _Labels,
    cut_all: dt.datetime,
    settings: ProfileSettings,
) -> dict[str, Any]:
    """A day's ``profile_daily`` row: its figures named, JSON as stored, read as of the end of
    the day (never later than the batch's end, ``cut_all``)."""
    day, end, attention, learned = f["day"], f["end"], f["attention"], f["learned"]
    attention_ids = {labels.ids[c]: int(k) for c, k in attention.iter_rows()}
    recalls_today = history.recalls.filter(pl.col("created_at_day") == day)
    return {
        "id": f"profile:{day.isoformat()}",
        "day": day,
        "top_intents": _dumps(_top_intents(history.recalls, day, settings.top_n)),
        "top_entities": _dumps([labels.entity(code, score=s) for code, s in f["top"]]),
        "delta_vs_yesterday": _dumps(
            {
                "appeared": [labels.entity(c) for c in f["appeared"]],
                "disappeared": [labels.entity(c) for c in f["disappeared"]],
            }
        ),
        "known_at": end if end <= cut_all else cut_all,
        "timezone": settings.timezone,
        "activity": _dumps(
            {
                "sessions": history.sessions.filter(pl.col("started_at_day") == day).height,
                "memories": history.blocks.filter(pl.col("created_at_day") == day).height,
                "mentions": int(sum(attention_ids.values())),
                "recalls": recalls_today.height,
                "recalls_failed": recalls_today.filter(pl.col("verdict") == "INCORRECT").height,
                "facts_learned": learned.height,
                "facts_known": facts_known_at(store, end),
            }
        ),
        "attention": _dumps(attention_ids),
        "mentioned": _dumps([labels.entity(c, mentions=int(k)) for c, k in f["mentioned"]]),
        "facts_learned": _dumps(
            [
                {
                    "id": r["id"],
                    "subject": labels.subject(r["subject_id"]),
                    "predicate": r["predicate"],
                    "object": r["object"],
                }
                for r in learned.head(FACTS_LIMIT).iter_rows(named=True)
            ]
        ),
    }


def _top_intents(recalls: pl.DataFrame, day: dt.date, top_n: int) -> list[dict[str, Any]]:
    """The day's most frequent recall intents (ties by name)."""
    intents = (
        recalls.filter((pl.col("created_at_day") == day) & pl.col("intent_label").is_not_null())
        .group_by("intent_label")
        .agg(pl.len().alias("count"))
        .sort(["count", "intent_label"], descending=[True, False])
        .head(top_n)
    )
    return [{"intent": i, "count": c} for i, c in intents.iter_rows()]


def write_snapshots(store: Store, snapshots: pl.DataFrame, run_id: str) -> Written:
    """Insert or rewrite the days' rows (unchanged rows are left alone)."""
    now = utcnow()
    frame = snapshots.with_columns(
        windows=pl.lit("{}"), run_id=pl.lit(run_id), created_at=pl.lit(now)
    )
    return upsert_rows(store, "profile_daily", frame, CONTENT, run_id, "daily_snapshot")


def read_snapshots(store: Store, first: dt.date, last: dt.date) -> pl.DataFrame:
    """Stored snapshots of [first, last], oldest first."""
    return snapshots_between(store, first, last)
