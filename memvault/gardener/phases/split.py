"""GD3 split bloat: the worst over-long items (> ~750 chars), at most 5 a run, in two steps.

``bloat_scan`` finds the gist and the buried topics (search phrases, with the
coffee-shop test for people) and changes nothing; each phrase is searched in
the store; ``bloat_split`` trims the parent to its gist and places every other
sentence in a new item linked to the parent (or appends it to a matching one).
Nothing is lost: a split is applied only when every sentence of the original
is in the trimmed parent or in a piece, the parent's full text stays in the
audit before-image, and the children are written before the parent is trimmed.

A split is applied only when a model decided it. The offline rules (no LLM
configured) keep the first sentence and cut the rest by length: that is a
mechanical guess, so it is proposed, never applied, whatever confidence it
states. Which answers came from the rules the judge layer says itself (it counts
them as heuristic answers). An approved split proposal is applied by the next
run, first, when the item still reads as it did when it was proposed. Applied or
proposed, at most ``max_splits`` items are handled a run.
"""

from __future__ import annotations

from collections.abc import Sequence

from memvault.gardener.adapter import Capability, ItemChanges, ItemQuery, MemoryItem, NewItem
from memvault.gardener.phases.base import PhaseContext, preview, record
from memvault.gardener.report import OpLine
from memvault.gardener.tasks import (
    BLOAT_SCAN,
    BLOAT_SPLIT,
    BloatScanRequest,
    BloatSplitRequest,
    SplitPiece,
    TopicMatches,
    normalized,
    sentences,
)

NEEDS = (Capability.SEARCH, Capability.MUTATE, Capability.CREATE)


def covers(original: str, parent_text: str, pieces: list[str]) -> list[str]:
    """Sentences of ``original`` found neither in the parent text nor in any piece."""
    homes = [normalized(parent_text), *(normalized(p) for p in pieces)]
    return [s for s in sentences(original) if not any(normalized(s) in h for h in homes)]


def run_split(ctx: PhaseContext) -> None:
    if not ctx.has(*NEEDS):
        missing = [c.value for c in NEEDS if not ctx.has(c)]
        ctx.run.skip("split", f"no {' / '.join(missing)} capability")
        return
    if not ctx.cursor.get("approved_done"):
        _execute_approved(ctx)
        ctx.advance(approved_done=True)
    cfg = ctx.config
    while True:
        settled = ctx.settled()
        candidates = ctx.store.list_items(
            ItemQuery(
                min_chars=cfg.bloat_chars,
                include_pinned=False,
                order="longest",
                limit=cfg.max_splits + len(settled) + 1,
            )
        )
        todo = [i for i in candidates if i.id not in settled]
        if not todo:
            return
        if ctx.srun.splits_done >= cfg.max_splits:
            ctx.leave_for_next_run(f"{cfg.max_splits} splits per run; more items are over-long")
            return
        item = todo[0]
        ctx.advance(approved_done=True, after=item.id)
        _split_one(ctx, item)


def run_split_approved(ctx: PhaseContext) -> None:
    """Only the approved splits (a run that resumes past the split phase still applies them)."""
    if ctx.has(*NEEDS):
        _execute_approved(ctx)


def _execute_approved(ctx: PhaseContext) -> None:
    """Approved split proposals, applied as proposed while the item still reads the same."""
    for proposal in ctx.ledger.proposals(ctx.store.name, ("approved",), "split"):
        parent_text = str(proposal.detail.get("parent_text") or "")
        pieces = [
            SplitPiece.model_validate(p)
            for p in proposal.detail.get("pieces") or []
            if str(p.get("text") or "").strip()
        ]
        found = ctx.store.get_items([proposal.target_id])
        item = found[0] if found else None
        if item is None or item.status != "active":
            ctx.settle_proposal(proposal, "stale", "the item was retired meanwhile")
            continue
        if (
            not parent_text.strip()
            or not pieces
            or covers(item.text, parent_text, [p.text for p in pieces])
            or len(parent_text) >= len(item.text)
        ):
            ctx.settle_proposal(proposal, "stale", "the item changed since the split was proposed")
            continue
        _apply(ctx, item, parent_text, pieces, why=f"approved proposal {proposal.id}")
        ctx.settle_proposal(proposal, "executed", f"split by {ctx.run.run_id}")


