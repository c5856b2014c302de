"""Prefetch: search ahead of time for the questions the owner is likely to ask next.

Predictions come from three places, each a weight per query signature
(``intent|entity ids``, the key recalls are matched by):

* ``recent_recalls`` — signatures asked in the last days, more when asked
  often, recently (the weight halves every ``HALF_LIFE_DAYS``) or answered
  well (judged correct); the query is the owner's own latest wording;
* ``profile`` — the latest daily profile's top entities and the 7-day
  window's rising ones;
* ``recent_sessions`` — the entities mentioned most in the last sessions.

An entity becomes a signature with the intent the owner used most with it
(else the usual one for its type). For the strongest predictions the search
runs now and its result ids go to ``prefetch_cache``, with the state of every fact the
ranking rests on (``facts``): an entry is valid ``ttl_hours``, and a recall with the same
signature is served from it while none of those facts changed and no new fact of the same
entity and predicate was recorded (else it searches afresh, as :mod:`memvault.recall.currency`
tells). A
prediction whose valid entry holds the same results writes nothing (so a
re-run within the hour writes nothing); other results update the entry; after
it expires a new entry is written, and the old one stays with its hits, so the
hit rate of every entry can be told.

The hit rate says whether this pays: of the entries created in a window, the
share a later recall used, and of the recalls in the window, the share served
from the cache.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.config import env_number
from memvault.ids import stable_id
from memvault.normalize import to_utc_naive, utcnow
from memvault.recall.recaller import Recaller, signature_of
from memvault.store import Store
from memvault.store.queries.entities import entity_labels_of, most_mentioned_between
from memvault.store.queries.profile import latest_rising, latest_top_entities
from memvault.store.queries.recall import (
    prefetch_entries_used,
    recalls_after,
    recalls_served,
    served_prefetch_entries,
)
from memvault.store.tracked import tracked_run

#: Predictions searched per run, at most.
MAX_PREDICTIONS = 40
#: Result ids kept per prefetched entry (a recall returns the first ``limit`` of them).
RESULTS_PER_ENTRY = 10
#: How long a prefetched entry is served.
TTL_HOURS = 3.0
#: Recalls older than this are not used to predict.
WINDOW_DAYS = 14
#: The weight of a past recall halves every this many days.
HALF_LIFE_DAYS = 2.0
#: Sessions that count as recent for the ``recent_sessions`` source.
RECENT_SESSION_DAYS = 2

#: What the owner most likely asks about an entity of a type they never asked about.
DEFAULT_INTENT: dict[str, str] = {
    "person": "person_lookup",
    "project": "project_status",
    "tool": "tool_usage",
    "concept": "concept_lookup",
    "organization": "concept_lookup",
    "place": "concept_lookup",
}
#: How a predicted signature is asked when the owner never worded it.
QUERY_TEMPLATES: dict[str, str] = {
    "employer_lookup": "where does {name} work",
    "location_lookup": "where does {name} live",
    "project_status": "status of {name}",
    "person_lookup": "who is {name}",
    "dependency_lookup": "what does {name} depend on",
    "preference_lookup": "what does {name} prefer",
    "howto": "how do I deploy {name}",
    "tool_usage": "how do we use {name}",
    "concept_lookup": "notes on {name}",
}
SOURCE_WEIGHT: dict[str, float] = {"recent_recalls": 1.0, "profile": 0.5, "recent_sessions": 0.4}


@dataclass
class Prediction:
    signature: str
    intent: str | None
    entities: list[str]
    query: str
    source: str
    weight: float


@dataclass
class PrefetchReport:
    run_id: str
    predictions: int = 0
    by_source: dict[str, int] = field(default_factory=dict)
    written: int = 0
    refreshed: int = 0
    unchanged: int = 0
    hit_rate: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _recalls(store: Store, since: dt.datetime, now: dt.datetime) -> pl.DataFrame:
    log = recalls_after(store, since, now)
    if log.is_empty():
        return pl.DataFrame(
            schema={"query": pl.Utf8, "intent_label": pl.Utf8, "ents": pl.List(pl.Utf8),
                    "verdict": pl.Utf8, "sig": pl.Utf8, "created_at": pl.Datetime("us")}
        )  # fmt: skip
    return log.with_columns(
        ents=pl.col("entities").str.json_decode(pl.List(pl.Utf8)).list.sort()
    ).with_columns(
        sig=pl.coalesce(
            "signature",
            pl.col("intent_label").fill_null("-") + "|" + pl.col("ents").list.join(","),
        )
    )


def _entity_predictions(
    store: Store, weights: dict[str, float], source: str, now: dt.datetime
) -> list[Prediction]:
    """Entity → signature with the owner's usual intent for it, worded from a template."""
    if not weights:
        return []
    ids = list(weights)
    info = entity_labels_of(store, ids, active_only=True)
    asked = _recalls(store, dt.datetime(1970, 1, 1), now)
    usual: dict[str, str] = {}
    if asked.height:
        top = (
            asked.filter((pl.col("ents").list.len() == 1) & pl.col("intent_label").is_not_null())
            .with_columns(eid=pl.col("ents").list.first())
            .filter(pl.col("eid").is_in(ids))
            .group_by("eid", "intent_label")
            .agg(n=pl.len())
            .sort(["eid", "n", "intent_label"], descending=[False, True, False])
            .group_by("eid", maintain_order=True)
            .first()
        )
        usual = dict(zip(top["eid"], top["intent_label"], strict=True))
    out = []
    for eid, weight in weights.items():
        if eid not in info:
            continue
        name, etype = info[eid]
        intent = usual.get(eid) or DEFAULT_INTENT.get(str(etype), "concept_lookup")
        out.append(
            Prediction(
                signature=signature_of(intent, [eid]),
                intent=intent,
                entities=[eid],
                query=QUERY_TEMPLATES[intent].format(name=name),
                source=source,
                weight=weight * SOURCE_WEIGHT[source],
            )
        )
    return out


