"""The collector: brings new sessions into the store from the inbox and from Claude Code.

Two sources, both incremental by content hash (an unchanged file costs one
hash): JSONL interchange files dropped into the inbox, and Claude Code
transcripts (a transcript that grew since is re-read; its old blocks keep
their ids, so only the new ones are added). A bad file is reported and left
where it is; it does not stop the others.

What an LLM extracts from a transcript is checked against the blocks it rests on
(:mod:`memvault.importers.enrich`): refused facts are counted, and facts the blocks do not
clearly state wait in the review queue (written in the transcript's ingest run, so undoing
it takes them back), never in the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.errors import JudgeError, MemvaultError
from memvault.extract import HeuristicExtractor
from memvault.importers.claude_code import read_session_file, session_files
from memvault.importers.enrich import DOUBTS, REFUSALS, Doubt, llm_records, queue_doubts
from memvault.ingest import Numbered, already_ingested, file_hash, ingest_file, ingest_records
from memvault.judge import Judge
from memvault.records import BlockRecord, Record, SessionRecord
from memvault.store import Store


@dataclass
class CollectReport:
    files_seen: int = 0
    files_ingested: int = 0
    files_unchanged: int = 0
    inserted: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    #: What the LLM's extraction said that its memories do not, refused, by reason.
    llm_refused: Counter[str] = field(default_factory=Counter)
    #: Facts the LLM extracted that their memories do not clearly state: queued for review.
    llm_queued: Counter[str] = field(default_factory=Counter)
    #: Writes a stopped ``memvault serve`` had left in its queue, applied first.
    serve_writes_applied: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "files_seen": self.files_seen,
            "files_ingested": self.files_ingested,
            "files_unchanged": self.files_unchanged,
            "serve_writes_applied": self.serve_writes_applied,
            "inserted": dict(self.inserted),
            "failures": [{"location": loc, "error": err} for loc, err in self.failures],
            "warnings": self.warnings,
            "run_ids": self.run_ids,
            "llm_refused": dict(self.llm_refused),
            "llm_queued": dict(self.llm_queued),
        }

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows: flat counts, then what was added and the ingest runs."""
        return {
            "files_seen": self.files_seen,
            "files_ingested": self.files_ingested,
            "files_unchanged": self.files_unchanged,
            "files_failed": len(self.failures),
            "warnings": len(self.warnings),
            "serve_writes_applied": self.serve_writes_applied,
            "sessions_added": self.inserted.get("session", 0),
            "records_added": sum(self.inserted.values()),
            "inserted": [{"record type": k, "added": n} for k, n in self.inserted.items()],
            "ingest_runs": [{"run id": r} for r in self.run_ids],
            **{f"llm_refused_{r}": self.llm_refused.get(r, 0) for r in REFUSALS},
            **{f"llm_queued_{r}": self.llm_queued.get(r, 0) for r in DOUBTS},
        }


def _unique_by_id(records: Iterable[Record]) -> list[Record]:
    """The first record of each id (the offline extractor and the LLM may name the same entity)."""
    seen: dict[str, Record] = {}
    for record in records:
        seen.setdefault(str(record.id), record)  # type: ignore[attr-defined]
    return list(seen.values())


def transcript_records(
    path: Path,
    judge: Judge | None,
    *,
    include_subagents: bool = False,
    refused: Counter[str] | None = None,
    doubts: list[Doubt] | None = None,
) -> tuple[list[Record], str | None]:
    """The records of one Claude Code transcript, enriched by the LLM when one is configured.

    Returns the records and, when the LLM failed, why: the transcript is then
    imported with the offline extractor's entities only. What the LLM extracted that its
    memories do not say is refused and counted into ``refused``; the facts they do not
    clearly state are added to ``doubts`` (for review), not to the records.
    """
    imported = read_session_file(
        path, include_subagents=include_subagents, extractor=HeuristicExtractor()
    )
    if imported is None:
        return [], None
    records: list[Record] = list(imported.records)
    problem = None
    if judge is not None and judge.kind != "heuristic":
        session = next(r for r in records if isinstance(r, SessionRecord))
        blocks = [r for r in records if isinstance(r, BlockRecord)]
        try:
            extraction = llm_records(judge, blocks, session.id)
            records += extraction.records
            if refused is not None:
                refused.update(extraction.refused)
            if doubts is not None:
                doubts.extend(extraction.doubts)
        except JudgeError as exc:
            problem = f"{path}: LLM extraction failed, imported with offline entities only ({exc})"
    return _unique_by_id(records), problem


def collect(
    store: Store,
    *,
    inbox: Path | None,
    claude_projects: Path | None,
    judge: Judge | None = None,
    include_subagents: bool = False,
    on_file: Callable[[str], None] | None = None,
) -> CollectReport:
    """Ingest every new or changed file of both sources (first, the writes a stopped
    ``memvault serve`` left queued: see :func:`memvault.serve.writer.apply_left`)."""
    from memvault.serve.writer import apply_left

    report = CollectReport()
    report.serve_writes_applied = apply_left(store)
    jsonl = sorted(inbox.glob("*.jsonl")) if inbox and inbox.is_dir() else []
    transcripts = (
        session_files(claude_projects, include_subagents=include_subagents)
        if claude_projects
        else []
    )
    for path in [*jsonl, *transcripts]:
        report.files_seen += 1
        if on_file:
            on_file(str(path))
        digest = file_hash(path)
        if already_ingested(store, digest):
            report.files_unchanged += 1
            continue
        try:
            if path in jsonl:
                result = ingest_file(store, path, digest=digest)
            else:
                doubts: list[Doubt] = []
                records, problem = transcript_records(
                    path,
                    judge,
                    include_subagents=include_subagents,
                    refused=report.llm_refused,
                    doubts=doubts,
                )
                if problem:
                    report.warnings.append(problem)
                result = ingest_records(
                    store,
                    [Numbered(i, r) for i, r in enumerate(records, 1)],
                    source=str(path),
                    # Not marked as done when the LLM failed: the next run tries the extraction again.
                    source_hash=None if problem else digest,
                    size_bytes=path.stat().st_size,
                )
                if doubts and result.run_id:
                    report.llm_queued.update(queue_doubts(store, doubts, result.run_id))
        except MemvaultError as exc:
            report.failures.append((str(path), str(exc)))
            continue
        report.files_ingested += 1
        report.inserted.update(result.inserted)
        if result.run_id:
            report.run_ids.append(result.run_id)
    return report
