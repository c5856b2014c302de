"""The collector track: new sessions in, vectors for what came in."""

import time

import dagster as dg

from memvault.collector import collect
from memvault.judge.store_cache import StoreJudgeCache
from memvault.store.tables import COUNTED_TABLES
from memvault.vectors import embed_missing
from resources import CollectorSourcesResource, EmbedderResource, JudgeResource, StoreResource

#: DuckDB has one writer process: every asset that writes the store runs in this pool.
STORE_POOL = "memvault_store"


@dg.asset(
    group_name="collector",
    kinds={"duckdb", "postgres"},
    pool=STORE_POOL,
    description="Sessions, blocks, entities and facts collected from the inbox and Claude Code transcripts.",
)
def collected_sessions(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    sources: CollectorSourcesResource,
    llm: JudgeResource,
) -> dg.MaterializeResult:
    started = time.monotonic()
    with store.open() as opened:
        judge = llm.build(cache=StoreJudgeCache(opened))
        report = collect(
            opened,
            inbox=sources.inbox_path(),
            claude_projects=sources.claude_path(),
            judge=judge,
            include_subagents=sources.include_subagents,
            on_file=lambda path: context.log.debug(f"collecting {path}"),
        )
        counts = opened.counts(COUNTED_TABLES)
    for _, error in report.failures:
        context.log.error(f"not ingested: {error}")
    for warning in report.warnings:
        context.log.warning(warning)
    return dg.MaterializeResult(
        metadata={
            "files_seen": report.files_seen,
            "files_ingested": report.files_ingested,
            "files_unchanged": report.files_unchanged,
            "files_failed": len(report.failures),
            "warnings": len(report.warnings),
            "sessions_added": report.inserted.get("session", 0),
            "sessions_total": counts["sessions"],
            "records_added": sum(report.inserted.values()),
            "inserted": dg.MetadataValue.json(dict(report.inserted)),
            "store_counts": dg.MetadataValue.json(counts),
            "run_ids": dg.MetadataValue.json(report.run_ids),
            "judge": judge.kind,
            "llm_calls": judge.stats.calls,
            "llm_tokens": judge.stats.prompt_tokens + judge.stats.completion_tokens,
            "llm_cache_hits": judge.stats.cache_hits,
            "duration_s": round(time.monotonic() - started, 3),
        }
    )


@dg.asset_check(
    asset=collected_sessions, blocking=True, description="Every reference points at a stored row."
)
def references_resolve(store: StoreResource) -> dg.AssetCheckResult:
    with store.open() as opened:
        dangling = {name: int(n) for name, n in opened.query("dangling_references").iter_rows()}
    return dg.AssetCheckResult(
        passed=not any(dangling.values()), metadata={"dangling": dg.MetadataValue.json(dangling)}
    )


@dg.asset(
    group_name="collector",
    deps=[collected_sessions],
    kinds={"duckdb", "onnx"},
    pool=STORE_POOL,
    description="A vector per active block and entity, for the configured embedding model.",
)
def memory_embeddings(
    context: dg.AssetExecutionContext, store: StoreResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    started = time.monotonic()
    model = embedder.build()
    with store.open() as opened:
        report = embed_missing(
            opened,
            model,
            on_progress=lambda done, total: context.log.debug(f"embedded {done}/{total}"),
        )
    return dg.MaterializeResult(
        metadata={
            "model": report.model,
            "dim": report.dim,
            "embedded_blocks": report.embedded.get("block", 0),
            "embedded_entities": report.embedded.get("entity", 0),
            "vectors_blocks": report.total.get("block", 0),
            "vectors_entities": report.total.get("entity", 0),
            "duration_s": round(time.monotonic() - started, 3),
        }
    )
