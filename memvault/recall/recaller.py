"""The foreground read path: understand a query, search (or serve what was prefetched), record.

A :class:`Recaller` keeps the search index of one store in memory and refreshes
only what changed before each recall, so a long-lived agent process pays the
index build once. ``memvault.recall`` keeps one per store URL and embedder.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from typing import Any

import numpy as np
import polars as pl

from memvault.config import env_number
from memvault.embed import Embedder, make_embedder
from memvault.errors import QueryError
from memvault.normalize import to_utc_naive, utcnow
from memvault.recall.entities import resolve_owner
from memvault.recall.index import SearchIndex
from memvault.recall.intent import classify_intent
from memvault.recall.log import gap_hint, new_recall_id, write_recall
from memvault.recall.result import CITES, Fact, RecallHit, RecallResult
from memvault.store import Store

#: Candidates taken from the index per result asked, re-ranked with current feedback.
CANDIDATES_PER_RESULT = 4
#: A block's owner feedback (sum of +/-) moves its score this much per point, at most ±3 points.
FEEDBACK_WEIGHT = 0.03
#: Seconds a recall trusts its index before asking the store what changed.
REFRESH_SECONDS = 1.0
#: How far below the memories it cites (or, citing none of the candidates, below every memory
#: found) an insight's score is capped.
INSIGHT_MARGIN = 1e-3
#: Current facts returned about the named entities, at most.
MAX_FACTS = 10

BLOCKS_SQL = """
SELECT id, text, tier, digest_kind, kind, tags, session_id, created_at, feedback_score
FROM blocks WHERE id = ANY(:ids) AND status = 'active'
"""

FACTS_SQL = """
SELECT subject_id, predicate, object, valid_at FROM triples
WHERE subject_id = ANY(:ids) AND expired_at IS NULL AND invalid_at IS NULL AND status = 'active'
ORDER BY CASE {rank} ELSE 99 END, valid_at DESC NULLS LAST, id LIMIT :n
"""
#: Added to the score of a block that states a current fact the query's intent asks for (the
#: owner's employer now, not the one of last spring).
CURRENT_FACT_WEIGHT = 0.3

#: The facts that answer an intent come first (then the newest others).
INTENT_PREDICATES: dict[str, tuple[str, ...]] = {
    "employer_lookup": ("works_at", "has_role"),
    "location_lookup": ("lives_in", "located_in"),
    "project_status": ("project_status", "depends_on"),
    "person_lookup": ("has_role", "works_at", "lives_in", "knows"),
    "dependency_lookup": ("depends_on",),
    "preference_lookup": ("prefers", "interested_in"),
    "howto": ("depends_on", "uses_tool"),
    "tool_usage": ("uses_tool",),
    "concept_lookup": ("related_to",),
}


def facts_sql(intent: str | None) -> str:
    """FACTS_SQL with the intent's predicates ranked first (constants, never user input)."""
    preds = INTENT_PREDICATES.get(intent or "", ())
    rank = " ".join(f"WHEN predicate = '{p}' THEN {k}" for k, p in enumerate(preds))
    return FACTS_SQL.format(rank=rank or "WHEN FALSE THEN 0")


PREFETCH_SQL = """
SELECT id, result_ids, scores FROM prefetch_cache
WHERE signature = :s AND expires_at > :now AND created_at <= :now
ORDER BY created_at DESC, id LIMIT 1
"""


def refresh_interval(environ: dict[str, str] | None = None) -> float:
    """Seconds a recall trusts the index without asking the store what changed
    (``MEMVAULT_RECALL_REFRESH_S``, default 1; 0 asks before every recall)."""
    return env_number(
        "MEMVAULT_RECALL_REFRESH_S", REFRESH_SECONDS, environ=environ, allow_zero=True
    )


def signature_of(intent: str | None, entity_ids: list[str]) -> str:
    """``intent|sorted entity ids``: what knowledge gaps and prefetch match recalls by."""
    return f"{intent or '-'}|{','.join(sorted(entity_ids))}"


