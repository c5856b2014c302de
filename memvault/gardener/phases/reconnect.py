"""GD5 reconnect orphans: at most 10 a run; one unambiguous link, or leave it and say so.

A wrong link is worse than none: a node is linked only when exactly one
candidate exists (a child of a merged-away item goes to the survivor; an
entity named by exactly one memory gets that mention). Everything else is
recorded once and left alone.
"""

from __future__ import annotations

from memvault.gardener.adapter import Capability
from memvault.gardener.phases.base import PhaseContext


def run_reconnect(ctx: PhaseContext) -> None:
    if not ctx.has(Capability.STRUCTURE):
        ctx.run.skip("reconnect", "no structure capability (containers / links)")
        return
    cfg = ctx.config
    settled = ctx.settled()
    orphans = ctx.store.orphans(limit=cfg.max_reconnects + len(settled) + 1)
    for node in orphans:
        if node.id in settled:
            continue
        if ctx.srun.reconnects_done >= cfg.max_reconnects:
            ctx.leave_for_next_run(f"{cfg.max_reconnects} reconnects per run; more orphans wait")
            return
        ctx.advance(after=node.id)
        candidates = ctx.store.link_candidates(node)
        if len(candidates) != 1:
            why = "no candidate" if not candidates else f"{len(candidates)} candidates"
            ctx.defer(f"orphan {node.node_kind} {node.id} ({node.problem}) — {why}; left as is")
            ctx.settle(node.id)
            continue
        link = candidates[0]
        earlier = ctx.fixed_before(
            "blocks" if node.node_kind == "item" else "mentions", node.id, ["reconnect"]
        )
        if earlier and not ctx.proposing("reconnect"):
            ctx.switch_to_proposing("reconnect", node.id, earlier)
        if ctx.proposing("reconnect"):
            ctx.propose(
                action="reconnect",
                target_table=node.node_kind,
                target_id=node.id,
                related=[link.target_id],
                certain=True,
                confidence=0.9,
                reason=f"{link.relation} → {link.target_id}: {link.evidence}",
            )
            ctx.settle(node.id)
            continue
        ctx.write(
            "reconnect",
            f"{node.problem}: {link.relation} → {link.target_id} ({link.evidence})",
            lambda w, node=node, link=link: ctx.store.add_link(w, node, link),  # type: ignore[misc]
        )
        ctx.srun.reconnects_done += 1
        ctx.run.count("reconnects")
