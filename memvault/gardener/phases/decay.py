"""GD2 decay: items untouched for 30 days lose one importance step; low ones get an expiry.

Items whose use says they regained interest (a store that keeps usage signals reports
them through ``kept_by_use``) are left alone.

Never below the minimum, never a pinned / protected item, and an expiry date
instead of a proposed deletion. Both are in-place and undoable, so they run in
either mode. Stalest first: the next run continues where the budget ended,
because a decayed item starts a new untouched period.
"""

from __future__ import annotations

import datetime as dt

from memvault.gardener.adapter import Capability, ItemChanges, ItemQuery, MemoryItem
from memvault.gardener.phases.base import PhaseContext

PROTECTED_TAGS = frozenset({"pinned", "protected", "keep"})
_PAGE = 200


def _protected(item: MemoryItem) -> bool:
    return item.pinned or bool(PROTECTED_TAGS & {t.casefold() for t in item.tags})


def _kept_by_use(ctx: PhaseContext, items: list[MemoryItem]) -> set[str]:
    """Items the owner's use says regained interest (stores that can tell; others: none).

    Untouched means not edited and not accessed; a store that keeps usage signals (recalls,
    +/− feedback, verdicts) can say an old item is wanted again, and such an item is not
    decayed or given an expiry.
    """
    kept_by_use = getattr(ctx.store, "kept_by_use", None)
    if kept_by_use is None:
        return set()
    return set(kept_by_use([i.id for i in items], ctx.now))


def run_decay(ctx: PhaseContext) -> None:
    if not ctx.has(Capability.SEARCH, Capability.MUTATE):
        missing = [c.value for c in (Capability.SEARCH, Capability.MUTATE) if not ctx.has(c)]
        ctx.run.skip("decay", f"no {' / '.join(missing)} capability")
        return
    if not ctx.has(Capability.TIMESTAMPS):
        ctx.run.skip("decay", "no timestamps capability: no item can be called untouched")
        return
    can_expire = ctx.has(Capability.EXPIRE)
    if not can_expire:
        ctx.run.skip("decay", "no expire capability: low items keep no expiry date")
    cfg = ctx.config
    cutoff = ctx.now - dt.timedelta(days=cfg.decay_after_days)
    floor = cfg.expire_below if can_expire else cfg.importance_min
    # No keyset cursor: a decayed item starts a new untouched period and drops out of the
    # query by itself, so the stalest remaining items are always the next ones to look at.
    passed: set[str] = set()
    unweighted = 0  # untouched items with no importance to lower
    while True:
        page = ctx.store.list_items(
            ItemQuery(
                untouched_before=cutoff,
                include_pinned=False,
                decay_floor=floor,
                order="stalest",
                limit=_PAGE + len(passed),
            )
        )
        todo = [i for i in page if i.id not in passed]
        if not todo:
            break
        limit = _PAGE + len(passed)
        kept = _kept_by_use(ctx, todo)
        for item in todo:
            ctx.advance(at=item.id)
            if item.id in kept:  # not an action: counted beside the phase's timing
                metrics = ctx.run.phase_metrics.setdefault("decay", {})
                metrics["kept_by_use"] = metrics.get("kept_by_use", 0) + 1
            else:
                unweighted += item.importance is None and not _protected(item)
                _decay_one(ctx, item, cutoff, can_expire)
            passed.add(item.id)  # looked at once per run, decayed or not
        if len(page) < limit:
            break
    if unweighted:
        ctx.run.skip(
            "decay",
            f"{unweighted} item(s) untouched for {cfg.decay_after_days}+ days (by their "
            "timestamps) have no importance in this store to lower",
        )


def _decay_one(ctx: PhaseContext, item: MemoryItem, cutoff: dt.datetime, can_expire: bool) -> bool:
    """Decay one item; False when it was left as it is (so the page moves past it)."""
    cfg = ctx.config
    if _protected(item) or item.importance is None:
        return False
    earlier = ctx.fixed_before("blocks", item.id, ["decay"], since=cutoff)
    if earlier or ctx.proposing("decay"):
        if earlier:
            ctx.switch_to_proposing("decay", item.id, earlier)
        return False
    lowered = round(max(cfg.importance_min, item.importance - cfg.decay_step), 6)
    will_lower = lowered < item.importance - 1e-9
    will_expire = can_expire and item.expires_at is None and lowered <= cfg.expire_below + 1e-9
    if not (will_lower or will_expire):
        return False
    ctx.need(int(will_lower) + int(will_expire))
    if will_lower:
        ctx.write(
            "decay",
            f"untouched for {cfg.decay_after_days}+ days: importance {item.importance:g} → {lowered:g}",
            lambda w: ctx.store.update_item(w, item.id, ItemChanges(importance=lowered)),
        )
        ctx.run.count("decays")
    if will_expire:
        when = ctx.now + dt.timedelta(days=cfg.expire_after_days)
        ctx.write(
            "expire",
            f"importance {lowered:g} at the floor: expires {when:%Y-%m-%d} instead of a deletion",
            lambda w: ctx.store.set_expiry(w, item.id, when),
        )
    return True