def _split_one(ctx: PhaseContext, item: MemoryItem) -> None:
    cfg = ctx.config
    earlier = ctx.fixed_before("blocks", item.id, ["split-trim"])
    if earlier and not ctx.proposing("split"):
        ctx.switch_to_proposing("split", item.id, earlier)
    scan = ctx.ask(BLOAT_SCAN, BloatScanRequest(record=record(item), max_chars=cfg.bloat_chars))
    topics = []
    for topic in scan.topics:
        if topic.about_person and not topic.passes_coffee_shop_test:
            continue  # trivia about a person: not worth its own search (the sentence stays)
        matches = [m for m in ctx.store.search(topic.phrase, limit=3) if m.id != item.id]
        topics.append(TopicMatches(phrase=topic.phrase, matches=[record(m) for m in matches]))
    reply, by_rules = ctx.ask_judged(
        BLOAT_SPLIT,
        BloatSplitRequest(
            record=record(item), gist=scan.gist, topics=topics, max_chars=cfg.bloat_chars
        ),
    )
    pieces = [p for p in reply.pieces if p.text.strip()]
    lost = covers(item.text, reply.parent_text, [p.text for p in pieces])
    problem = None
    if lost:
        problem = f"{len(lost)} sentence(s) would be lost"
    elif len(reply.parent_text) >= len(item.text) or len(reply.parent_text) > cfg.bloat_chars:
        problem = "the trimmed parent would still be over-long"
    elif not pieces:
        problem = "nothing to move out"
    if problem is not None:
        ctx.defer(f"split of {item.id} ({item.chars} chars) — left as is: {problem}")
        ctx.settle(item.id)
        return
    if by_rules or reply.confidence < cfg.confident or ctx.proposing("split"):
        _propose(ctx, item, reply.parent_text, pieces, by_rules, reply.confidence)
        return
    _apply(ctx, item, reply.parent_text, pieces, why="")
    ctx.run.notes.append(f"split {item.id}: {preview(reply.parent_text)}")


def _propose(
    ctx: PhaseContext,
    item: MemoryItem,
    parent_text: str,
    pieces: Sequence[SplitPiece],
    by_rules: bool,
    confidence: float,
) -> None:
    """Queue the split for a person (or the next run, once approved); the item stays as it is."""
    if by_rules:
        why = "split by the offline rules (first sentence kept, the rest cut by length), not by a model"
    elif ctx.proposing("split"):
        why = "splits of this store are proposed since one came back"
    else:
        why = f"confidence {confidence:.2f}"
    certain = not by_rules and confidence >= ctx.config.confident
    ctx.propose(
        action="split",
        target_table="blocks",
        target_id=item.id,
        certain=certain,
        confidence=None if by_rules else confidence,
        reason=f"split into {len(pieces)} item(s): {why}",
        detail={"parent_text": parent_text, "pieces": [p.model_dump() for p in pieces]},
        line=OpLine(
            "PROPOSED", "SPLIT", item.id, None, preview(item.text), f"into {len(pieces)} item(s)"
        ),
    )
    ctx.defer(f"split of {item.id} ({item.chars} chars) — proposed, not executed ({why})")
    ctx.settle(item.id)
    ctx.srun.splits_done += 1  # a proposed split counts against the per-run cap too


def _apply(
    ctx: PhaseContext, item: MemoryItem, parent_text: str, pieces: Sequence[SplitPiece], why: str
) -> None:
    """Children (or appends to matching items) first, then the parent trimmed to its gist."""
    ctx.need(1 + len(pieces))
    existing = {}
    wanted = [p.existing_id for p in pieces if p.existing_id]
    if wanted:
        existing = {i.id: i for i in ctx.store.get_items(wanted) if i.status == "active"}
    lead = f"{why}: " if why else ""
    for n, piece in enumerate(pieces):
        home = existing.get(piece.existing_id or "")
        if home is not None:
            if normalized(piece.text) in normalized(home.text):
                continue
            text = f"{home.text.rstrip()} {piece.text.strip()}"
            ctx.write(
                "split-append",
                f"{lead}detail moved from {item.id}",
                lambda w, home=home, text=text: ctx.store.update_item(
                    w, home.id, ItemChanges(text=text)
                ),  # type: ignore[misc]
            )
            continue
        child = NewItem(
            text=piece.text.strip(),
            kind=item.kind,
            importance=item.importance,
            tags=(*item.tags, f"split-from:{item.id}"),
            parent_id=item.id,
            container=item.container,
        )
        ctx.write(
            "split-child",
            f"{lead}detail {n + 1} of {item.id}",
            lambda w, child=child: ctx.store.create_item(w, child),  # type: ignore[misc]
        )
    ctx.write(
        "split-trim",
        f"{lead}trimmed to its gist; {len(pieces)} detail(s) moved to linked items",
        lambda w: ctx.store.update_item(w, item.id, ItemChanges(text=parent_text.strip())),
    )
    ctx.srun.splits_done += 1
    ctx.run.count("splits")