def blocks_by_id(store: Store, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The current rows of the active blocks among ``ids``."""
    if not ids:
        return {}
    return {r["id"]: r for r in store.fetch_df(BLOCKS_SQL, {"ids": ids}).iter_rows(named=True)}


class Recaller:
    """Search and recall over one store; the index stays in memory between calls."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        embedder_spec: str | None = None,
        refresh_seconds: float | None = None,
    ) -> None:
        self._embedder = embedder
        self._spec = embedder_spec
        self.refresh_seconds = (
            refresh_seconds if refresh_seconds is not None else refresh_interval()
        )
        self.index: SearchIndex | None = None
        self._checked = 0.0

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self._spec)
        return self._embedder

    @property
    def model(self) -> str:
        return self.embedder.model_name

    def mark_stale(self) -> None:
        """Ask the store what changed before the next recall (this process just wrote to it)."""
        self._checked = float("-inf")

    def ready(self, store: Store) -> SearchIndex:
        """The index, built on first use and brought up to date with the store."""
        if self.index is None:
            self.index = SearchIndex.build(store, self.model)
        elif time.monotonic() - self._checked >= self.refresh_seconds:
            self.index = self.index.refresh(store)
        self._checked = time.monotonic()
        return self.index

    # -- understanding ------------------------------------------------------------------------

    def understand(
        self, store: Store, query: str, index: SearchIndex | None = None
    ) -> tuple[str | None, list[str], dict[str, str]]:
        """(intent, entity ids, names) of a query."""
        index = index or self.ready(store)
        match = index.matcher.match(query)
        intent = classify_intent(match.rest)
        ids = resolve_owner(match, intent, index.matcher.owner)
        names = {i: index.matcher.by_id[i].name for i in ids if i in index.matcher.by_id}
        return intent, ids, names

    # -- searching ----------------------------------------------------------------------------

    def search(
        self,
        store: Store,
        query: str,
        entity_ids: list[str],
        limit: int,
        index: SearchIndex | None = None,
        current: tuple[str, ...] = (),
    ) -> tuple[list[RecallHit], str]:
        """The best ``limit`` active blocks and the search mode (hybrid or keywords); a block
        that states one of the ``current`` fact objects ranks higher."""
        index = index or self.ready(store)
        vector = None
        if index.has_vectors:
            vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        candidates = index.score(query, vector, entity_ids, limit * CANDIDATES_PER_RESULT)
        rows = blocks_by_id(store, [b for b, _ in candidates])
        hits = [
            RecallHit(
                block_id=bid,
                text=row["text"],
                tier=row["tier"],
                digest_kind=row["digest_kind"],
                kind=row["kind"],
                cites=cited_blocks(row),
                score=round(
                    score
                    + FEEDBACK_WEIGHT * float(np.clip(row["feedback_score"] or 0, -3, 3))
                    + CURRENT_FACT_WEIGHT * _states_any(row["text"], current),
                    6,
                ),
                session_id=row["session_id"],
                created_at=row["created_at"],
            )
            for bid, score in candidates
            if (row := rows.get(bid)) is not None
        ]
        hits = rank_insights_below_sources(hits)
        hits.sort(key=lambda h: (-h.score, h.block_id))
        return hits[:limit], "hybrid" if vector is not None else "keywords"

    # -- recalling ----------------------------------------------------------------------------

    def recall(
        self,
        store: Store,
        query: str,
        *,
        limit: int = 5,
        session_id: str | None = None,
        now: dt.datetime | None = None,
        facts: bool = True,
        record: bool = True,
    ) -> RecallResult:
        """Answer ``query`` and record it (recall_log, block access), unless ``record`` is False.

        Raises :class:`QueryError` (nothing recorded) for a query :func:`check_query` refuses."""
        check_query(query)
        started = time.perf_counter()
        now = to_utc_naive(now) if now is not None else utcnow()
        if limit < 1:
            raise ValueError("limit must be at least 1")
        previous = self.index
        index = self.ready(store)
        built_ms = (time.perf_counter() - started) * 1000 if index is not previous else 0.0
        intent, entity_ids, names = self.understand(store, query, index)
        signature = signature_of(intent, entity_ids)
        result = RecallResult(
            recall_id=new_recall_id(now),
            query=query,
            signature=signature,
            intent=intent,
            entities=entity_ids,
            entity_names=names,
            index_build_ms=round(built_ms, 3),
        )
        cached = store.fetch(PREFETCH_SQL, {"s": signature, "now": now})
        if cached:
            prefetch_id, ids = cached[0][0], json.loads(cached[0][1] or "[]")
            score_list = json.loads(cached[0][2] or "[]")
            rows = blocks_by_id(store, ids[:limit])
            result.results = [
                RecallHit(
                    block_id=bid,
                    text=row["text"],
                    tier=row["tier"],
                    digest_kind=row["digest_kind"],
                    kind=row["kind"],
                    cites=cited_blocks(row),
                    score=float(score_list[k]) if k < len(score_list) else 0.0,
                    session_id=row["session_id"],
                    created_at=row["created_at"],
                )
                for k, bid in enumerate(ids[:limit])
                if (row := rows.get(bid)) is not None
            ]
            result.served_from_prefetch = True
            result.prefetch_id = str(prefetch_id)
            result.search_mode = "prefetched"
        asked = INTENT_PREDICATES.get(intent or "", ())
        if facts and entity_ids:
            frame = store.fetch_df(facts_sql(intent), {"ids": entity_ids, "n": MAX_FACTS})
            result.facts = [Fact(**r) for r in frame.iter_rows(named=True)]
        if not result.served_from_prefetch:
            current = tuple(f.object for f in result.facts if f.predicate in asked)
            result.results, result.search_mode = self.search(
                store, query, entity_ids, limit, index, current
            )
        result.gap_hint = gap_hint(store, signature)
        result.latency_ms = (time.perf_counter() - started) * 1000
        if record:
            write_recall(store, result, session_id, now)
        return result


