"""``memvault tier | usage``: tiering by effective age, and the usage signals behind it.

``tier`` runs one tiering pass in this process (``--dry-run`` plans it and writes
nothing); ``usage`` shows what recalls and feedback say about the store's blocks, or
about the blocks named.
"""

from __future__ import annotations

from typing import Annotated, Any

import polars as pl
import typer
from rich.markup import escape
from rich.table import Table

from memvault.errors import MemvaultError
from memvault.judge import make_judge
from memvault.judge.store_cache import StoreJudgeCache
from memvault.lifecycle.tiering import TierConfig, plan_tiering, run_tiering
from memvault.lifecycle.weights import block_weights, weights_summary
from memvault.normalize import utcnow
from memvault.store.queries.blocks import missing_blocks
from pipelines.cli.common import JsonOpt, StoreOpt, app, emit_json, handles_errors, opened, out


@app.command()
@handles_errors
def tier(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Plan and show the moves; write nothing, ask nothing")
    ] = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move each memory block to the tier its effective age asks for (hot, warm, cold, frozen);
    cold and frozen blocks show a digest instead of their text, yet recall still finds them by
    it (`memvault show BLOCK --original` prints it; undo the run to restore it).
    Thresholds: MEMVAULT_TIER_HOT_DAYS / _WARM_DAYS / _COLD_DAYS."""
    with opened(store) as handle:
        judge = make_judge(cache=StoreJudgeCache(handle))
        result = run_tiering(handle, judge, config=TierConfig.from_env(), dry_run=dry_run)
        calls = judge.stats.calls
    summary = result.summary() | {"judge": judge.kind, "llm_calls": calls}
    if as_json:
        emit_json(summary)
        return
    table = Table(title="tiers", title_justify="left")
    for column in ("tier", "before", "after"):
        table.add_column(column)
    for name, before in summary["tiers_before"].items():
        table.add_row(escape(name), str(before), str(summary["tiers_after"][name]))
    out.print(table)
    edges = ", ".join(f"{edge} {n}" for edge, n in summary["by_edge"].items()) or "none"
    out.print(f"{summary['demotions']} demotion(s), {summary['promotions']} promotion(s): {edges}")
    out.print(
        f"kept in a warmer tier by use: {summary['kept_by_use']}; digests: "
        f"{summary['digests'] or 'none'}; rejected replies: {summary['rejected_replies']}; "
        f"judge {judge.kind}, {calls} LLM call(s)"
    )
    if dry_run:
        out.print("dry run: nothing written")
    elif summary["run_id"]:
        out.print(
            f"run {summary['run_id']}: undo with `memvault undo {summary['run_id']}`",
            soft_wrap=True,
        )
    else:
        out.print("every block is in its tier already: nothing written")


@app.command()
@handles_errors
def usage(
    block_ids: Annotated[
        list[str] | None, typer.Argument(help="Blocks to show (default: a summary of all)")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What recalls and feedback say about the memory blocks: access multiplier, the owner's
    +/−, recall verdicts, effective age and the tier it asks for."""
    now = utcnow()
    with opened(store) as handle:
        if not block_ids:
            summary = weights_summary(block_weights(handle, now))
            if as_json:
                emit_json(summary)
            else:
                histogram = summary.pop("multiplier_histogram")
                out.print(", ".join(f"{k} {v}" for k, v in summary.items()))
                out.print(
                    "access multiplier: " + ", ".join(f"{k}: {v}" for k, v in histogram.items())
                )
            return
        unknown = missing_blocks(handle, block_ids)
        if unknown:
            raise MemvaultError(
                f"no memory block {', '.join(unknown)} in this store (block ids are shown by "
                "`memvault recall` and `memvault export --type block`)"
            )
        plan = plan_tiering(handle, now, TierConfig.from_env())
        weights = block_weights(handle, now, block_ids)
    rows = weights.join(
        plan.blocks.select("id", "tier", "target", "age_days", "effective_age_days"),
        left_on="block_id",
        right_on="id",
        how="left",
    ).with_columns(pl.col("age_days", "effective_age_days").round(1))
    records: list[dict[str, Any]] = rows.to_dicts()
    if as_json:
        emit_json(records)
        return
    table = Table(title="usage", title_justify="left")
    columns = ("block_id", "access_multiplier", "feedback_boost", "verdict_score", "age_days",
               "effective_age_days", "tier", "target")  # fmt: skip
    for column in columns:
        table.add_column(column.replace("_", " "))
    for record in records:
        table.add_row(*(escape(str(record.get(c))) for c in columns))
    out.print(table)
