"""GD1 dedup: approved merges first, then near-duplicates among the items of the window.

Candidates are pairs at cosine ≥ 0.90 (the store's duplicate check) with at
least one item changed in the window. Connected candidates form a cluster:
exactly two records go to the ``dedup_validate`` gate (default keep both),
more to the ``dedup_cluster`` curator (merge only at ≥ 85% shared core
meaning). A clear merge executes only in autonomous mode; in
tend-and-propose it is proposed; an uncertain one is proposed in either mode
and never executed. Executing a merge asks ``dedup_confirmed`` for the merged
text, updates the survivor (importance and the like → higher, emotion-like
scores → average, tags → union) and archives the others pointing at it.

A store that cannot archive but can delete one item alone (``delete``) merges
only what a deletion cannot lose: an exact repeat of the survivor's text in
the same container, carrying nothing the survivor lacks. That runs in
autonomous mode only (after the run's snapshot), or for a proposal someone
approved; tend-and-propose proposes it as a DELETE, and every other merge on
such a store stays a proposal.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from memvault.gardener.adapter import (
    GARDEN_SUMMARY_TAG,
    Capability,
    ItemChanges,
    ItemQuery,
    MemoryItem,
)
from memvault.gardener.phases.base import PhaseContext, preview, record
from memvault.gardener.report import OpLine
from memvault.gardener.tasks import (
    DEDUP_CLUSTER,
    DEDUP_CONFIRMED,
    DEDUP_VALIDATE,
    DedupClusterRequest,
    DedupConfirmedRequest,
    DedupValidateRequest,
    ScoredPair,
)
from memvault.grounded_text import merged_problem

#: Merge rules by score name: the higher value wins, or the values are averaged.
HIGHER = frozenset(
    {"importance", "strength", "confidence", "exposure", "access_count", "salience", "priority"}
)
AVERAGE = frozenset({"emotion", "sentiment", "valence", "arousal", "mood", "feedback_score"})

NEEDS = (Capability.SEARCH, Capability.DUPLICATE_CHECK)


def pair_key(a: str, b: str) -> str:
    return "|".join(sorted((a, b)))


def merged_scores(items: Sequence[MemoryItem]) -> dict[str, float]:
    """Combine numeric fields by the merge rules (unknown names: the survivor's value)."""
    out: dict[str, float] = dict(items[0].scores)
    names = {n for i in items for n in i.scores}
    for name in names:
        values = [i.scores[name] for i in items if name in i.scores]
        if name in HIGHER:
            out[name] = max(values)
        elif name in AVERAGE:
            out[name] = round(sum(values) / len(values), 6)
    return out


def choose_survivor(items: Sequence[MemoryItem]) -> MemoryItem:
    """Pinned first, then the most important, then the oldest, then the smallest id."""
    far = dt.datetime.max
    return sorted(
        items,
        key=lambda i: (not i.pinned, -(i.importance or 0.0), i.created_at or far, i.id),
    )[0]


def run_dedup(ctx: PhaseContext) -> None:
    if not ctx.has(*NEEDS):
        missing = [c.value for c in NEEDS if not ctx.has(c)]
        ctx.run.skip("dedup", f"no {' / '.join(missing)} capability")
        return
    can_merge = ctx.has(Capability.MUTATE, Capability.ARCHIVE)
    if not can_merge and ctx.has(Capability.DELETE):
        ctx.run.skip(
            "dedup",
            "no archive capability: only an exact repeat within one container is merged, by "
            "deleting the repeat (autonomous mode, after the snapshot); other merges proposed",
        )
    elif not can_merge:
        ctx.run.skip(
            "dedup",
            "merges proposed only: no mutate (update in place) / archive capability",
        )
    if not ctx.cursor.get("approved_done"):
        _execute_approved(ctx, can_merge)
        ctx.advance(approved_done=True)
    _scan_window(ctx, can_merge)


# --------------------------------------------------------------------------- approved first


def run_dedup_approved(ctx: PhaseContext) -> None:
    """Only the approved merges (a run that resumes past GD1 still executes them first)."""
    if ctx.has(*NEEDS, Capability.MUTATE, Capability.ARCHIVE):
        _execute_approved(ctx, True)
    elif ctx.has(*NEEDS, Capability.DELETE):
        _execute_approved(ctx, False)


def lossless(survivor: MemoryItem, item: MemoryItem) -> bool:
    """Whether deleting ``item`` loses nothing ``survivor`` does not hold: the same text in the
    same container, no tag, score or importance the survivor lacks, nothing pinned."""
    return (
        item.text == survivor.text
        and item.container == survivor.container
        and not item.pinned
        and set(item.tags) <= set(survivor.tags)
        and (item.importance or 0.0) <= (survivor.importance or 0.0)
        and all(survivor.scores.get(k) == v for k, v in item.scores.items())
    )


def _execute_approved(ctx: PhaseContext, can_merge: bool) -> None:
    can_delete = ctx.has(Capability.DELETE)
    if not (can_merge or can_delete):
        return
    for proposal in ctx.ledger.executable(ctx.store.name, "merge", ctx.autonomous):
        survivor_id = proposal.related[0] if proposal.related else ""
        items = {i.id: i for i in ctx.store.get_items([survivor_id, proposal.target_id])}
        survivor, absorbed = items.get(survivor_id), items.get(proposal.target_id)
        if (
            survivor is None
            or absorbed is None
            or survivor.status != "active"
            or absorbed.status != "active"
        ):
            ctx.settle_proposal(proposal, "stale", "an item of the proposal was retired meanwhile")
            continue
        if can_merge:
            ctx.need(2)
            _merge(ctx, survivor, [absorbed], reason=f"approved proposal {proposal.id}")
        elif lossless(survivor, absorbed):
            ctx.need(1)
            _merge_by_delete(ctx, survivor, [absorbed], reason=f"approved proposal {proposal.id}")
        else:
            continue  # this store cannot merge it without losing something: it stays proposed
        ctx.settle_proposal(proposal, "executed", f"merged by {ctx.run.run_id}")


# --------------------------------------------------------------------------- the window


def _window_items(ctx: PhaseContext, after: str | None) -> list[MemoryItem]:
    if ctx.srun.first_run:
        if after is not None:
            return []  # the recent window is one page
        recent = ctx.store.list_items(ItemQuery(order="newest", limit=ctx.config.first_run_items))
        return sorted(recent, key=lambda i: (i.updated_at or dt.datetime.min, i.id))
    return ctx.store.list_items(
        ItemQuery(
            changed_since=dt.datetime.fromisoformat(ctx.srun.window_start)
            if ctx.srun.window_start
            else None,
            changed_before=dt.datetime.fromisoformat(ctx.srun.window_end),
            order="oldest",
            after=after,
            limit=ctx.config.window_page,
        )
    )


def _components(pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[str]] = {}
    for x in parent:
        groups.setdefault(find(x), []).append(x)
    return [sorted(g) for g in groups.values()]


def _scan_window(ctx: PhaseContext, can_merge: bool) -> None:
    judged = set(ctx.srun.judged)
    after = ctx.cursor.get("after")
    metrics = ctx.run.phase_metrics.setdefault(
        "dedup", {"candidate_pairs": 0, "search_s": 0.0, "window_items": 0}
    )
    while True:
        page = _window_items(ctx, after)
        if not page:
            return
        # The gardener's own summaries (stores without a journal) are not memories to tend,
        # and must not count as news, or every run would find the previous run's summary.
        tended = [item for item in page if GARDEN_SUMMARY_TAG not in item.tags]
        order = {item.id: n for n, item in enumerate(tended)}
        metrics["window_items"] += len(tended)
        ctx.srun.tally("window_items", len(tended))
        pairs = ctx.store.duplicate_candidates(list(order), ctx.config.similarity)
        seconds = getattr(getattr(ctx.store, "last_similarity", None), "seconds", None)
        if seconds is not None:
            metrics["search_s"] = round(metrics["search_s"] + float(seconds), 4)
            metrics["method"] = getattr(ctx.store.last_similarity, "method", "")  # type: ignore[attr-defined]
        metrics["candidate_pairs"] += len(pairs)
        ctx.srun.tally("candidate_pairs", len(pairs))
        ctx.srun.crowd([(p.a_id, p.b_id) for p in pairs])
        score = {pair_key(p.a_id, p.b_id): p.similarity for p in pairs}
        fresh = [(p.a_id, p.b_id) for p in pairs if pair_key(p.a_id, p.b_id) not in judged]
        clusters = _components(fresh)
        # Oldest window member first (items outside the window sort last, by id).
        clusters.sort(key=lambda c: (min(order.get(i, len(order)) for i in c), c[0]))
        # On a resume the page is read again; the judged pairs are not judged twice.
        ctx.advance(approved_done=True, after=after)
        for cluster in clusters:
            members = set(cluster)
            keys = [pair_key(a, b) for a, b in fresh if a in members and b in members]
            _judge_cluster(ctx, cluster, score, can_merge)
            judged.update(keys)
            ctx.srun.judged = sorted(judged)
        if len(page) < ctx.config.window_page or ctx.srun.first_run:
            return
        after = page[-1].id
        ctx.advance(approved_done=True, after=after)


def _judge_cluster(
    ctx: PhaseContext, cluster: list[str], score: dict[str, float], can_merge: bool
) -> None:
    items = [i for i in ctx.store.get_items(cluster) if i.status == "active"]
    if len(items) < 2:
        return
    by_id = {i.id: i for i in items}
    if len(items) == 2:
        a, b = sorted(items, key=lambda i: (i.updated_at or dt.datetime.min, i.id))
        sim = score.get(pair_key(a.id, b.id), 0.0)
        reply = ctx.ask(
            DEDUP_VALIDATE,
            DedupValidateRequest(new=record(b), existing=record(a), similarity=sim),
        )
        pair = f"{a.id} ↔ {b.id} (similarity {sim:.2f})"
        clear = (
            reply.verdict == "merge"
            and reply.confidence >= ctx.config.confident
            and reply.shared_core >= ctx.config.shared_core
        )
        if clear:
            _decide_merge(ctx, [a, b], reply.confidence, reply.reason, can_merge, sim)
        elif reply.verdict == "keep_both":
            ctx.defer(f"{pair} — kept both: {reply.reason}")
            ctx.srun.tally("kept_apart")
        else:
            _uncertain(ctx, [a, b], reply.confidence, reply.reason, sim)
        return
    pairs = [
        ScoredPair(a=a, b=b, similarity=s)
        for key, s in sorted(score.items())
        for a, b in [key.split("|")]
        if a in by_id and b in by_id
    ]
    reply_c = ctx.ask(
        DEDUP_CLUSTER,
        DedupClusterRequest(records=[record(i) for i in items], pairs=pairs),
    )
    grouped: set[str] = set()
    for group in reply_c.merge_groups:
        members = [by_id[i] for i in dict.fromkeys(group.ids) if i in by_id and i not in grouped]
        if len(members) < 2:
            continue
        grouped.update(m.id for m in members)
        sim = _best_score(members, score)
        if group.confidence >= ctx.config.confident and group.shared_core >= ctx.config.shared_core:
            _decide_merge(ctx, members, group.confidence, group.reason, can_merge, sim)
        else:
            _uncertain(ctx, members, group.confidence, group.reason, sim)
    for group in reply_c.uncertain_groups:
        members = [by_id[i] for i in dict.fromkeys(group.ids) if i in by_id and i not in grouped]
        if len(members) >= 2:
            grouped.update(m.id for m in members)
            _uncertain(ctx, members, group.confidence, group.reason, _best_score(members, score))
    kept = sorted(set(by_id) - grouped)
    if len(kept) >= 2:
        ctx.defer(f"{' ↔ '.join(kept)} — kept apart by the curator")
        ctx.srun.tally("kept_apart")


def _best_score(members: list[MemoryItem], score: dict[str, float]) -> float:
    """The highest candidate similarity among the members (0 when no pair was scored)."""
    return max(
        (score.get(pair_key(x.id, y.id), 0.0) for x in members for y in members if x.id < y.id),
        default=0.0,
    )


def _decide_merge(
    ctx: PhaseContext,
    members: list[MemoryItem],
    confidence: float,
    reason: str,
    can_merge: bool,
    similarity: float,
) -> None:
    survivor = choose_survivor(members)
    absorbed = [m for m in members if m.id != survivor.id]
    if any(m.pinned for m in absorbed):
        _uncertain(ctx, members, confidence, "a pinned item would be merged away", similarity)
        return
    by_delete = not can_merge and ctx.has(Capability.DELETE)
    deletable = by_delete and all(lossless(survivor, item) for item in absorbed)
    if ctx.autonomous and (can_merge or deletable) and not ctx.proposing("merge"):
        kind, action = ("blocks", "merge-archive") if can_merge else (None, "merge-delete")
        for item in absorbed:
            earlier = ctx.fixed_before(kind or item.kind, item.id, [action])
            if earlier:
                ctx.switch_to_proposing("merge", item.id, earlier)
                break
        else:
            if can_merge:
                ctx.need(1 + len(absorbed))
                _merge(ctx, survivor, absorbed, reason=reason)
            else:
                ctx.need(len(absorbed))
                _merge_by_delete(ctx, survivor, absorbed, reason=reason)
            return
    for item in absorbed:
        ctx.propose(
            action="merge",
            target_table="blocks",
            target_id=item.id,
            related=[survivor.id],
            certain=True,
            confidence=confidence,
            reason=reason,
            detail={"similarity": similarity, "preview": preview(item.text)},
            line=OpLine(
                "PROPOSED",
                "DELETE" if deletable else "ARCHIVE",
                item.id,
                None,
                preview(item.text),
                f"duplicate of {survivor.id}",
            ),
        )


def _uncertain(
    ctx: PhaseContext, members: list[MemoryItem], confidence: float, reason: str, similarity: float
) -> None:
    survivor = choose_survivor(members)
    ids = " ↔ ".join(m.id for m in members)
    for item in members:
        if item.id == survivor.id:
            continue
        pid = ctx.propose(
            action="merge",
            target_table="blocks",
            target_id=item.id,
            related=[survivor.id],
            certain=False,
            confidence=confidence,
            reason=reason,
            detail={"similarity": similarity, "preview": preview(item.text), "uncertain": True},
        )
        held = "held" if ctx.autonomous else "proposed"
        ctx.defer(
            f"{ids} (similarity {similarity:.2f}) — uncertain, {held} for review"
            + (f" [{pid}]" if pid else " (already queued)")
            + f": {reason}"
        )


def _merge(
    ctx: PhaseContext, survivor: MemoryItem, absorbed: list[MemoryItem], *, reason: str
) -> None:
    request = DedupConfirmedRequest(
        survivor=record(survivor), absorbed=[record(a) for a in absorbed]
    )
    reply, by_rules = ctx.ask_judged(DEDUP_CONFIRMED, request)
    everyone = [survivor, *absorbed]
    if not by_rules and (why := merged_problem(reply.text, [i.text for i in everyone])):
        # A model's merged text must say what the records say, all of it and nothing more;
        # else the records' own sentences are kept (the rules' merge).
        ctx.run.count("merge_texts_refused")
        ctx.run.notes.append(f"merged text for {survivor.id} refused ({why}); its records' own sentences kept")  # fmt: skip
        reply = DEDUP_CONFIRMED.heuristic(request)
    scores = merged_scores(everyone)
    importance = max((i.importance for i in everyone if i.importance is not None), default=None)
    tags = tuple(dict.fromkeys([*reply.tags, *(t for i in everyone for t in i.tags)]))
    changes = ItemChanges(text=reply.text, importance=importance, tags=tags, scores=scores)
    ctx.write("merge-update", reason, lambda w: ctx.store.update_item(w, survivor.id, changes))
    for item in absorbed:
        ctx.write(
            "merge-archive",
            f"merged into {survivor.id}: {reason}",
            lambda w, item=item: ctx.store.archive_item(w, item.id, pointer_to=survivor.id),  # type: ignore[misc]
        )
        ctx.op(OpLine("EXECUTED", "MERGE", survivor.id, item.id, preview(reply.text)))
        ctx.run.count("merges")


def _merge_by_delete(
    ctx: PhaseContext, survivor: MemoryItem, absorbed: list[MemoryItem], *, reason: str
) -> None:
    """A merge that is a deletion of exact repeats (see :func:`lossless`): the survivor
    already says all of it, so nothing is rewritten and nothing needs judging again; each
    repeat's whole item is the audit row's before-image."""
    for item in absorbed:
        ctx.write(
            "merge-delete",
            f"exact repeat of {survivor.id} in {item.container}: {reason}",
            lambda w, item=item: ctx.store.delete_item(w, item.id, duplicate_of=survivor.id),  # type: ignore[misc]
        )
        ctx.op(OpLine("EXECUTED", "MERGE", survivor.id, item.id, preview(survivor.text)))
        ctx.run.count("merges")