def cited_blocks(row: dict[str, Any]) -> list[str]:
    """The source blocks an insight cites (its ``cites:`` tags); empty for a memory."""
    if row.get("kind") != "insight":
        return []
    try:
        tags = json.loads(row.get("tags") or "[]")
    except json.JSONDecodeError:
        return []
    return [t[len(CITES) :] for t in tags if isinstance(t, str) and t.startswith(CITES)]


def rank_insights_below_sources(hits: list[RecallHit]) -> list[RecallHit]:
    """An insight never outranks the memories it rests on: its score is capped just below the
    lowest-scoring memory among the candidates that it cites, or, when it cites none of them,
    just below the lowest-scoring memory found (nothing to compare it with is no reason to
    trust it more)."""
    memories = {h.block_id: h.score for h in hits if h.kind != "insight"}
    if not memories:
        return hits
    out = []
    for hit in hits:
        if hit.kind == "insight":
            cited = [memories[b] for b in hit.cites if b in memories]
            cap = min(cited or memories.values()) - INSIGHT_MARGIN
            hit = hit.model_copy(update={"score": round(min(hit.score, cap), 6)})
        out.append(hit)
    return out


def _states_any(text: str, objects: tuple[str, ...]) -> bool:
    folded = text.casefold()
    return any(o.casefold() in folded for o in objects if len(o) >= 3)


#: One recaller per (store URL, embedder spec) in this process.
_RECALLERS: dict[tuple[str, str | None], Recaller] = {}


#: The longest query ``recall`` takes, in characters: a longer one is refused, not cut.
MAX_QUERY_CHARS = 2000


def check_query(query: str) -> None:
    """Refuse a query before anything is searched or recorded: empty or blank, longer than
    ``MAX_QUERY_CHARS``, or not text (a byte that is no UTF-8, passed on as a surrogate)."""
    if not isinstance(query, str) or not query.strip():
        raise QueryError("the query is empty: say what to recall")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(
            f"the query has {len(query):,} characters; recall takes at most {MAX_QUERY_CHARS:,}"
        )
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as bad:
        raise QueryError(
            f"the query is not valid text (character {bad.start + 1} is a byte that is no UTF-8)"
        ) from None


def recaller_for(store: Store, embedder_spec: str | None = None) -> Recaller:
    """The process's recaller for ``store`` (its index is kept between calls)."""
    spec = embedder_spec or os.environ.get("MEMVAULT_EMBEDDER")
    key = (store.url, spec)
    if key not in _RECALLERS:
        _RECALLERS[key] = Recaller(embedder_spec=spec)
    return _RECALLERS[key]


def frame_of(results: list[RecallHit]) -> pl.DataFrame:
    """The hits as a frame (for printing or analysis)."""
    return pl.DataFrame([h.model_dump() for h in results])
