"""What the assets of every track share: the store pool, owners, kinds and metadata helpers.

Metadata is written for the Dagster UI: flat numbers it can plot over runs,
times as timestamps, and nested detail as a small markdown table rather than
a raw dictionary.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

from memvault.config import store_url
from memvault.errors import JudgeError
from memvault.stage import Markdown, Verdict, judge_figures

#: DuckDB has one writer process: every step that opens the store (asset or check) runs in
#: this pool, whose limit is 1 (dagster.yaml), so no two steps of any run hold the file at once.
STORE_POOL = "memvault_store"

#: Who answers for these assets in the UI's catalog.
OWNERS = ["team:memvault"]


def store_kind() -> str:
    """The kind badge of the configured store (read when the code location loads)."""
    return "postgres" if store_url().lower().startswith("postgres") else "duckdb"


def kinds(*extra: str, llm: bool = False) -> set[str]:
    """The store's kind, the given ones, and ``openai`` only when an LLM endpoint is configured
    (Dagster shows at most three)."""
    chosen = [store_kind()]
    if llm and os.environ.get("MEMVAULT_LLM_BASE_URL", "").strip():
        chosen.append("openai")
    return set(list(dict.fromkeys([*chosen, *extra]))[:3])


def timestamp(value: dt.datetime | None) -> dg.MetadataValue:
    """A time as a timestamp the UI renders (naive times are UTC); ``never`` for None."""
    if value is None:
        return dg.MetadataValue.text("never")
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return dg.MetadataValue.timestamp(value)


def md_table(
    rows: Mapping[str, Any] | Iterable[Mapping[str, Any]], columns: tuple[str, ...] = ()
) -> dg.MetadataValue:
    """A mapping (name → value) or a list of records as a markdown table."""
    if isinstance(rows, Mapping):
        columns = columns or ("name", "value")
        records = [dict(zip(columns, item, strict=True)) for item in rows.items()]
    else:
        records = [dict(r) for r in rows]
        columns = columns or tuple(dict.fromkeys(k for r in records for k in r))
    if not records:
        return dg.MetadataValue.md("_none_")

    def cell(value: Any) -> str:
        text = ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in records),
    ]
    return dg.MetadataValue.md("\n".join(lines))


#: The judge's work in a stage, as the assets show it (the core's figures).
judge_metadata = judge_figures


def as_metadata(values: Mapping[str, Any]) -> dict[str, Any]:
    """A core result's ``metadata()`` in the UI's terms: mappings and lists of records become
    markdown tables, times become timestamps, :class:`~memvault.stage.Markdown` is rendered,
    flat numbers and words stay as they are."""
    shown: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Markdown):
            shown[key] = dg.MetadataValue.md(str(value))
        elif isinstance(value, Mapping):
            shown[key] = md_table({str(k): v for k, v in value.items()})
        elif isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
            shown[key] = md_table(value)
        elif isinstance(value, dt.datetime):
            shown[key] = timestamp(value)
        else:
            shown[key] = value
    return shown


#: A verdict's severity as Dagster shows it.
SEVERITY = {"error": dg.AssetCheckSeverity.ERROR, "warn": dg.AssetCheckSeverity.WARN}


def check_result(name: str, verdict: Verdict, asset: str | None = None) -> dg.AssetCheckResult:
    """A core check's verdict as the evaluation of ``asset``'s check ``name``."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=name,
        passed=verdict.passed,
        severity=SEVERITY[verdict.severity],
        description=verdict.description,
        metadata=as_metadata(verdict.figures),
    )


#: Every asset that calls an LLM retries a failed LLM call twice, 30 s then 60 s later (an
#: endpoint restarting, a rate limit); what it already wrote is not written again.
LLM_RETRY = dg.RetryPolicy(max_retries=2, delay=30, backoff=dg.Backoff.EXPONENTIAL)


@contextmanager
def retried_on_llm_trouble() -> Iterator[None]:
    """Under :data:`LLM_RETRY`, only the LLM's trouble is worth another attempt: any other
    error fails the step at once (re-execution from failure resumes it)."""
    try:
        yield
    except (JudgeError, dg.Failure, dg.RetryRequested):
        raise
    except Exception as exc:
        raise dg.Failure(description=f"{type(exc).__name__}: {exc}", allow_retries=False) from exc


# -- how the tracks follow each other -------------------------------------------------------


