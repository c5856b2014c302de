"""GD6 journal: what this run learned about the store, in a few sentences, and one line on
the garden's state.

Every run writes its entry to the store's journal: a run that spent its budget too (the
entry records the run, like the report, so it is outside the mutation budget) and a quiet
run ("nothing new since …"). A store without a journal gets the entry as a memory item
tagged ``garden-summary`` — except from a quiet run: a memory saying that nothing happened
is not worth keeping, and the next run would only find it again.

The entry says what changed about what: the topics of what came in since the last run;
the items merged, decayed, split and reconnected and the facts retired, by what they are
about; what waits for review; where the run stopped. The state line names the topic with
the most duplicate candidates and the one of the over-long items. Topics come from the
store where it can say (``about``: memvault's store names the entities the items
mention), else from the items' own tags, else the words they share; a quote is an item's
first words. Nothing is judged and nothing invented, lists are short, and the entry stays
under :data:`MAX_CHARS`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from typing import Any

from memvault.gardener.adapter import (
    GARDEN_SUMMARY_TAG,
    Capability,
    CapabilityMissing,
    ItemQuery,
    MemoryItem,
    NewItem,
)
from memvault.gardener.phases.base import PhaseContext, preview
from memvault.gardener.state import phase_label
from memvault.text_tokens import STOPWORDS, folded_words

#: An entry is at most this long (a summary item also stays under the split phase's bound).
MAX_CHARS = 1200
#: Names or quotes per list.
NAMES = 3
#: Items of the window read for its topics (newest first); items of the over-long listing.
WINDOW_SAMPLE = 200
LONG_SAMPLE = 50
#: Items of the most duplicate candidates whose topic is the dedup pressure's.
CROWDED_SAMPLE = 20
#: Tags the gardener writes itself: they say nothing about what an item is about.
_OWN_TAGS = ("merged-into:", "split-from:", GARDEN_SUMMARY_TAG)


def _when(iso: str | None) -> str:
    if not iso:
        return "the start"
    return f"{dt.datetime.fromisoformat(iso):%Y-%m-%d %H:%M} UTC"


def _names(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _quote(item: MemoryItem, words: int = 8) -> str:
    """An item's first words, quoted."""
    head = item.text.split()
    text = " ".join(head[:words]) + ("…" if len(head) > words else "")
    return f"“{preview(text, 70)}”"


def item_topics(items: Sequence[MemoryItem], limit: int = NAMES) -> list[str]:
    """What items are about by themselves: their most common tags (the gardener's own left
    out), else the words several of them share (no function words, no numbers)."""
    tags = Counter(t for i in items for t in dict.fromkeys(i.tags) if not t.startswith(_OWN_TAGS))
    if tags:
        return [t for t, _ in sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))][:limit]
    shared = Counter(
        w
        for i in items
        for w in set(folded_words(i.text))
        if len(w) > 2 and w not in STOPWORDS and not w.isdigit()
    )
    ranked = sorted(shared.items(), key=lambda kv: (-kv[1], kv[0]))
    return [w for w, n in ranked if n > 1 or len(items) == 1][:limit]


class _Topics:
    """What sets of items are about: asked of the store, else read off the items."""

    def __init__(self, ctx: PhaseContext) -> None:
        self.ctx = ctx
        self.search = ctx.has(Capability.SEARCH)
        self._about = getattr(ctx.store, "about", None) if self.search else None

    def items(self, ids: Sequence[str]) -> list[MemoryItem]:
        return self.ctx.store.get_items(list(ids)) if self.search and ids else []

    def of(self, ids: Sequence[str], items: Sequence[MemoryItem] | None = None) -> list[str]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        if self._about is not None:
            try:
                named = [str(name) for name, _ in self._about(ids, NAMES)]
            except CapabilityMissing:
                named = []
            if named:
                return [preview(n, 40) for n in named]
        return [preview(t, 40) for t in item_topics(self.items(ids) if items is None else items)]


def _targets(entry: dict[str, Any] | None) -> list[str]:
    return [str(t) for t, _ in (entry or {}).get("items", [])]


def _labels(entry: dict[str, Any] | None) -> list[str]:
    """The targets' labels, each once, the most frequent first (``×n`` when several)."""
    counts = Counter(str(label) for _, label in (entry or {}).get("items", []) if label)
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])  # stable: first seen first
    return [label + (f" ×{n}" if n > 1 else "") for label, n in ranked]


def _count(entry: dict[str, Any] | None) -> int:
    return int((entry or {}).get("n", 0))


def _about(topics: list[str]) -> str:
    return f" (about {_names(topics)})" if topics else ""


