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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from memvault.config import env_number
from memvault.embed import Embedder, make_embedder
from memvault.errors import QueryError
from memvault.normalize import normalize_text, to_utc_naive, utcnow
from memvault.recall.attention import attention
from memvault.recall.currency import (
    CURRENT_FACT_WEIGHT,
    INTENT_PREDICATES,
    STALE_FACTOR,
    Currency,
    FactsCache,
)
from memvault.recall.entities import resolve_owner
from memvault.recall.index import SearchIndex
from memvault.recall.intent import classify_intent
from memvault.recall.log import gap_hint, new_recall_id, write_recall
from memvault.recall.relevance import TOP, Evidence, evidence
from memvault.recall.result import CITES, Fact, RecallHit, RecallResult
from memvault.recall.slots import FACT_COLUMNS as SLOT_FACT_COLUMNS
from memvault.recall.slots import Slot, fact_value, slot_of
from memvault.recall.slots import apply as apply_slot
from memvault.recall.text import words
from memvault.store import Store
from memvault.store.queries.recall import served_prefetch_entry
from memvault.store.queries.triples import current_facts_of, facts_of_subjects

#: Candidates taken from the index per result asked, re-ranked with current feedback.
CANDIDATES_PER_RESULT = 4
#: A block's owner feedback (sum of +/-) moves its score this much per point, at most ±3 points.
FEEDBACK_WEIGHT = 0.03
#: Seconds a recall trusts its index (and the facts it has read) before asking the store
#: what changed.
REFRESH_SECONDS = 1.0
#: How far below the memories it cites (or, citing none of the candidates, below every memory
#: found) an insight's score is capped.
INSIGHT_MARGIN = 1e-3
#: What a word-for-word repeat of a better-ranked memory keeps of its score.
REPEAT_FACTOR = 0.5
#: Current facts returned about the named entities, at most.
MAX_FACTS = 10
#: Blocks that mention a slot question's subject and one of the slot's values made candidates,
#: at most (see slots.py).
SLOT_CANDIDATES = 50
#: Candidates re-ranked at least, whatever the limit: a recall asking for 5 and the prefetch
#: keeping 10 re-rank the same candidates, so a prefetched ranking is the one a search gives.
MIN_CANDIDATES = 40


def refresh_interval(environ: dict[str, str] | None = None) -> float:
    """Seconds a recall trusts the index without asking the store what changed
    (``MEMVAULT_RECALL_REFRESH_S``, default 1; 0 asks before every recall)."""
    return env_number(
        "MEMVAULT_RECALL_REFRESH_S", REFRESH_SECONDS, environ=environ, allow_zero=True
    )


