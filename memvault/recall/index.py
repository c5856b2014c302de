"""The in-memory search index of a long-lived process: keywords, vectors, mentions.

Built once from the store (active blocks, their current vectors of one model,
which entities each block mentions); afterwards :meth:`SearchIndex.refresh`
reads only what changed since: blocks created, updated or re-tiered later, new
vectors, status changes. What changed is found by change, not by time alone: the rows at the
latest time read are remembered (:class:`Seen`), so a bulk write that stamps thousands of
rows with one time is read once, not again at every refresh, and a row stamped with an
earlier time whose transaction committed later is found by the count of active blocks. Changed and new blocks go to a small second segment
(scored with the main segment's term statistics) and their old rows are masked;
when that segment grows past a fifth of the main one, the index is rebuilt. The reply links
(:mod:`memvault.recall.context`) of the sessions a changed block belongs to are read again,
so a new turn answers a question (old or new) as it would after a rebuild.

Each block is indexed by what it says, not by what its tier shows: a cold or frozen
block by the original text its digest stands in for (``block_originals``, see
:data:`memvault.store.queries.recall.SEARCH_TEXTS_SQL`), keywords and vector alike. A vector
counts only while it was made from that text (its ``text_hash`` equals md5 of it), so a
block is never found by the vector of a text it no longer has. A change that moves none of ``created_at``,
``updated_at``, ``tiered_at`` or ``status`` is seen at the next rebuild.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from memvault.recall.context import (
    is_question,
    questions_answered,
    replies_in_sessions,
    with_questions_lowered,
    with_replies,
)
from memvault.recall.dates import days_asked, days_meant, with_dates
from memvault.recall.entities import EntityMatcher
from memvault.recall.expand import Links, expand
from memvault.recall.fusion import Signals, fuse_parts
from memvault.recall.keywords import KeywordIndex
from memvault.recall.speakers import (
    person_words,
    said_by,
    speaker_mentions,
    speakers_named,
    without_people,
)
from memvault.store import Store
from memvault.store.queries import recall as recall_rows
from memvault.store.queries.blocks import active_block_ids, inactive_block_ids, sessions_of
from memvault.store.queries.recall import CHANGE_TIMES

#: A list of ids this long or longer has its rows kept (see :meth:`Segment.rows_of`).
MEMO_ROWS = 256
#: The second segment is folded into a rebuild past this share of the main one.
REBUILD_SHARE = 0.2


def fingerprint(store: Store, model: str) -> tuple[Any, ...]:
    """blocks (count, max created, updated, tiered, active), block vectors (count, max created),
    entities and mentions counts, the rated blocks (count and a checksum of their feedback):
    one cheap query that tells whether anything changed."""
    b, e, n, f = recall_rows.index_fingerprint_rows(store, model)
    return (b[1], b[2], b[3], b[4], b[5], e[1], e[2], n[1], n[5], f[1], f[5])


_EPOCH = dt.datetime(1970, 1, 1)


@dataclass
class Segment:
    """Documents with their keyword weights, vectors (if any) and entity mentions."""

    ids: list[str]
    keywords: KeywordIndex
    vectors: np.ndarray | None
    has_vector: np.ndarray
    live: np.ndarray
    mentions: dict[str, np.ndarray]
    _rows: dict[str, int] | None = field(default=None, repr=False)
    #: Per block, the row of the question it replies to (-1: none), counted over the main
    #: segment followed by the second one (a new turn may answer an old question).
    asked: np.ndarray | None = None
    #: Per block, whether it is a question (see context.py).
    question: np.ndarray | None = None
    #: Per speaker (lower-case name words), the rows of the blocks they said.
    said: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict)
    #: Per day, the rows of the blocks written that day or meaning it (see dates.py).
    days: dict[dt.date, np.ndarray] = field(default_factory=dict)
    #: What each block shows (:data:`SHOWN_COLUMNS`), row for row.
    shown: pl.DataFrame | None = None
    #: The last long list of ids :meth:`rows_of` looked up, and its rows.
    _memo: tuple[Sequence[str], np.ndarray] | None = field(default=None, repr=False)

    @property
    def size(self) -> int:
        return len(self.ids)

    def row_of(self, block_id: str) -> int | None:
        """The row of a block id (the map is built on first use; ids never change)."""
        if self._rows is None:
            self._rows = {b: i for i, b in enumerate(self.ids)}
        return self._rows.get(block_id)

    def rows_of(self, block_ids: Sequence[str]) -> np.ndarray:
        """The rows of ``block_ids`` (-1 for an id not in the segment), in one pass. The rows
        of the last long list asked for are kept: an owner question passes the same list of
        thousands of blocks (those stating the owner's current facts) recall after recall."""
        if self._memo is not None and self._memo[0] is block_ids:
            return self._memo[1]
        if self._rows is None:
            self._rows = {b: i for i, b in enumerate(self.ids)}
        get = self._rows.get
        rows = np.fromiter((get(b, -1) for b in block_ids), dtype=np.int64, count=len(block_ids))
        if len(block_ids) >= MEMO_ROWS:
            self._memo = (block_ids, rows)
        return rows


@dataclass
class Marks:
    """What the store looked like when the index last read it."""

    values: tuple[Any, ...] = ()

    @property
    def created(self) -> dt.datetime:
        return self.values[1] or _EPOCH

    @property
    def updated(self) -> dt.datetime:
        return self.values[2] or _EPOCH

    @property
    def tiered(self) -> dt.datetime:
        return self.values[3] or _EPOCH

    @property
    def active(self) -> int:
        return int(self.values[4] or 0)

    @property
    def vectors(self) -> int:
        return int(self.values[5] or 0)

    @property
    def vectors_at(self) -> dt.datetime:
        return self.values[6] or _EPOCH

    @property
    def entities(self) -> int:
        return int(self.values[7] or 0)

    @property
    def feedback(self) -> tuple[Any, ...]:
        return self.values[9:11]


@dataclass
class Seen:
    """Per change time (a block's ``created_at``, ``updated_at``, ``tiered_at``; a vector's
    ``created_at``), the latest value the index has read and the rows it read at exactly
    that value.

    A bulk write stamps thousands of rows with one time (tiering, an import, an embedding
    batch). Reading again every row at the latest time (``>=``) would read them all at every
    refresh, and past a fifth of the store rebuild the index after each write; reading only
    later times (``>``) would miss a row stamped with the same time whose transaction
    committed later. So a refresh reads the keys at and after the latest time, and takes the
    rows it has not seen."""

    at: dict[str, dt.datetime] = field(default_factory=dict)
    ids: dict[str, set[str]] = field(default_factory=dict)

    def since(self, column: str) -> dt.datetime:
        return self.at.get(column) or _EPOCH

    def new(self, column: str, key: str, value: dt.datetime | None) -> bool:
        """Whether a row with this time was not read yet."""
        if value is None:
            return False
        mark = self.at.get(column)
        return mark is None or value > mark or (value == mark and key not in self.ids[column])

    def update(self, column: str, rows: list[tuple[str, dt.datetime | None]]) -> None:
        """Note the rows read: ``rows`` holds every row at or after the latest time."""
        values = [v for _, v in rows if v is not None]
        if not values:
            return
        latest = max(values)
        if column in self.at and latest < self.at[column]:
            return
        self.at[column] = latest
        self.ids[column] = {k for k, v in rows if v == latest}

    @classmethod
    def at_marks(cls, store: Store, marks: Marks, model: str) -> Seen:
        """The rows at the latest times of ``marks`` (read before the index reads the blocks,
        so every row noted is in what it reads)."""
        seen = cls()
        latest = dict(zip(CHANGE_TIMES, (marks.values[1], marks.values[2], marks.values[3]), strict=True))  # fmt: skip
        wanted = {c: v for c, v in latest.items() if v is not None}
        if wanted:
            rows = recall_rows.blocks_at_times(store, wanted)
            for k, column in enumerate(CHANGE_TIMES, 1):
                if latest[column] is not None:
                    seen.update(column, [(r[0], r[k]) for r in rows if r[k] == latest[column]])
        if marks.values[6] is not None:
            rows = recall_rows.block_vectors_made_at(store, model, marks.values[6])
            seen.update("vectors", [(r[0], r[1]) for r in rows])
        return seen


def _mentions(store: Store, ids: list[str], only: bool = False) -> dict[str, np.ndarray]:
    """Entity id → the rows of ``ids`` that mention it (reading only those blocks' mentions if
    ``only``, else every block's)."""
    rows = recall_rows.block_mentions(store, ids if only else None)
    if rows.is_empty() or not ids:
        return {}
    pos = pl.DataFrame({"block_id": ids, "row": np.arange(len(ids), dtype=np.int64)})
    grouped = rows.join(pos, on="block_id").group_by("entity_id").agg(pl.col("row").unique())
    return {
        str(e): np.asarray(r, dtype=np.int64)
        for e, r in zip(grouped["entity_id"], grouped["row"].to_list(), strict=True)
    }


#: How much a block one day off the day asked counts (its time is UTC, the day asked is the
#: asker's; a late evening in America is the next day in UTC).
NEXT_DAY_SHARE = 0.5


def day_match(day: dt.date, asked: tuple[int | None, int, int]) -> float:
    """1 when ``day`` is the day asked (any year when none is given), ``NEXT_DAY_SHARE`` when
    it is the day before or after, else 0."""
    year, month, dom = asked
    for offset, share in ((0, 1.0), (-1, NEXT_DAY_SHARE), (1, NEXT_DAY_SHARE)):
        near = day + dt.timedelta(days=offset)
        if (year is None or year == near.year) and (month, dom) == (near.month, near.day):
            return share
    return 0.0


def by_day(days: list[set[dt.date]]) -> dict[dt.date, np.ndarray]:
    """Per day, the rows whose set in ``days`` holds it."""
    rows: dict[dt.date, list[int]] = {}
    for row, found in enumerate(days):
        for day in found:
            rows.setdefault(day, []).append(row)
    return {d: np.asarray(r, dtype=np.int64) for d, r in rows.items()}


def _matrix(frame: pl.DataFrame, ids: list[str]) -> tuple[np.ndarray | None, np.ndarray]:
    """Vectors of ``frame`` (target_id, vector) aligned with ``ids``; rows without one are 0."""
    has = np.zeros(len(ids), dtype=bool)
    if frame.is_empty() or not ids:
        return None, has
    pos = {b: i for i, b in enumerate(ids)}
    rows = np.fromiter((pos.get(t, -1) for t in frame["target_id"]), dtype=np.int64)
    keep = rows >= 0
    raw = np.frombuffer(b"".join(frame["vector"].to_list()), dtype=np.float32)
    vectors = raw.reshape(frame.height, -1)[keep]
    matrix = np.zeros((len(ids), vectors.shape[1]), dtype=np.float32)
    matrix[rows[keep]] = vectors
    has[rows[keep]] = True
    return matrix, has


def _feedback(store: Store) -> dict[str, float]:
    return recall_rows.feedback_scores(store)


def _session_codes(seg: Segment, codes: dict[str, int]) -> np.ndarray:
    """Per row of ``seg``, its session as a code of ``codes`` (new sessions added; -1: none)."""
    ids = seg.shown["session_id"].to_list() if seg.shown is not None else [None] * seg.size
    return np.asarray(
        [-1 if s is None else codes.setdefault(s, len(codes)) for s in ids], dtype=np.int64
    )


def _joined(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The arrays end to end; the one array itself (no copy of every block's value per query)
    when there is one: the second segment is empty between refreshes."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _best(rows: np.ndarray, total: np.ndarray, top: int) -> np.ndarray:
    """The ``top`` of ``rows`` (ascending) with the highest ``total``, best first, ties in row
    order: a stable sort of only those at or above the ``top``-th score (an owner's thousands
    of facts name objects that tens of thousands of memories mention)."""
    scores = -total[rows]
    if len(rows) > top > 0:
        kth = np.partition(scores, top - 1)[top - 1]
        keep = scores <= kth
        rows, scores = rows[keep], scores[keep]
    return rows[np.argsort(scores, kind="stable")[:top]]


def _id_at(segs: list[Segment], row: int) -> str:
    """The block id of ``row`` counted over ``segs`` end to end (no list of every id is built
    per query: only the best few are looked up)."""
    for seg in segs:
        if row < seg.size:
            return seg.ids[row]
        row -= seg.size
    raise IndexError(row)


@dataclass
class SearchIndex:
    """Everything a recall searches, for one store and one embedding model."""

    model: str
    main: Segment
    delta: Segment
    delta_texts: dict[str, str]
    matcher: EntityMatcher
    marks: Marks
    built_seconds: float
    #: The days each block of the second segment is about (see dates.py).
    delta_days: dict[str, set[dt.date]] = field(default_factory=dict)
    #: Whether each block of the second segment is a question.
    delta_asks: dict[str, bool] = field(default_factory=dict)
    refreshes: int = 0
    rebuilds: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    #: The main segment's reply links as built (:meth:`_relink` starts from them).
    built_asked: np.ndarray | None = field(default=None, repr=False)
    #: Each block of a session changed since the build, with the question it replies to now.
    replies: dict[str, str | None] = field(default_factory=dict, repr=False)
    #: The words that name a person here (see :meth:`vector_query`), read on first use.
    _people: frozenset[str] | None = field(default=None, repr=False)
    #: The owner's feedback per block (the blocks rated; 0 for the others).
    feedback: dict[str, float] = field(default_factory=dict, repr=False)
    #: The active insights (see :meth:`insights`), found on first use.
    _insights: set[str] | None = field(default=None, repr=False)
    #: The latest change times read, and the rows read at them (see :class:`Seen`).
    seen: Seen = field(default_factory=Seen, repr=False)
    #: What links blocks for the expansion from the best hits (see :meth:`links`).
    _links: Links | None = field(default=None, repr=False)
    #: The main segment's own links (built once), and its sessions' codes (see :meth:`links`).
    _main_links: Links | None = field(default=None, repr=False)
    _session_codes: dict[str, int] = field(default_factory=dict, repr=False)

    # -- building -----------------------------------------------------------------------------

    @classmethod
    def build(cls, store: Store, model: str) -> SearchIndex:
        started = time.perf_counter()
        marks = Marks(fingerprint(store, model))
        seen = Seen.at_marks(store, marks, model)
        shown = recall_rows.searched_blocks(store)
        blocks = shown.select("id", pl.col("search_text").alias("text"), "created_at")
        shown = shown.drop("search_text")
        ids = blocks["id"].to_list() if blocks.height else []
        texts = pl.Series(
            "text", [with_dates(t, c) for t, c in blocks.select("text", "created_at").iter_rows()],
            dtype=pl.Utf8,
        )  # fmt: skip
        keywords = KeywordIndex.build(pl.Series(ids, dtype=pl.Utf8), texts)
        vectors, has = _matrix(recall_rows.current_block_vectors(store, model), ids)
        matcher = EntityMatcher.load(store)
        said = blocks["text"].to_list() if blocks.height else []
        mentions = speaker_mentions(_mentions(store, ids), said, matcher)
        main = Segment(ids, keywords, vectors, has, np.ones(len(ids), dtype=bool), mentions)
        main.shown = shown
        main.asked = questions_answered(store, ids)
        main.said = said_by(said)
        main.question = np.asarray([is_question(t or "") for t in said], dtype=bool)
        main.days = by_day(
            [days_meant(t, c) for t, c in blocks.select("text", "created_at").iter_rows()]
        )
        index = cls(
            model=model,
            main=main,
            delta=cls._segment(store, model, {}, keywords),
            delta_texts={},
            matcher=matcher,
            marks=marks,
            built_seconds=time.perf_counter() - started,
            built_asked=main.asked,
            feedback=_feedback(store),
            seen=seen,
        )
        return index

    @staticmethod
    def _segment(store: Store, model: str, texts: dict[str, str], main: KeywordIndex) -> Segment:
        ids = sorted(texts)
        keywords = KeywordIndex.build(
            pl.Series(ids, dtype=pl.Utf8),
            pl.Series([texts[i] for i in ids], dtype=pl.Utf8),
            main.stats,
        )
        if not ids:
            return Segment([], keywords, None, np.zeros(0, dtype=bool), np.zeros(0, dtype=bool), {})
        vectors, has = _matrix(recall_rows.current_block_vectors(store, model, ids), ids)
        mentions = _mentions(store, ids, only=True)
        segment = Segment(ids, keywords, vectors, has, np.ones(len(ids), dtype=bool), mentions)
        found = recall_rows.shown_blocks(store, ids)
        if found.height:  # row for row with ids (a block gone since has no row: never shown)
            segment.shown = pl.DataFrame({"id": ids}).join(found, on="id", how="left")
        return segment

    # -- keeping up ---------------------------------------------------------------------------

    def refresh(self, store: Store) -> SearchIndex:
        """Read what changed since the last look; returns self, or a rebuilt index."""
        now = Marks(fingerprint(store, self.model))
        if now.values == self.marks.values:
            return self
        old = self.marks
        changed = self._changed(store)
        touched = set(changed["id"].to_list()) if changed.height else set()
        for bid, text, status, written in changed.iter_rows():
            row = self.main.row_of(bid)
            if row is not None:
                self.main.live[row] = False
            if status == "active":
                self.delta_texts[bid] = with_dates(text, written)
                self.delta_days[bid] = days_meant(text, written)
                self.delta_asks[bid] = is_question(text or "")
            else:
                self.delta_texts.pop(bid, None)
                self.delta_days.pop(bid, None)
                self.delta_asks.pop(bid, None)
        if now.active != self._live():  # a status changed without a newer time, or a late row
            touched |= self._recount(store, now.active)
        if len(self.delta_texts) > max(1000, REBUILD_SHARE * self.main.size):
            rebuilt = SearchIndex.build(store, self.model)
            rebuilt.refreshes, rebuilt.rebuilds = self.refreshes + 1, self.rebuilds + 1
            return rebuilt
        if now.vectors != old.vectors or now.vectors_at != old.vectors_at:
            self._read_vectors(store)
        self.delta = self._segment(store, self.model, self.delta_texts, self.main.keywords)
        if now.entities != old.entities or now.values[8] != old.values[8]:
            self.matcher = EntityMatcher.load(store)
        delta_said = [self.delta_texts[i] for i in self.delta.ids]
        self.delta.mentions = speaker_mentions(self.delta.mentions, delta_said, self.matcher)
        self.delta.said = said_by(delta_said)
        self.delta.days = by_day([self.delta_days.get(i, set()) for i in self.delta.ids])
        self.delta.question = np.asarray(
            [self.delta_asks.get(i, False) for i in self.delta.ids], dtype=bool
        )
        self._relink(store, touched)
        self._people = self._insights = None
        self._links = None
        if now.feedback != old.feedback:
            self.feedback = _feedback(store)
        self.marks = now
        self.refreshes += 1
        return self

    def _changed(self, store: Store) -> pl.DataFrame:
        """The blocks created, edited or re-tiered since the last look (id, search text,
        status, created_at): those at or after the latest times read and not read yet."""
        keys = recall_rows.blocks_changed_since(store, *(self.seen.since(c) for c in CHANGE_TIMES))
        ids = sorted(
            {
                r[0]
                for r in keys
                if any(self.seen.new(c, r[0], r[k]) for k, c in enumerate(CHANGE_TIMES, 1))
            }
        )
        for k, column in enumerate(CHANGE_TIMES, 1):
            self.seen.update(column, [(r[0], r[k]) for r in keys if r[k] is not None and r[k] >= self.seen.since(column)])  # fmt: skip
        self.stats["changed_read"] = self.stats.get("changed_read", 0) + len(ids)
        if not ids:
            return pl.DataFrame(schema={"id": pl.Utf8, "text": pl.Utf8, "status": pl.Utf8, "created_at": pl.Datetime("us")})  # fmt: skip
        return recall_rows.search_texts_of(store, ids)

    def _live(self) -> int:
        return int(self.main.live.sum()) + len(self.delta_texts)

    def _recount(self, store: Store, active: int) -> set[str]:
        """Bring the blocks searched in line with the active ones when the counts differ: a
        status changed without a newer time (gone), or a row stamped before the latest time
        read committed after it (missing). Returns the blocks whose presence changed."""
        touched: set[str] = set()
        gone = inactive_block_ids(store)
        was = self.main.live.copy()
        self.main.live &= ~np.isin(np.asarray(self.main.ids, dtype=object), list(gone))
        touched.update(self.main.ids[i] for i in np.flatnonzero(was & ~self.main.live))
        for bid in gone & self.delta_texts.keys():
            del self.delta_texts[bid]
            touched.add(bid)
            self.delta_days.pop(bid, None)
            self.delta_asks.pop(bid, None)
        if active > self._live():
            searched = set(self.delta_texts) | {
                self.main.ids[i] for i in np.flatnonzero(self.main.live).tolist()
            }
            missing = sorted(active_block_ids(store) - searched)
            if missing:
                late = recall_rows.search_texts_of(store, missing)
                for bid, text, _, written in late.iter_rows():
                    self.delta_texts[bid] = with_dates(text, written)
                    self.delta_days[bid] = days_meant(text, written)
                    self.delta_asks[bid] = is_question(text or "")
                    touched.add(bid)
        return touched

    def _read_vectors(self, store: Store) -> None:
        """The main segment's vectors made since the last look (those not read yet; a block
        of the second segment has its vectors read with it)."""
        keys = recall_rows.block_vectors_made_since(store, self.model, self.seen.since("vectors"))
        fresh_ids = sorted({k for k, v in keys if self.seen.new("vectors", k, v)})
        self.seen.update("vectors", [(k, v) for k, v in keys])
        fresh_ids = [b for b, r in zip(fresh_ids, self.main.rows_of(fresh_ids).tolist(), strict=True) if r >= 0]  # fmt: skip
        if not fresh_ids:
            return
        fresh = recall_rows.current_block_vectors(store, self.model, fresh_ids)
        if not fresh.height:
            return
        rows = self.main.rows_of(fresh["target_id"].to_list())
        keep = rows >= 0
        raw = np.frombuffer(b"".join(fresh["vector"].to_list()), dtype=np.float32)
        matrix = raw.reshape(fresh.height, -1)
        if self.main.vectors is None:
            self.main.vectors = np.zeros((self.main.size, matrix.shape[1]), dtype=np.float32)
        self.main.vectors[rows[keep]] = matrix[keep]
        self.main.has_vector[rows[keep]] = True

    def _relink(self, store: Store, touched: set[str]) -> None:
        """Reply links as a rebuild would make them, read for the sessions of ``touched``
        blocks only: a new turn that answers a question (old or new), and an old turn whose
        neighbour came, went or changed. Links point at the live row of each block."""
        if touched:
            sessions = sessions_of(store, sorted(touched))
            self.replies.update(replies_in_sessions(store, sorted(sessions)))
        if self.built_asked is None or not self.replies:
            return
        n = self.main.size
        delta_rows = {b: n + i for i, b in enumerate(self.delta.ids)}

        def row(block_id: str) -> int | None:
            at = delta_rows.get(block_id)
            if at is None and (at := self.main.row_of(block_id)) is not None:
                at = at if self.main.live[at] else None
            return at

        asked = np.concatenate([self.built_asked, np.full(self.delta.size, -1, dtype=np.int64)])
        for reply, question in self.replies.items():
            if (at := row(reply)) is not None:
                linked = None if question is None else row(question)
                asked[at] = -1 if linked is None else linked
        self.main.asked, self.delta.asked = asked[:n], asked[n:]

    # -- searching ----------------------------------------------------------------------------

    def vector_query(self, query: str) -> str:
        """What the query's vector is made of: the query without the people it names (who it
        is about counts through mentions and speakers; see :mod:`memvault.recall.speakers`)."""
        if self._people is None:
            speakers = {k for seg in (self.main, self.delta) for k in seg.said}
            self._people = person_words(self.matcher, speakers)
        return without_people(query, self._people)

    def rows(self, block_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """What each of ``block_ids`` that is active shows (:data:`SHOWN_COLUMNS` and its
        ``feedback_score``), as the store held it when the index last read it."""
        out: dict[str, dict[str, Any]] = {}
        for seg in (self.delta, self.main):  # a changed block's row is the second segment's
            if seg.shown is None or not seg.size:
                continue
            rows = seg.rows_of(block_ids)
            keep = rows >= 0
            keep[keep] = seg.live[rows[keep]]
            at = [int(r) for r, k, b in zip(rows.tolist(), keep.tolist(), block_ids, strict=True) if k and b not in out]  # fmt: skip
            for row in seg.shown[at].to_dicts() if at else []:
                if row["text"] is not None:  # gone before its row was read
                    row["feedback_score"] = self.feedback.get(row["id"], 0.0)
                    out[row["id"]] = row
        return out

    def insights(self) -> set[str]:
        """The active blocks that are dream insights (their score is capped; see recaller)."""
        if self._insights is None:
            found: set[str] = set()
            for seg in (self.main, self.delta):
                if seg.shown is not None and seg.size:
                    kind = seg.shown["kind"].to_numpy() == "insight"
                    found.update(seg.ids[i] for i in np.flatnonzero(kind & seg.live).tolist())
            self._insights = found
        return self._insights

    def mentioning(self, block_ids: Sequence[str], weights: dict[str, float]) -> dict[str, float]:
        """For each of ``block_ids`` that mentions an entity of ``weights`` (entity id ->
        weight), the largest such weight."""
        out: dict[str, float] = {}
        for seg in (self.main, self.delta):
            rows = seg.rows_of(block_ids)
            for eid, weight in weights.items():
                mentioned = seg.mentions.get(eid)
                if mentioned is None:
                    continue
                for at in np.flatnonzero((rows >= 0) & np.isin(rows, mentioned)).tolist():
                    bid = block_ids[at]
                    out[bid] = max(out.get(bid, 0.0), weight)
        return out

    def co_mentioning(self, subject: str, others: Collection[str], top: int) -> list[str]:
        """The live blocks that mention ``subject`` and one of ``others`` (entity ids), the
        latest-added ``top`` of them."""
        found: list[str] = []
        for seg in (self.delta, self.main):
            rows = seg.mentions.get(subject)
            if rows is None or not others:
                continue
            near = [seg.mentions[e] for e in others if e in seg.mentions]
            if not near:
                continue
            both = np.intersect1d(rows, np.concatenate(near))
            both = both[seg.live[both]]
            found += [seg.ids[i] for i in both[::-1][: top - len(found)].tolist()]
            if len(found) >= top:
                break
        return found

    def speakers_asked(self, query: str, entity_ids: list[str]) -> list[tuple[str, ...]]:
        """The speakers ``query`` names that are no entity of ``entity_ids``."""
        return self._speakers([seg for seg in (self.main, self.delta) if seg.size], query, entity_ids)  # fmt: skip

    def said(self, speaker: tuple[str, ...], block_ids: Sequence[str]) -> set[str]:
        """Those of ``block_ids`` that ``speaker`` said."""
        out: set[str] = set()
        for seg in (self.main, self.delta):
            rows = seg.said.get(speaker)
            if rows is None:
                continue
            at = seg.rows_of(block_ids)
            out.update(b for b, r in zip(block_ids, np.isin(at, rows).tolist(), strict=True) if r)
        return out

    def vectors_of(self, block_ids: Sequence[str]) -> np.ndarray | None:
        """The current vectors of ``block_ids``, row for row (a zero row for a block without
        one); None when the index holds no vectors."""
        if not self.has_vectors:
            return None
        out: np.ndarray | None = None
        for seg in (self.main, self.delta):  # a changed block's vector is the second segment's
            if seg.vectors is None or not seg.size:
                continue
            if out is None:
                out = np.zeros((len(block_ids), seg.vectors.shape[1]), dtype=np.float32)
            rows = seg.rows_of(block_ids)
            ok = rows >= 0
            ok[ok] = seg.live[rows[ok]] & seg.has_vector[rows[ok]]
            out[ok] = seg.vectors[rows[ok]]
        return out

    def links(self, segs: list[Segment]) -> Links:
        """What links the blocks of ``segs`` (end to end): built on first use after a build
        or a refresh. The main segment's part (its mentions, its rows' sessions) does not
        change between rebuilds and is worked out once; a refresh adds the second segment's."""
        if self._links is None:
            rest = segs
            vectors: list[tuple[int, np.ndarray | None, np.ndarray]] = []
            base: Links | None = None
            codes: dict[str, int] = {}
            if segs and segs[0] is self.main:
                if self._main_links is None:
                    self._session_codes = {}
                    sessions = _session_codes(self.main, self._session_codes)
                    self._main_links = Links.build(self.main.mentions, sessions)
                base, codes, rest = self._main_links, dict(self._session_codes), segs[1:]
                vectors.append((0, self.main.vectors, self.main.has_vector))
            first = offset = self.main.size if base is not None else 0
            mentions: dict[str, np.ndarray] = {}  # counted from the first row after ``base``
            parts: list[np.ndarray] = []
            for seg in rest:
                for eid, rows in seg.mentions.items():
                    had = mentions.get(eid)
                    shifted = rows + (offset - first)
                    mentions[eid] = shifted if had is None else np.concatenate([had, shifted])
                parts.append(_session_codes(seg, codes))
                vectors.append((offset, seg.vectors, seg.has_vector))
                offset += seg.size
            sessions = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            if base is None:
                self._links = Links.build(mentions, sessions, vectors)
            else:  # the main segment's links as built, the second segment's rows after them
                self._links = base.extended(mentions, sessions, vectors)
        return self._links

    @property
    def has_vectors(self) -> bool:
        return bool(self.main.has_vector.any() or self.delta.has_vector.any())

    def score(
        self,
        query: str,
        query_vector: np.ndarray | None,
        entity_ids: list[str],
        top: int,
        *,
        include: Collection[str] = (),
        include_mentioning: Collection[str] = (),
    ) -> list[tuple[str, float]]:
        """The ``top`` best (block id, score) pairs over both segments (see
        :mod:`memvault.recall.fusion` for how the signals make one score), followed by the
        blocks of ``include`` and the best ``top`` blocks mentioning an entity of
        ``include_mentioning`` that are not among them (the blocks that state a current fact
        the question asks for, found even when its words miss them)."""
        segs = [seg for seg in (self.main, self.delta) if seg.size]
        if not segs:
            return []
        speakers = self._speakers(segs, query, entity_ids)
        asked = days_asked(query)
        parts = [
            self._signals(seg, query, query_vector, entity_ids, speakers, asked) for seg in segs
        ]
        signals = Signals(*(_joined(arrays) for arrays in zip(*parts, strict=True)))
        live = _joined([seg.live for seg in segs])
        replies = _joined(
            [seg.asked if seg.asked is not None else np.full(seg.size, -1) for seg in segs]
        )
        question = _joined(
            [
                seg.question if seg.question is not None else np.zeros(seg.size, dtype=bool)
                for seg in segs
            ]
        )
        base, bonus = fuse_parts(signals)
        said = with_questions_lowered(with_replies(base, replies), question)
        said += bonus
        said[~live] = -np.inf
        total = said
        total = expand(total, self.links(segs), entity_ids, live)
        k = min(top, len(total))
        best = np.argpartition(-total, k - 1)[:k]
        best = best[np.argsort(-total[best], kind="stable")]
        found = [(_id_at(segs, i), float(total[i])) for i in best if np.isfinite(total[i])]
        seen = {b for b, _ in found}
        for bid, score in self._wanted(segs, total, live, include, include_mentioning, top):
            if bid not in seen:
                found.append((bid, score))
                seen.add(bid)
        return found

    @staticmethod
    def _wanted(
        segs: list[Segment],
        total: np.ndarray,
        live: np.ndarray,
        include: Collection[str],
        include_mentioning: Collection[str],
        top: int,
    ) -> list[tuple[str, float]]:
        """The live blocks of ``include`` (scored 0 when nothing else speaks for them) and the
        best ``top`` blocks with evidence that mention an entity of ``include_mentioning``,
        best first. ``total`` holds the scores of ``segs`` end to end."""
        wanted = include if isinstance(include, Sequence) else list(include)
        ids: list[str] = []
        scores: list[np.ndarray] = []
        offset = 0
        for seg in segs:
            if wanted:
                rows = seg.rows_of(wanted) + offset
                hit = rows >= offset
                hit[hit] = live[rows[hit]]
                found = total[rows[hit]]
                ids += [b for b, h in zip(wanted, hit.tolist(), strict=True) if h]
                scores.append(np.where(np.isfinite(found), found, 0.0))
            near_rows = [seg.mentions[e] for e in include_mentioning if e in seg.mentions]
            if near_rows:
                mentioned = np.zeros(seg.size, dtype=bool)
                mentioned[np.concatenate(near_rows)] = True
                near = np.flatnonzero(mentioned) + offset  # each row once, in order
                near = _best(near[np.isfinite(total[near])], total, top)
                ids += [seg.ids[i - offset] for i in near.tolist()]
                scores.append(total[near])
            offset += seg.size
        if not ids:
            return []
        score = np.concatenate(scores).astype(np.float64)
        # best first, ties by id (the order of ``sorted`` by (-score, id))
        order = np.lexsort((np.asarray(ids, dtype=str), -score))
        return [(ids[i], s) for i, s in zip(order.tolist(), score[order].tolist(), strict=True)]

    def names_a_speaker(self, query: str) -> bool:
        """Whether ``query`` names a speaker no entity stands for (see speakers.py)."""
        named = speakers_named(query, {k for seg in (self.main, self.delta) for k in seg.said})
        return any(
            self.matcher.names.get(key) is None and self.matcher.first_names.get(key[0]) is None
            for key in named
        )

    def _speakers(
        self, segs: list[Segment], query: str, entity_ids: list[str]
    ) -> list[tuple[str, ...]]:
        """The speakers the query names that are no entity it names (an entity's blocks,
        its turns included, already count through its mentions)."""
        named = speakers_named(query, {k for seg in segs for k in seg.said})
        known = set(entity_ids)
        return [
            key
            for key in named
            if self.matcher.names.get(key) not in known
            and self.matcher.first_names.get(key[0]) not in known
        ]

    @staticmethod
    def _signals(
        seg: Segment,
        query: str,
        query_vector: np.ndarray | None,
        entity_ids: list[str],
        speakers: Sequence[tuple[str, ...]] = (),
        days: Sequence[tuple[int | None, int, int]] = (),
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(cosine, BM25, query entities mentioned or speakers named, has a vector, is about a
        day the query names) of every block of ``seg``."""
        dense = np.zeros(seg.size, dtype=np.float64)
        if query_vector is not None and seg.vectors is not None:
            dense = (seg.vectors @ query_vector).astype(np.float64)
        entity = np.zeros(seg.size, dtype=np.float64)
        for eid in entity_ids:
            rows = seg.mentions.get(eid)
            if rows is not None:
                entity[rows] += 1
        for key in speakers:
            if (rows := seg.said.get(key)) is not None:
                entity[rows] += 1
        has = seg.has_vector if query_vector is not None else np.zeros(seg.size, dtype=bool)
        on_day = np.zeros(seg.size, dtype=np.float64)
        if days:
            for day, rows in seg.days.items():
                near = max(day_match(day, asked) for asked in days)
                if near > 0:
                    on_day[rows] = np.maximum(on_day[rows], near)
        return dense, seg.keywords.score(query), entity, has, on_day
