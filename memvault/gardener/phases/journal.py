"""GD6 journal: one entry on what came in since the last run, plus one garden-state line.

Written to the store's journal, or — without one — as a memory item tagged
``garden-summary``. The text is built from counts the run already has, so it
costs no judgment and says nothing the store does not.
"""

from __future__ import annotations

from memvault.gardener.adapter import GARDEN_SUMMARY_TAG, Capability, NewItem
from memvault.gardener.phases.base import PhaseContext


def journal_text(ctx: PhaseContext) -> str:
    srun, run = ctx.srun, ctx.run
    before, now = srun.stats_before, ctx.store.stats() if ctx.has(Capability.STATS) else {}
    since = "the first look at this store" if srun.first_run else f"since {srun.window_start}"
    sentences = [
        f"Garden run {run.run_id} on {ctx.store.name}, {since}."
        if srun.first_run
        else f"Garden run {run.run_id} on {ctx.store.name} covered what changed {since}.",
    ]
    items = now.get("items_active", before.get("items_active"))
    facts = now.get("facts_active", before.get("facts_active"))
    if items is not None:
        sentences.append(
            f"The store holds {items} active memory items and {facts or 0} active facts."
        )
    acted = {k: v for k, v in run.actions.items() if v}
    if acted:
        sentences.append(
            "This run made " + ", ".join(f"{v} {k}" for k, v in sorted(acted.items())) + "."
        )
    else:
        sentences.append("This run changed no memory.")
    if run.proposals:
        sentences.append(f"{run.proposals} change(s) wait for review in the proposals queue.")
    pairs = run.phase_metrics.get("dedup", {}).get("candidate_pairs", 0)
    kept = sum(1 for d in run.deferred if "kept" in d)
    pressure = "rising" if pairs > 2 * max(1, run.actions.get("merges", 0)) + 2 else "steady"
    state = (
        f"Garden state: dedup pressure {pressure} ({pairs} candidate pairs, {kept} kept apart), "
        f"{len(srun.settled.get('split', []))} over-long item(s) left as they are, "
        f"budget {ctx.budget.mutations}/{ctx.budget.max_mutations} mutations."
    )
    return " ".join(sentences[:6]) + "\n" + state


def nothing_new(ctx: PhaseContext) -> bool:
    """True when the window brought no item and the run changed and proposed nothing."""
    window = ctx.run.phase_metrics.get("dedup", {}).get("window_items")
    return window == 0 and not any(ctx.run.actions.values()) and not ctx.run.proposals


def run_journal(ctx: PhaseContext) -> None:
    if nothing_new(ctx):
        ctx.run.notes.append(f"{ctx.store.name}: nothing new since the last run; no journal entry")
        return
    if ctx.has(Capability.JOURNAL):
        text = journal_text(ctx)
        ctx.write("journal", "garden journal entry", lambda w: ctx.store.write_journal(w, text))
        return
    if ctx.has(Capability.CREATE):
        text = journal_text(ctx)
        item = NewItem(text=text, kind="memory", importance=0.3, tags=(GARDEN_SUMMARY_TAG,))
        ctx.write(
            "journal", "garden summary (no journal)", lambda w: ctx.store.create_item(w, item)
        )
        return
    ctx.run.skip("journal", "no journal and no create capability")