def predict(
    store: Store, now: dt.datetime | None = None, *, limit: int = MAX_PREDICTIONS
) -> list[Prediction]:
    """The signatures most likely asked next, strongest first (at most ``limit``)."""
    now = to_utc_naive(now) if now is not None else utcnow()
    found: list[Prediction] = []
    log = _recalls(store, now - dt.timedelta(days=WINDOW_DAYS), now)
    if log.height:
        age = (pl.lit(now) - pl.col("created_at")).dt.total_seconds() / 86400.0
        verdict_factor = (
            pl.when(pl.col("verdict") == "CORRECT").then(1.5)
            .when(pl.col("verdict") == "INCORRECT").then(0.5)
            .otherwise(1.0)
        )  # fmt: skip
        sigs = (
            log.with_columns(w=(0.5 ** (age / HALF_LIFE_DAYS)) * verdict_factor)
            .group_by("sig")
            .agg(
                pl.col("w").sum(),
                pl.col("query").last(),
                pl.col("intent_label").last(),
                pl.col("ents").last(),
            )
        )
        found += [
            Prediction(r["sig"], r["intent_label"], list(r["ents"]), r["query"], "recent_recalls", r["w"])
            for r in sigs.iter_rows(named=True)
        ]  # fmt: skip
    found += _entity_predictions(store, _profile_entities(store, now), "profile", now)
    found += _entity_predictions(store, _session_entities(store, now), "recent_sessions", now)
    merged: dict[str, Prediction] = {}
    for p in sorted(found, key=lambda p: -p.weight):
        if p.signature in merged:
            merged[p.signature].weight += p.weight
        else:
            merged[p.signature] = Prediction(**p.__dict__)
    ranked = sorted(merged.values(), key=lambda p: (-p.weight, p.signature))
    return ranked[:limit]


def _profile_entities(store: Store, now: dt.datetime) -> dict[str, float]:
    """The latest profile's top entities and the 7-day window's rising ones, by rank."""
    weights: dict[str, float] = {}
    day = now.date()
    top = latest_top_entities(store, day)
    rising = latest_rising(store, day, window_days=7)
    for raw in (top, rising):
        items = json.loads(raw or "[]")
        for rank, item in enumerate(items[:10]):
            weights[item["id"]] = weights.get(item["id"], 0.0) + 1.0 / (1 + rank)
    return weights


def _session_entities(store: Store, now: dt.datetime) -> dict[str, float]:
    """The entities mentioned most in the recent sessions (share of the top one's count)."""
    rows = most_mentioned_between(store, now - dt.timedelta(days=RECENT_SESSION_DAYS), now, 10)
    if not rows:
        return {}
    most = max(n for _, n in rows)
    return {e: n / most for e, n in rows}


