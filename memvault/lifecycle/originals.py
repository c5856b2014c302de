"""The original text of a digested block: kept, searched, shown on request.

Tiers decide what is shown, never what can be found. When tiering turns a block's text into
a digest, the text it had goes to ``block_originals`` in the same audited transaction (so
undoing the run removes it again); the first original wins, a later, shorter digest never
overwrites it. Recall searches the original (:data:`memvault.store.queries.recall.SEARCH_TEXTS_SQL`),
shows the digest, and says the original is archived; ``memvault show BLOCK --original``
prints it. :func:`findability` is what the ``tiering`` asset checks: blocks a run demoted
are still found by words only their original holds.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.errors import MemvaultError
from memvault.store import Store
from memvault.store.queries import blocks as block_rows
from memvault.store.queries.audit import demoted_by_run
from memvault.store.queries.recall import search_texts_of

#: How many of a run's demoted blocks the findability check searches for.
FINDABILITY_SAMPLE = 50
#: Where a demoted block must rank (at worst) for the query of its rarest original words.
FINDABILITY_TOP = 10
#: Rarest words of the original that make up the query.
QUERY_WORDS = 5
#: The share of the sample that must be found. Not all: a generated or templated history has
#: memories whose rarest words are the template's, and the query cannot single them out.
FINDABLE_SHARE = 0.95
#: How far past the cut the check looks for a block tied with the last hit shown.
TIE_DEPTH = 5
#: Scores this close count as a tie.
TIE_TOLERANCE = 1e-6


def originals_frame(rows: pl.DataFrame, run_id: str, at: dt.datetime) -> pl.DataFrame:
    """``block_originals`` rows for ``rows`` (id, text): what tiering writes beside a digest."""
    return pl.DataFrame(
        {
            "id": rows["id"],
            "text": rows["text"],
            "digested_at": [at] * rows.height,
            "run_id": [run_id] * rows.height,
        },
        schema={
            "id": pl.Utf8,
            "text": pl.Utf8,
            "digested_at": pl.Datetime("us"),
            "run_id": pl.Utf8,
        },
    )


@dataclass(frozen=True)
class BlockView:
    """One block as recall shows it, and the original its digest stands in for (if any)."""

    id: str
    tier: str
    status: str
    digest_kind: str | None
    text: str
    original: str | None
    digested_at: dt.datetime | None
    run_id: str | None

    @property
    def original_archived(self) -> bool:
        return self.digest_kind is not None and self.original is not None

    @property
    def original_text(self) -> str:
        """The text the block had before tiering: the archived original of a digest, else
        the text itself (a block that never became a digest is its own original)."""
        return self.original if self.original_archived and self.original else self.text

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tier": self.tier,
            "status": self.status,
            "digest_kind": self.digest_kind,
            "text": self.text,
            "original_archived": self.original_archived,
            "original": self.original_text,
            "digested_at": self.digested_at.isoformat() if self.digested_at else None,
            "digest_run_id": self.run_id,
        }


def block_view(store: Store, block_id: str) -> BlockView:
    """The block ``block_id`` with its original; :class:`MemvaultError` when there is none."""
    row = block_rows.block_with_original(store, block_id)
    if row is None:
        raise MemvaultError(f"no memory block with id {block_id!r} (recall lists block ids)")
    return BlockView(
        id=row["id"],
        tier=row["tier"],
        status=row["status"],
        digest_kind=row["digest_kind"],
        text=row["text"],
        original=row["original"],
        digested_at=row["digested_at"],
        run_id=row["run_id"],
    )


@dataclass
class Findability:
    """What the findability check saw for one tiering run."""

    run_id: str | None
    demoted: int = 0
    sampled: int = 0
    found: int = 0
    #: Digested blocks (among the sampled) whose original is not kept for search.
    missing_originals: list[str] = field(default_factory=list)
    #: Sampled blocks the query of their rarest original words did not find in the top 10.
    lost: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every original kept, and at least :data:`FINDABLE_SHARE` of the sample found."""
        return not self.missing_originals and self.found >= FINDABLE_SHARE * self.sampled

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows for the check."""
        return {
            "tiering_run_id": self.run_id or "no tiering run yet",
            "demoted": self.demoted,
            "sampled": self.sampled,
            "found": self.found,
            "not_found": len(self.lost),
            "originals_missing": len(self.missing_originals),
            "sample_not_found": self.lost[:20],
            "sample_originals_missing": ", ".join(self.missing_originals[:20]) or "none",
        }


def _search_texts(store: Store, ids: list[str]) -> set[str]:
    """The texts recall searched ``ids`` by."""
    if not ids:
        return set()
    return {str(t) for t in search_texts_of(store, ids)["text"].to_list()}


def _rarest_words(text: str, idf: Any, limit: int) -> list[str]:
    """The ``limit`` words of ``text`` whose search terms (stems) are rarest, by the index's
    term statistics; stop words are no search terms and never chosen."""
    from memvault.recall.keywords import tokenize
    from memvault.recall.text import words

    unique = sorted(set(words(text)))
    rarity = {w: max(idf(t) for t in stems) for w, stems in zip(unique, tokenize(unique), strict=True) if stems}  # fmt: skip
    return sorted(rarity, key=lambda w: (-rarity[w], w))[:limit]


def _tied_at_the_cut(hits: list[Any], block_id: str, top: int) -> bool:
    """Is ``block_id`` among the hits past the ``top`` cut with the same score as the last
    hit shown? (Templated memories share their rarest words: the query can't rank them.)"""
    if len(hits) <= top:
        return False
    cut = hits[top - 1].score
    return any(h.block_id == block_id and h.score >= cut - TIE_TOLERANCE for h in hits[top:])


def findability(
    store: Store,
    run_id: str | None,
    recaller: Any,
    *,
    sample: int = FINDABILITY_SAMPLE,
    top: int = FINDABILITY_TOP,
) -> Findability:
    """Are the blocks ``run_id`` demoted still found by what they said? For up to ``sample``
    of them (a deterministic spread), a query made of the :data:`QUERY_WORDS` rarest words of
    the original (per the audit log; the text itself for a block that kept it) must return the
    block (or a block with the very same text) in the ``top`` results of ``recaller``'s search
    (a :class:`memvault.recall.Recaller`).
    A digested block whose original is not kept for search fails too. Reads only: nothing is
    recorded."""
    report = Findability(run_id=run_id)
    if run_id is None:
        return report
    demoted = demoted_by_run(store, run_id)
    report.demoted = len(demoted)
    ids = demoted[:sample]
    if not ids:
        return report
    current = block_rows.blocks_with_kept_originals(store, ids)
    originals = block_rows.audited_originals(store, ids)
    index = recaller.ready(store)
    idf = index.main.keywords.stats.idf_of
    for row in current.sort("id").iter_rows(named=True):
        if row["status"] != "active":
            continue  # archived since: recall does not look for it
        report.sampled += 1
        original = originals.get(row["id"]) or row["kept"] or row["text"]
        if row["digest_kind"] is not None and row["kept"] is None:
            report.missing_originals.append(row["id"])
        words = _rarest_words(original, idf, QUERY_WORDS)
        if not words:
            report.found += 1  # nothing to search by: no word of it is searchable anyway
            continue
        query = " ".join(words)
        hits, _ = recaller.search(store, query, [], top * TIE_DEPTH, index)
        ranked = [h.block_id for h in hits[:top]]
        if row["id"] in ranked or original in _search_texts(store, ranked):
            report.found += 1  # an identical twin found in its place is the same memory
        elif _tied_at_the_cut(hits, row["id"], top):
            report.found += 1  # as good a match as the last shown: the words can't tell them apart
        else:
            report.lost.append({"block_id": row["id"], "query": query})
    return report