def _window(ctx: PhaseContext) -> list[MemoryItem]:
    """The newest items of the run's window (a first run: the recent items it looked at)."""
    if not ctx.has(Capability.SEARCH):
        return []
    srun = ctx.srun
    if srun.first_run:
        query = ItemQuery(order="newest", limit=min(ctx.config.first_run_items, WINDOW_SAMPLE))
    else:
        start = dt.datetime.fromisoformat(srun.window_start) if srun.window_start else None
        query = ItemQuery(
            changed_since=start,
            changed_before=dt.datetime.fromisoformat(srun.window_end),
            order="newest",
            limit=WINDOW_SAMPLE,
        )
    return [i for i in ctx.store.list_items(query) if GARDEN_SUMMARY_TAG not in i.tags]


def _changes(ctx: PhaseContext, topics: _Topics) -> list[str]:
    """One sentence per kind of change this run made to the store."""
    changed: dict[str, Any] = ctx.srun.learned.get("changed", {})
    out = []
    merged = changed.get("merge-update")
    if merged:
        survivors = _targets(merged)
        shown = topics.items(survivors[:NAMES])
        quotes = ", ".join(_quote(i) for i in shown)
        absorbed = _count(changed.get("merge-archive"))
        out.append(
            f"Merged {_plural(absorbed, 'duplicate')} into {_plural(_count(merged), 'item')}"
            + _about(topics.of(survivors))
            + (f": {quotes}" if quotes else "")
            + "."
        )
    decayed, expiring = changed.get("decay"), changed.get("expire")
    if decayed or expiring:
        about = _about(topics.of(_targets(decayed) + _targets(expiring)))
        if decayed:
            sentence = f"Decayed {_plural(_count(decayed), 'unused item')}{about}"
            if expiring:
                sentence += f"; {_count(expiring)} of them now expire instead of being deleted"
        else:
            sentence = f"Gave {_plural(_count(expiring), 'unused item')}{about} an expiry date"
        out.append(sentence + ".")
    trimmed = changed.get("split-trim")
    if trimmed:
        parents = _targets(trimmed)
        details = _count(changed.get("split-child")) + _count(changed.get("split-append"))
        quotes = ", ".join(_quote(i) for i in topics.items(parents[:NAMES]))
        out.append(
            f"Split {_plural(_count(trimmed), 'over-long item')}{_about(topics.of(parents))} "
            f"into {'its' if _count(trimmed) == 1 else 'their'} gist and "
            f"{_plural(details, 'linked detail')}" + (f": {quotes}" if quotes else "") + "."
        )
    retired = changed.get("invalidate")
    if retired:
        labels = _labels(retired)
        more = " …" if len(labels) > NAMES else ""
        out.append(
            f"Retired {_plural(_count(retired), 'stale fact')}"
            + (f": {'; '.join(labels[:NAMES])}{more}" if labels else "")
            + "."
        )
    reconnected = changed.get("reconnect")
    if reconnected:
        out.append(
            f"Reconnected {_plural(_count(reconnected), 'orphan item')}"
            + _about(topics.of(_targets(reconnected)))
            + "."
        )
    return out


def _proposals(ctx: PhaseContext, topics: _Topics) -> str | None:
    proposed: dict[str, Any] = ctx.srun.learned.get("proposed", {})
    total = sum(_count(e) for e in proposed.values())
    if not total:
        return None
    parts = []
    for action, entry in sorted(proposed.items()):
        labels = _labels(entry)
        if action == "invalidate" and labels:
            what = f" ({'; '.join(labels[:NAMES])})"
        else:
            what = _about(topics.of(_targets(entry)))
        noun = {"invalidate": "stale fact"}.get(action, action)
        parts.append(_plural(_count(entry), noun) + what)
    wait = "waits" if total == 1 else "wait"
    return f"{_plural(total, 'change')} {wait} for review: {', '.join(parts)}."


def _where_it_stopped(ctx: PhaseContext) -> str | None:
    stop, pending = ctx.srun.stop, ctx.srun.pending
    if stop is not None:
        reason = preview(str(stop.get("reason", "")), 80)
        return (
            f"The run stopped in {phase_label(str(stop['phase']))} ({reason}); "
            "the next run continues there."
        )
    if pending is not None:
        return (
            f"{phase_label(str(pending['phase'])).capitalize()} has work left "
            f"({pending.get('reason')}); the next run continues there."
        )
    return None


