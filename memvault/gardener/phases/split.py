"""GD3 split bloat: the worst over-long items (> ~750 chars), at most 5 a run, in two steps.

``bloat_scan`` finds the gist and the buried topics (search phrases, with the
coffee-shop test for people) and changes nothing; each phrase is searched in
the store; ``bloat_split`` trims the parent to its gist and places every other
sentence in a new item linked to the parent (or appends it to a matching one).
Nothing is lost: a split is applied only when every sentence of the original
is in the trimmed parent or in a piece, the parent's full text stays in the
audit before-image, and the children are written before the parent is trimmed.
"""

from __future__ import annotations

from memvault.gardener.adapter import Capability, ItemChanges, ItemQuery, MemoryItem, NewItem
from memvault.gardener.phases.base import PhaseContext, preview, record
from memvault.gardener.tasks import (
    BLOAT_SCAN,
    BLOAT_SPLIT,
    BloatScanRequest,
    BloatSplitRequest,
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
        ctx.advance(after=item.id)
        _split_one(ctx, item)


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
    reply = ctx.ask(
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
    if reply.confidence < cfg.confident or ctx.proposing("split"):
        ctx.propose(
            action="split",
            target_table="blocks",
            target_id=item.id,
            certain=reply.confidence >= cfg.confident,
            confidence=reply.confidence,
            reason=f"split into {len(pieces)} item(s)",
            detail={"parent_text": reply.parent_text, "pieces": [p.model_dump() for p in pieces]},
        )
        ctx.defer(
            f"split of {item.id} ({item.chars} chars) — proposed, not executed (confidence {reply.confidence:.2f})"
        )
        ctx.settle(item.id)
        return
    ctx.need(1 + len(pieces))
    existing = {}
    wanted = [p.existing_id for p in pieces if p.existing_id]
    if wanted:
        existing = {i.id: i for i in ctx.store.get_items(wanted) if i.status == "active"}
    for n, piece in enumerate(pieces):
        home = existing.get(piece.existing_id or "")
        if home is not None:
            if normalized(piece.text) in normalized(home.text):
                continue
            text = f"{home.text.rstrip()} {piece.text.strip()}"
            ctx.write(
                "split-append",
                f"detail moved from {item.id}",
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
            f"detail {n + 1} of {item.id}",
            lambda w, child=child: ctx.store.create_item(w, child),  # type: ignore[misc]
        )
    ctx.write(
        "split-trim",
        f"trimmed to its gist; {len(pieces)} detail(s) moved to linked items",
        lambda w: ctx.store.update_item(w, item.id, ItemChanges(text=reply.parent_text.strip())),
    )
    ctx.srun.splits_done += 1
    ctx.run.count("splits")
    ctx.run.notes.append(f"split {item.id}: {preview(reply.parent_text)}")
