"""How ``memvault recall`` and ``memvault feedback`` print their answer, from its JSON form.

The same answer comes from this process or from a running ``memvault serve``; both are
printed here. Light on purpose (rich only): the shell's fast path imports it.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _snippet(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_recall(out: Console, result: dict[str, Any]) -> None:
    """The recall's header, its hits as a table, the current facts and how to rate it."""
    names_of = result.get("entity_names") or {}
    names = ", ".join(names_of.get(e, e) for e in result.get("entities") or []) or "-"
    mode = result.get("search_mode")
    source = "served from prefetch" if result.get("served_from_prefetch") else f"searched ({mode})"
    if result.get("served_by") == "server":
        source += " by the running server"
    built = result.get("index_build_ms") or 0
    out.print(
        f"recall [bold]{escape(result['recall_id'])}[/]  intent {escape(result.get('intent') or '-')}  "
        f"entities {escape(names)}  {source}  {result.get('latency_ms') or 0:.0f} ms"
        + (f" (index built in {built:.0f} ms)" if built else ""),
        highlight=False,
    )
    if mode == "keywords":
        out.print(
            "[yellow]note:[/] the store has no vectors of the configured embedder; searched by "
            "keywords only (run `memvault collect` to embed)"
        )
    if result.get("gap_hint"):
        out.print(f"[red]gap:[/] {escape(result['gap_hint']['message'])}", highlight=False)
    table = Table("rank", "score", "tier", "text", "block id")
    hits = result.get("results") or []
    for rank, hit in enumerate(hits, 1):
        tier = hit["tier"] if not hit.get("digest_kind") else f"{hit['tier']} ({hit['digest_kind']} digest)"  # fmt: skip
        tier = escape(tier)
        if hit.get("original_archived"):  # found by the original, shown as its digest
            tier += "\noriginal archived"
        text = escape(_snippet(hit["text"]))
        if hit.get("kind") == "insight":  # the dream's reading of the memories it cites
            cites = escape(", ".join(hit.get("cites") or []))
            text = f"[magenta]insight:[/] {text} [dim](cites {cites})[/]"
        if hit.get("superseded_since"):  # what it states no longer holds
            since = escape(str(hit["superseded_since"])[:10])
            text = f"{text} [yellow](superseded since {since})[/]"
        elif hit.get("older"):  # a later memory says otherwise (see recall docs, slots)
            text = f"{text} [yellow](older: see {escape(str(hit['superseded_by']))})[/]"
        table.add_row(str(rank), f"{hit['score']:.3f}", tier, text, escape(hit["block_id"]))
    out.print(table if hits else "no memory matches this query")
    if hits and result.get("weak_match"):
        out.print("[yellow]weak match:[/] none of these matches the query well", highlight=False)
    if any(h.get("original_archived") for h in hits):
        out.print("digests stand in for archived originals: memvault show BLOCK --original", highlight=False)  # fmt: skip
    for fact in result.get("facts") or []:
        who = names_of.get(fact["subject_id"], fact["subject_id"])
        out.print(
            f"  fact: {escape(who)} {escape(fact['predicate'])} {escape(fact['object'])}",
            highlight=False,
        )
    out.print(
        f"rate it: memvault feedback {escape(result['recall_id'])} correct|incorrect|ambiguous|+|-",
        highlight=False,
    )


def print_feedback(out: Console, report: dict[str, Any], verdict: str) -> bool:
    """What a feedback recorded and how to undo it; False when nothing was recorded."""
    scores = report.get("feedback_scores") or {}
    if scores:
        shown = ", ".join(f"{b} → {s:+g}" for b, s in scores.items())
        out.print(f"recorded {escape(verdict)} on {escape(report['recall_id'])}: feedback score {escape(shown)}", highlight=False)  # fmt: skip
    elif not report.get("feedback_ids"):
        return False
    else:
        out.print(f"recorded verdict {escape(report['verdict'])} on {escape(report['recall_id'])}", highlight=False)  # fmt: skip
    out.print(f"undo it with: memvault undo {escape(report['run_id'])}", highlight=False)
    return True