def after(*upstream: str, why: str) -> dg.AutomationCondition:
    """Run once each time one of ``upstream`` (direct dependencies) is updated by a run that
    did not include this asset, never while it or a dependency is still running; for a daily
    partitioned asset, the latest day. ``why`` is what the UI shows as the reason."""
    return (
        dg.AutomationCondition.in_latest_time_window()
        & _updated(*upstream).since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label(why)


def _updated(*upstream: str) -> dg.AutomationCondition:
    """One of ``upstream`` was materialized (by a run that did not include this asset).

    Unlike ``any_deps_updated``, an upstream asset merely requested on the same tick does not
    count: a track starts in a run of its own once the one before it has finished, so the UI
    shows each track as a run and a failed gardener does not share its run with the lint."""
    A = dg.AutomationCondition
    return A.any_deps_match(A.newly_updated() & ~A.executed_with_root_target()).allow(
        dg.AssetSelection.assets(*upstream)
    )


def with_upstream(why: str) -> dg.AutomationCondition:
    """Run in the same run as the asset before it in its track, only when that one is started
    by automation (a track's steps share its run: the gardener's ledger, the lint's run id)."""
    return (
        dg.AutomationCondition.in_latest_time_window()
        & dg.AutomationCondition.any_deps_match(dg.AutomationCondition.will_be_requested())
    ).with_label(why)


def after_or_daily(upstream: str, cron: str, why: str) -> dg.AutomationCondition:
    """After ``upstream`` updates; on a day it did not, at ``cron`` (UTC) anyway."""
    ran_today = dg.AutomationCondition.newly_updated().since(
        dg.AutomationCondition.cron_tick_passed("0 0 * * *")
    )
    trigger: dg.AutomationCondition = _updated(upstream) | (
        dg.AutomationCondition.cron_tick_passed(cron) & ~ran_today
    )
    return (
        trigger.since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label(why)


# -- Great Expectations suites, checked in the step that writes the table -------------------

SUITE_TEXT = {
    "blocks": "Great Expectations suite on the memory blocks: ids unique, text, status and "
    "creation time set, a known tier, access counts never negative.",
    "edges": "Great Expectations suite on the entity graph's edges: ids unique, both ends set, "
    "a known status, composite weights never negative.",
    "profile_daily": "Great Expectations suite on the daily snapshots: ids unique, the day, "
    "the time it was known at, the timezone, the top entities and the activity set.",
}


def expectations_spec(table: str, asset: str) -> dg.AssetCheckSpec:
    """The suite of ``table`` as a check of the asset that writes it (run in its step)."""
    return dg.AssetCheckSpec(f"{table}_expectations", asset=asset, description=SUITE_TEXT[table])


def expectations_result(
    store: Any, table: str, asset: str, *, changed_by: str | None = None
) -> dg.AssetCheckResult:
    """The table's expectations: on every row, or (``changed_by``) on the rows that run wrote."""
    from memvault.quality import expectations_verdict

    verdict = expectations_verdict(store, table, changed_by=changed_by)
    return check_result(f"{table}_expectations", verdict, asset)


def check_each_partition(
    context: dg.AssetExecutionContext, result: dg.AssetCheckResult
) -> Iterator[dg.AssetCheckResult]:
    """``result`` as the check's evaluation of every partition the run covers.

    Dagster plans a partitioned asset's check once per partition of the run, but records an
    ``AssetCheckResult`` of a run over a range of partitions without a partition: each planned
    day would stay unevaluated and show as "Skipped" in the check's history. So a range run
    records one evaluation per partition, each against that partition's new materialization
    (call this after the asset's ``MaterializeResult``); a run of one partition yields
    ``result`` as usual."""
    if context.has_partition_key:
        yield result
        return
    asset_key = dg.AssetKey.from_coercible(result.asset_key or context.asset_key)
    name = result.check_name
    assert name is not None, "name the check: a range run records it by name"
    for key in context.partition_keys:
        context.log_event(
            dg.AssetCheckEvaluation(
                asset_key=asset_key,
                check_name=name,
                passed=result.passed,
                metadata=result.metadata,
                severity=result.severity,
                description=result.description,
                partition=key,
                target_materialization_data=_materialized(context.instance, asset_key, key),
            )
        )


def _materialized(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partition: str
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The newest materialization of ``partition`` (the one a check of it evaluates)."""
    found = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1
    ).records
    if not found:
        return None
    return AssetCheckEvaluationTargetMaterializationData(
        run_id=found[0].run_id, storage_id=found[0].storage_id, timestamp=found[0].timestamp
    )