def signature_of(intent: str | None, entity_ids: list[str]) -> str:
    """``intent|sorted entity ids``: what knowledge gaps and prefetch match recalls by."""
    return f"{intent or '-'}|{','.join(sorted(entity_ids))}"


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
        self.facts = FactsCache()
        #: What the owner attends to now (the latest daily snapshot), read again whenever the
        #: index asks the store what changed.
        self._attention: dict[str, float] | None = None
        #: Whether the facts cache is being trusted for the call under way (a recall: it was
        #: checked with the index, see ready; a ranking outside a recall checks it itself).
        self._facts_checked = False

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
        """The index, built on first use and brought up to date with the store (with the
        facts cache and the owner's attention: what changed since the last look)."""
        if self.index is None:
            self.index = SearchIndex.build(store, self.model)
        elif time.monotonic() - self._checked >= self.refresh_seconds:
            self.index = self.index.refresh(store)
        else:
            return self.index
        self.facts.check(store)
        self._attention = None
        self._checked = time.monotonic()
        return self.index

    def attention(self, store: Store) -> dict[str, float]:
        """Entity id -> the fresh bias of a memory mentioning it (see
        :mod:`memvault.recall.attention`)."""
        if self._attention is None:
            self._attention = attention(store, utcnow().date())
        return self._attention

    def currency(
        self, store: Store, entity_ids: list[str], intent: str | None, block_ids: Sequence[str] = ()
    ) -> Currency:
        """The currency of a ranking, the named entities' facts taken from the cache."""
        if not self._facts_checked:
            self.facts.check(store)
        return self.facts.currency(store, entity_ids, intent, block_ids)

    def slot_facts(self, store: Store, entity_id: str, slot: Slot) -> list[dict[str, Any]]:
        """The facts of ``entity_id`` that state a value of ``slot`` (see slots.py), cached
        until a fact changes."""
        if not self._facts_checked:
            self.facts.check(store)
        key = ("slot", entity_id, slot.name)
        if (rows := self.facts.entries.get(key)) is None:
            found = facts_of_subjects(
                store, [entity_id], list(slot.all_predicates), SLOT_FACT_COLUMNS
            ).to_dicts()
            rows = self.facts.entries[key] = [r for r in found if fact_value(slot, r)]
        return list(rows)

    def entity_facts(self, store: Store, entity_ids: list[str], intent: str | None) -> list[Fact]:
        """The named entities' current facts a recall returns (the intent's first), cached."""
        if not self._facts_checked:
            self.facts.check(store)
        key = ("facts", tuple(entity_ids), intent)
        if (facts := self.facts.entries.get(key)) is None:
            first = INTENT_PREDICATES.get(intent or "", ())
            frame = current_facts_of(store, entity_ids, first, MAX_FACTS)
            facts = self.facts.entries[key] = [Fact(**r) for r in frame.iter_rows(named=True)]
        return [f.model_copy() for f in facts]

    # -- understanding ------------------------------------------------------------------------

    def understand(
        self, store: Store, query: str, index: SearchIndex | None = None
    ) -> tuple[str | None, list[str], dict[str, str]]:
        """(intent, entity ids, names) of a query."""
        index = index or self.ready(store)
        match = index.matcher.match(query)
        intent = classify_intent(match.rest)
        ids = resolve_owner(
            match, intent, index.matcher.owner, speaker_named=index.names_a_speaker(query)
        )
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
        intent: str | None = None,
    ) -> tuple[list[RecallHit], str]:
        """The best ``limit`` active blocks and the search mode (hybrid or keywords)."""
        ranking = self.rank(store, query, entity_ids, limit, index, intent)
        return ranking.hits, ranking.mode

    def rank(
        self,
        store: Store,
        query: str,
        entity_ids: list[str],
        limit: int,
        index: SearchIndex | None = None,
        intent: str | None = None,
    ) -> Ranking:
        """The best ``limit`` active blocks, the search mode and the facts the ranking rests on.

        A block's score is the index's, plus its owner feedback, plus the fresh bias of what the
        owner attends to now (:mod:`memvault.recall.attention`), plus ``CURRENT_FACT_WEIGHT``
        when it states a current fact the ``intent`` asks for; a block whose facts have all
        been superseded is multiplied by ``STALE_FACTOR``; the blocks that state a current fact
        the intent asks for come first (see :mod:`memvault.recall.currency`).
        The blocks that state a current fact asked for are re-ranked even when the words of the
        query miss them."""
        index = index or self.ready(store)
        vector = None
        if index.has_vectors:
            vector = np.asarray(
                self.embedder.embed([index.vector_query(query)])[0], dtype=np.float32
            )
        currency = self.currency(store, entity_ids, intent)
        want = max(limit, MIN_CANDIDATES // CANDIDATES_PER_RESULT) * CANDIDATES_PER_RESULT
        slot = slot_of(query)
        subject = slot_subject(index, query, entity_ids) if slot is not None else None
        include: Sequence[str] = currency.sources_of_current
        if slot is not None and subject is not None and subject.entity is not None:
            values = slot.value_entities(index.matcher)
            if extra := index.co_mentioning(subject.entity, values, SLOT_CANDIDATES):
                include = [*include, *extra]
        candidates = index.score(
            query,
            vector,
            entity_ids,
            want,
            include=include,
            include_mentioning=currency.current_objects,
        )
        candidates, hidden = self.set_aside(index, currency, candidates, want)
        rows = index.rows([b for b, _ in candidates])
        currency.add_blocks(store, list(rows))
        hits = []
        current: set[str] = set()
        subject_words = name_words(index, entity_ids)
        fresh = index.mentioning(list(rows), self.attention(store))
        for bid, score in candidates:
            if (row := rows.get(bid)) is None:
                continue
            states = currency.states_current(bid, row["text"])
            total = score + FEEDBACK_WEIGHT * clip_feedback(row["feedback_score"])
            total += fresh.get(bid, 0.0)
            total += CURRENT_FACT_WEIGHT * states
            since = currency.superseded_since(bid, row["text"])
            if since is not None and total > 0:
                total *= STALE_FACTOR
            if states and currency.answers(bid, row["text"], subject_words):
                current.add(bid)
            hits.append(hit_of(row, total, since))
        hits = repeats_lowered(hits)
        hits, lifted = rank_current_first(hits, current, hidden)
        hits = rank_insights_below_sources(hits, lifted)
        if slot is not None and subject is not None:
            about = subject.about(index, hits)
            facts = self.slot_facts(store, subject.entity, slot) if subject.entity else []
            hits = apply_slot(slot, hits, about, subject.words, facts)
        hits.sort(key=lambda h: (-h.score, h.block_id))
        hits = hits[:limit]
        first = [h.block_id for h in hits[:TOP]]
        found = evidence(
            index.main.keywords,
            query,
            [h.text for h in hits[:TOP]],
            index.vectors_of(first) if vector is not None else None,
            vector,
        )
        return Ranking(hits, "hybrid" if vector is not None else "keywords", currency, found)

    @staticmethod
    def set_aside(
        index: SearchIndex, currency: Currency, candidates: list[tuple[str, float]], keep: int
    ) -> tuple[list[tuple[str, float]], dict[str, float]]:
        """The candidates to read in full, and the final scores of those set aside.

        A question about the owner makes every block stating one of their thousands of facts a
        candidate. Such a block's final score needs no reading of it: it states a current fact
        (it is its source), so it gets ``CURRENT_FACT_WEIGHT``, is not stale and comes first
        with the others that do; only its feedback and whether it is an insight are read, for
        the few blocks that have feedback or are insights. Of these blocks, the best ``keep``
        memories by that score are read (so the best ``limit`` are unchanged); the others are
        set aside with their score, which still counts where every candidate's does (how far
        the current ones are lifted, the cap of the insights)."""
        sources = [(b, s) for b, s in candidates if currency.is_current_source(b)]
        if len(sources) <= keep:
            return candidates, {}
        insights = index.insights()
        marked = {b: ("insight", index.feedback.get(b, 0.0)) for b in insights}
        marked.update({b: ("memory", v) for b, v in index.feedback.items() if b not in insights})
        ids = [b for b, _ in sources]
        feedback = np.zeros(len(ids), dtype=np.float64)
        memory = np.ones(len(ids), dtype=bool)  # an insight is read in full: its score is capped
        for at, bid in enumerate(ids):
            if (mark := marked.get(bid)) is not None:
                memory[at] = mark[0] != "insight"
                feedback[at] = clip_feedback(mark[1])
        total = np.asarray([s for _, s in sources], dtype=np.float64)
        total = total + FEEDBACK_WEIGHT * feedback + CURRENT_FACT_WEIGHT
        rows = np.flatnonzero(memory)
        rounded = np.round(total[rows], 6)  # as a hit's score is rounded
        # best first, ties by id (as sorting (-score, id) pairs would order them)
        order = rows[np.lexsort((np.asarray(ids, dtype=str)[rows], -rounded))]
        score_of = dict(zip(rows.tolist(), rounded.tolist(), strict=True))
        hidden = {ids[at]: score_of[at] for at in order[keep:].tolist()}
        return [(b, s) for b, s in candidates if b not in hidden], hidden

    def prefetched(
        self,
        store: Store,
        index: SearchIndex,
        entry: tuple[Any, ...],
        entity_ids: list[str],
        intent: str | None,
        limit: int,
    ) -> list[RecallHit] | None:
        """The hits of a prefetched entry, or None when it must not be served: it records no
        facts (written before they were recorded), a fact it rests on changed or a new one of
        the same entity and predicate was recorded since, or one of its blocks is gone."""
        _, result_ids, scores, facts = entry
        if facts is None:
            return None
        ids = json.loads(result_ids or "[]")
        score_list = json.loads(scores or "[]")
        currency = self.currency(store, entity_ids, intent, ids)
        if currency.basis(ids) != json.loads(facts):
            return None
        rows = index.rows(ids[:limit])
        if len(rows) < len(ids[:limit]):
            return None
        return [
            hit_of(
                rows[bid],
                float(score_list[k]) if k < len(score_list) else 0.0,
                currency.superseded_since(bid, rows[bid]["text"]),
            )
            for k, bid in enumerate(ids[:limit])
        ]

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

        Raises :class:`QueryError` (nothing recorded) for a query :func:`check_query` refuses.
        The query is normalized as all text entering the store is (control characters such as
        NUL dropped, which PostgreSQL cannot store), so every recall answered is recorded."""
        check_query(query)
        query = normalize_text(query)
        check_query(query)  # what is left once control characters are dropped
        started = time.perf_counter()
        self._facts_checked = True  # with the index, as often (see ready)
        try:
            return self._recall(store, query, limit, session_id, now, facts, record, started)
        finally:
            self._facts_checked = False

    def _recall(
        self,
        store: Store,
        query: str,
        limit: int,
        session_id: str | None,
        now: dt.datetime | None,
        facts: bool,
        record: bool,
        started: float,
    ) -> RecallResult:
        """The body of :meth:`recall`, the facts cache checked."""
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
        # A question that names nothing is answered by its words, which its signature does
        # not hold: a prefetched answer for "-|" would answer every such question alike (and
        # miss what was remembered since it was made).
        cached = served_prefetch_entry(store, signature, now) if entity_ids else None
        served = (
            self.prefetched(store, index, cached, entity_ids, intent, limit) if cached else None
        )
        if served is not None and cached is not None:
            result.results = served
            result.served_from_prefetch = True
            result.prefetch_id = str(cached[0])
            result.search_mode = "prefetched"
        if facts and entity_ids:
            result.facts = self.entity_facts(store, entity_ids, intent)
        if not result.served_from_prefetch:
            ranking = self.rank(store, query, entity_ids, limit, index, intent)
            result.results, result.search_mode = ranking.hits, ranking.mode
            if ranking.evidence is not None:
                result.weak_match = ranking.evidence.weak(index.model)
        result.gap_hint = gap_hint(store, signature)
        result.latency_ms = (time.perf_counter() - started) * 1000
        if record:
            write_recall(store, result, session_id, now)
        return result


@dataclass
class Ranking:
    """What a search found, how, and the facts its order rests on (triple id → state; worked
    out when asked: a prefetch records it, a recall does not need it)."""

    hits: list[RecallHit]
    mode: str
    currency: Currency | None = None
    #: How well the first hits match the query (see :mod:`memvault.recall.relevance`).
    evidence: Evidence | None = None

    @property
    def basis(self) -> dict[str, str]:
        if self.currency is None:
            return {}
        return self.currency.basis([h.block_id for h in self.hits])


def hit_of(row: dict[str, Any], score: float, superseded_since: dt.datetime | None) -> RecallHit:
    """A block's row as a hit."""
    return RecallHit(
        block_id=row["id"],
        text=row["text"],
        tier=row["tier"],
        digest_kind=row["digest_kind"],
        original_archived=bool(row.get("original_archived")),
        kind=row["kind"],
        cites=cited_blocks(row),
        score=round(score, 6),
        session_id=row["session_id"],
        created_at=row["created_at"],
        superseded_since=superseded_since,
    )


@dataclass(frozen=True)
class Subject:
    """Whom a question about a slot asks about: an entity, or a speaker that is none."""

    entity: str | None
    speaker: tuple[str, ...] | None
    words: frozenset[str]

    def about(self, index: SearchIndex, hits: list[RecallHit]) -> set[str]:
        """Those of ``hits`` that mention the subject, that it said, or whose text names it
        (a memory kept today, not yet read for the entities it mentions)."""
        ids = [h.block_id for h in hits]
        found = {h.block_id for h in hits if self.words & set(words(h.text))}
        if self.entity is not None:
            found |= set(index.mentioning(ids, {self.entity: 1.0}))
        if self.speaker is not None:
            found |= index.said(self.speaker, ids)
        return found


def slot_subject(index: SearchIndex, query: str, entity_ids: list[str]) -> Subject | None:
    """Whom a question about a slot asks about: a person of ``entity_ids`` it names, else a
    speaker it names who is no entity, else the person it implies (the owner), else the one
    entity it is about."""
    named = set(index.matcher.match(query).ids)
    people = [e for e in entity_ids if (n := index.matcher.by_id.get(e)) and n.entity_type == "person"]  # fmt: skip
    people.sort(key=lambda e: e not in named)  # named first, the implied owner after
    if people and people[0] in named:
        return Subject(people[0], None, frozenset(name_words(index, people[:1])))
    if speakers := index.speakers_asked(query, entity_ids):
        return Subject(None, speakers[0], frozenset(w for w in speakers[0] if len(w) >= 3))
    if people:
        return Subject(people[0], None, frozenset(name_words(index, people[:1])))
    if len(entity_ids) == 1:
        return Subject(entity_ids[0], None, frozenset(name_words(index, entity_ids)))
    return None


def name_words(index: SearchIndex, entity_ids: list[str]) -> set[str]:
    """The words (three letters or more, lower case) of the named entities' names: how a
    memory names them ("Ada" for Ada Lovelace)."""
    out: set[str] = set()
    for eid in entity_ids:
        if (entity := index.matcher.by_id.get(eid)) is not None:
            out.update(w for w in words(entity.name) if len(w) >= 3)
    return out


class _Lifted(Mapping[str, float]):
    """Scores lifted by ``lift`` (rounded as a hit's score), read when asked: thousands of
    current memories are set aside per owner question, and only an insight's cap looks at
    them."""

    def __init__(self, scores: Mapping[str, float], lift: float) -> None:
        self.scores, self.lift = scores, lift

    def __getitem__(self, block_id: str) -> float:
        return round(self.scores[block_id] + self.lift, 6)

    def __iter__(self) -> Iterator[str]:
        return iter(self.scores)

    def __len__(self) -> int:
        return len(self.scores)


def repeats_lowered(hits: list[RecallHit]) -> list[RecallHit]:
    """A memory said again word for word (case and spacing aside) ranks at ``REPEAT_FACTOR``
    of its score after its best-scoring copy: the agent gets one copy and the next memory, not
    the same line three times."""
    seen: set[str] = set()
    out = []
    for hit in sorted(hits, key=lambda h: (-h.score, h.block_id)):
        key = " ".join(hit.text.casefold().split())
        if key in seen and hit.score > 0:
            hit = hit.model_copy(update={"score": round(hit.score * REPEAT_FACTOR, 6)})
        seen.add(key)
        out.append(hit)
    return out


def rank_current_first(
    hits: list[RecallHit], current: set[str], hidden: Mapping[str, float] | None = None
) -> tuple[list[RecallHit], Mapping[str, float]]:
    """The memories that state a current fact the question asks for (``current``) come first,
    in their own order: they answer it, however many of the question's words the others share
    ("where does Ada work": the block saying she joined Tyrell Systems, before the notes about
    working from Madrid). So a memory whose facts were superseded always ranks below them.
    ``hidden``: the scores of current memories set aside (not read), lifted alike."""
    hidden = hidden or {}
    if not current:
        return hits, hidden
    others = [h.score for h in hits if h.block_id not in current]
    scores = [h.score for h in hits if h.block_id in current]
    lowest = min([*scores, *hidden.values()], default=None)
    if lowest is None or not others or lowest > max(others):
        return hits, hidden
    lift = max(others) - lowest + INSIGHT_MARGIN
    lifted = [
        h.model_copy(update={"score": round(h.score + lift, 6)}) if h.block_id in current else h
        for h in hits
    ]
    return lifted, _Lifted(hidden, lift)


def clip_feedback(value: float | None) -> float:
    """A block's owner feedback, counted up to ±3 points."""
    return float(min(max(value or 0, -3), 3))


def cited_blocks(row: dict[str, Any]) -> list[str]:
    """The source blocks an insight cites (its ``cites:`` tags); empty for a memory."""
    if row.get("kind") != "insight":
        return []
    try:
        tags = json.loads(row.get("tags") or "[]")
    except json.JSONDecodeError:
        return []
    return [t[len(CITES) :] for t in tags if isinstance(t, str) and t.startswith(CITES)]


def rank_insights_below_sources(
    hits: list[RecallHit], hidden: Mapping[str, float] | None = None
) -> list[RecallHit]:
    """An insight never outranks the memories it rests on: its score is capped just below the
    lowest-scoring memory among the candidates that it cites, or, when it cites none of them,
    just below the lowest-scoring memory found (nothing to compare it with is no reason to
    trust it more). ``hidden``: the scores of memories set aside (candidates, not read)."""
    if not any(h.kind == "insight" for h in hits):
        return hits
    memories = {**(hidden or {}), **{h.block_id: h.score for h in hits if h.kind != "insight"}}
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