def refresh_prefetch(
    store: Store,
    recaller: Recaller,
    run_id: str,
    now: dt.datetime | None = None,
    *,
    limit: int = MAX_PREDICTIONS,
    ttl_hours: float = TTL_HOURS,
) -> PrefetchReport:
    """Predict, search and write the cache; unchanged valid entries are left alone."""
    started = time.perf_counter()
    now = to_utc_naive(now) if now is not None else utcnow()
    report = PrefetchReport(run_id=run_id)
    predictions = predict(store, now, limit=limit)
    report.predictions = len(predictions)
    for p in predictions:
        report.by_source[p.source] = report.by_source.get(p.source, 0) + 1
    # The entry each signature is served from now: the latest valid one.
    existing = {
        r["signature"]: r for r in served_prefetch_entries(store, now).iter_rows(named=True)
    }
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    index = recaller.ready(store)
    for p in predictions:
        ranking = recaller.rank(store, p.query, p.entities, RESULTS_PER_ENTRY, index, p.intent)
        ids = [h.block_id for h in ranking.hits]
        found = {
            "query": p.query,
            "source": p.source,
            "result_ids": json.dumps(ids),
            "scores": json.dumps([round(h.score, 6) for h in ranking.hits]),
            "facts": json.dumps(ranking.basis),
            "run_id": run_id,
        }
        old = existing.get(p.signature)
        if old is None:  # a new entry (an expired one stays, with its hits, for the hit rate)
            inserts.append(
                found | {
                    "id": stable_id("prefetch", p.signature, now.isoformat()),
                    "signature": p.signature,
                    "created_at": now,
                    "expires_at": now + dt.timedelta(hours=ttl_hours),
                    "hits": 0,
                }
            )  # fmt: skip
        elif json.loads(old["result_ids"]) == ids and old["facts"] == found["facts"]:
            report.unchanged += 1
        else:  # the same entry, with what the search finds now (and the facts it rests on)
            updates.append(found | {"id": old["id"]})
    if inserts or updates:
        with store.mutation(run_id, "prefetch") as m:
            if inserts:
                report.written = len(
                    m.insert("prefetch_cache", pl.DataFrame(inserts), action="prefetch",
                             reason="predicted next query")
                )  # fmt: skip
            if updates:
                report.refreshed = m.update_many(
                    "prefetch_cache", pl.DataFrame(updates), action="prefetch-refresh",
                    reason="predicted again; the search finds other blocks, or facts they rest on changed",
                )  # fmt: skip
    report.seconds = time.perf_counter() - started
    return report


def hit_rate(store: Store, since: dt.datetime, until: dt.datetime) -> dict[str, Any]:
    """Of the entries created in [since, until), the share a later recall used; of the recalls
    in the window, the share served from the cache."""
    entries = prefetch_entries_used(store, since, until)
    total, served = recalls_served(store, since, until)
    created = entries.height
    used = int((entries["used"] > 0).sum()) if created else 0
    return {
        "entries_created": created,
        "entries_used": used,
        "entry_hit_rate": round(used / created, 4) if created else None,
        "recalls": total,
        "recalls_from_prefetch": served,
        "recall_hit_rate": round(served / total, 4) if total else None,
    }


def run_prefetch(
    store: Store,
    recaller: Recaller | None = None,
    now: dt.datetime | None = None,
    *,
    limit: int = MAX_PREDICTIONS,
    ttl_hours: float = TTL_HOURS,
    hit_window_hours: float = 24.0,
    dagster_run_id: str | None = None,
) -> PrefetchReport:
    """One prefetch run (kind ``prefetch``): refresh the cache, then measure the hit rate of
    the last ``hit_window_hours``."""
    now = to_utc_naive(now) if now is not None else utcnow()
    recaller = recaller or Recaller()
    with tracked_run(store, "prefetch", {"dagster_run_id": dagster_run_id, "now": now}) as run:
        report = refresh_prefetch(store, recaller, run.id, now, limit=limit, ttl_hours=ttl_hours)
        report.hit_rate = hit_rate(store, now - dt.timedelta(hours=hit_window_hours), now)
        run.stats = report.as_dict()
    return report


def settings_from_env(environ: dict[str, str] | None = None) -> dict[str, float]:
    """``MEMVAULT_PREFETCH_TTL_HOURS`` and ``MEMVAULT_PREFETCH_PREDICTIONS`` (else the defaults)."""
    return {
        "ttl_hours": env_number("MEMVAULT_PREFETCH_TTL_HOURS", TTL_HOURS, environ=environ),
        "limit": env_number("MEMVAULT_PREFETCH_PREDICTIONS", MAX_PREDICTIONS, environ=environ),
    }