def _state_line(ctx: PhaseContext, topics: _Topics) -> str:
    """Dedup pressure and where it is, the over-long items and their topic, the budget."""
    learned = ctx.srun.learned
    pairs, kept = int(learned.get("candidate_pairs", 0)), int(learned.get("kept_apart", 0))
    merges = _count(learned.get("changed", {}).get("merge-archive"))
    pressure = "rising" if pairs > 2 * max(1, merges) + 2 else "steady"
    crowded = sorted(learned.get("crowded", {}).items(), key=lambda kv: (-kv[1], kv[0]))
    around = topics.of([i for i, _ in crowded[:CROWDED_SAMPLE]]) if pairs else []
    dedup = (
        f"dedup pressure {pressure} ({_plural(pairs, 'candidate pair')}, {kept} kept apart"
        + (f", most around {around[0]}" if around else "")
        + ")"
    )
    left = len(ctx.srun.settled.get("split", []))
    if ctx.has(Capability.SEARCH):
        long = ctx.store.list_items(
            ItemQuery(
                min_chars=ctx.config.bloat_chars,
                include_pinned=False,
                order="longest",
                limit=LONG_SAMPLE,
            )
        )
        count = f"{len(long)}+" if len(long) >= LONG_SAMPLE else str(len(long))
        subject = topics.of([i.id for i in long], long)
        bloat = (
            f"{count} over-long item(s)"
            + (f", most about {subject[0]}" if subject else "")
            + f" ({left} left as they are)"
            if long
            else "no over-long items"
        )
    else:
        bloat = f"{left} over-long item(s) left as they are"
    return (
        f"Garden state: {dedup}; {bloat}; "
        f"budget {ctx.budget.mutations}/{ctx.budget.max_mutations} mutations."
    )


def _fit(sentences: list[tuple[int, str]], room: int) -> str:
    """The sentences in order, dropping the least important (highest rank, the last of a
    rank first) until they fit."""
    kept = list(sentences)
    while len(kept) > 1 and len(" ".join(s for _, s in kept)) > room:
        worst = max(range(len(kept)), key=lambda n: (kept[n][0], n))
        del kept[worst]
    text = " ".join(s for _, s in kept)
    return text if len(text) <= room else preview(text, room)


def is_quiet(ctx: PhaseContext, window: Sequence[MemoryItem]) -> bool:
    """Nothing came in, and the run changed and proposed nothing here and stopped nowhere."""
    srun = ctx.srun
    return (
        not window
        and not srun.learned.get("window_items")
        and not srun.learned.get("changed")
        and not srun.learned.get("proposed")
        and srun.stop is None
        and srun.pending is None
    )


def journal_text(ctx: PhaseContext, max_chars: int = MAX_CHARS) -> str:
    """The entry: what this run learned about the store, then the garden-state line."""
    srun, run = ctx.srun, ctx.run
    topics = _Topics(ctx)
    window = _window(ctx)
    since = _when(srun.window_start)
    head = f"Garden run {run.run_id} on {ctx.store.name}"
    body: list[tuple[int, str]] = []  # (rank: the higher, the sooner dropped for room)
    if is_quiet(ctx, window):
        body.append(
            (0, f"{head}: nothing new since {since}; no memory changed and nothing was proposed.")
        )
    else:
        counted = srun.learned.get("window_items")
        if counted is None:
            full = not srun.first_run and len(window) >= WINDOW_SAMPLE
            counted = f"{len(window)}+" if full else len(window)
        resumed = srun.since_source.startswith("resumed from")
        if srun.first_run:
            look = "continuing the first look" if resumed else "a first look"
            body.append((0, f"{head}: {look} at this store, at its {counted} newest items."))
        else:
            again = " (continuing the last run's window)" if resumed else ""
            body.append(
                (0, f"{head}: {counted} memory item(s) came in or changed since {since}{again}.")
            )
        came = topics.of([i.id for i in window], window)
        if came:
            body.append((4, f"What came in is mostly about {_names(came)}."))
        if not srun.learned.get("changed"):
            body.append((2, "This run changed no memory."))
        body.extend((2, s) for s in _changes(ctx, topics))
        proposals = _proposals(ctx, topics)
        if proposals:
            body.append((3, proposals))
        stopped = _where_it_stopped(ctx)
        if stopped:
            body.append((1, stopped))
    if ctx.has(Capability.STATS):
        now = ctx.store.stats()
        items, facts = now.get("items_active"), now.get("facts_active")
        if items is not None:
            body.append(
                (5, f"The store holds {items} active memory items and {facts or 0} active facts.")
            )
    state = _state_line(ctx, topics)
    return _fit(body, max_chars - len(state) - 1) + "\n" + state


def run_journal(ctx: PhaseContext) -> None:
    if ctx.has(Capability.JOURNAL):
        text = journal_text(ctx)
        ctx.record("journal", "garden journal entry", lambda w: ctx.store.write_journal(w, text))
        return
    if ctx.has(Capability.CREATE):
        if is_quiet(ctx, _window(ctx)):
            ctx.run.notes.append(
                f"{ctx.store.name}: nothing new since the last run and no journal; "
                "no garden-summary item (a memory saying nothing happened is not kept)"
            )
            return
        text = journal_text(ctx, min(MAX_CHARS, ctx.config.bloat_chars))
        item = NewItem(text=text, kind="memory", importance=0.3, tags=(GARDEN_SUMMARY_TAG,))
        ctx.record(
            "journal", "garden summary (no journal)", lambda w: ctx.store.create_item(w, item)
        )
        return
    ctx.run.skip("journal", "no journal and no create capability")
