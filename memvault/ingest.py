"""Ingest: JSONL interchange records (or importer output) into the store, all or nothing.

A file is validated completely before anything is written; every problem is
reported with file and line; the write is one transaction through the
audited path. Records whose id is already in the store are left as they are
(the store may have curated them since), so ingesting the same input twice
adds nothing.
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import polars as pl
from pydantic import ValidationError

from memvault.errors import IngestError, LineProblem, MemvaultError
from memvault.interchange import MAPPINGS, records_to_frame
from memvault.normalize import MAX_TEXT_CHARS, canonical_name, split_text, utcnow
from memvault.orphans import revive
from memvault.records import RECORD_ADAPTER, RECORD_TYPES, BlockRecord, Record
from memvault.skills import recompute_skills
from memvault.store import Mutation, Store
from memvault.testing_hooks import pause_point

#: Problems collected before giving up on a file (all are reported in the error's count).
MAX_PROBLEMS = 20

Progress = Callable[[int], None]


@dataclass
class Numbered:
    """A record and where it came from (line number, or position for importer output)."""

    line: int
    record: Record


@dataclass
class IngestReport:
    source: str
    run_id: str | None = None
    records: int = 0
    inserted: Counter[str] = field(default_factory=Counter)
    existing: Counter[str] = field(default_factory=Counter)
    split_blocks: int = 0
    skills_updated: int = 0
    sessions_extended: int = 0
    entities_revived: int = 0
    already_ingested: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "run_id": self.run_id,
            "records": self.records,
            "inserted": dict(self.inserted),
            "existing": dict(self.existing),
            "split_blocks": self.split_blocks,
            "skills_updated": self.skills_updated,
            "sessions_extended": self.sessions_extended,
            "entities_revived": self.entities_revived,
            "already_ingested": self.already_ingested,
        }


# -- parsing ----------------------------------------------------------------------------------


def describe_validation_error(exc: ValidationError) -> str:
    """One readable sentence for the first problem pydantic found in a record."""
    err = exc.errors(include_url=False)[0]
    kind, msg = err["type"], err["msg"]
    loc = [str(p) for p in err["loc"] if not (isinstance(p, str) and p in MAPPINGS)]
    where = ".".join(loc)
    if kind == "json_invalid":
        return f"not valid JSON ({err.get('ctx', {}).get('error', msg)})"
    if kind == "union_tag_invalid":
        tag = err.get("ctx", {}).get("tag")
        return f"unknown record type {tag!r}; expected one of: {', '.join(RECORD_TYPES)}"
    if kind == "union_tag_not_found":
        return "record has no 'type' field"
    if kind == "model_type" or kind == "model_attributes_type":
        return "a record must be a JSON object"
    if kind == "missing":
        return f"missing field {where!r}"
    if kind == "extra_forbidden":
        return f"unknown field {where!r}"
    if kind == "value_error":
        msg = msg.removeprefix("Value error, ")
        return f"{where}: {msg}" if where else msg
    return f"{where}: {msg}" if where else msg


def parse_line(raw: bytes, context: dict[str, Any]) -> Record:
    """One JSONL line as a record; raises ValueError with a readable cause."""
    try:
        return RECORD_ADAPTER.validate_json(raw, context=context)
    except ValidationError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise ValueError(f"invalid UTF-8 at byte {bad.start} of the line") from None
        raise ValueError(describe_validation_error(exc)) from None


def read_jsonl(
    stream: IO[bytes], source: str, *, on_progress: Progress | None = None
) -> list[Numbered]:
    """Every record of a JSONL stream, or an IngestError listing the bad lines."""
    context = {"now": utcnow()}
    items: list[Numbered] = []
    problems: list[LineProblem] = []
    total = 0
    for number, raw in enumerate(stream, 1):
        if on_progress:
            on_progress(len(raw))
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        raw = raw.strip()
        if not raw:
            continue
        try:
            items.append(Numbered(number, parse_line(raw, context)))
        except ValueError as exc:
            total += 1
            if len(problems) < MAX_PROBLEMS:
                problems.append(LineProblem(source, number, str(exc)))
    if problems:
        raise IngestError(problems, total)
    return items


# -- resolving references ------------------------------------------------------------------


class _Resolver:
    """Resolves entity, session and block references against the batch and the store."""

    def __init__(self, store: Store, by_type: dict[str, list[Numbered]]) -> None:
        self.store = store
        self.entity_ids = {n.record.id for n in by_type["entity"]}  # type: ignore[attr-defined]
        self.by_canonical: dict[str, set[str]] = defaultdict(set)
        for n in by_type["entity"]:
            self.by_canonical[n.record.canonical_name].add(n.record.id)  # type: ignore[attr-defined]
        self.session_ids = {n.record.id for n in by_type["session"]}  # type: ignore[attr-defined]
        self.block_ids = {n.record.id for n in by_type["block"]}  # type: ignore[attr-defined]

    def load_entities(self, refs: set[str]) -> None:
        unknown = refs - self.entity_ids
        if not unknown:
            return
        names = sorted({canonical_name(r) for r in unknown})
        for eid, canon in self.store.fetch(
            "SELECT id, canonical_name FROM entities WHERE id = ANY(:ids) OR canonical_name = ANY(:names)",
            {"ids": sorted(unknown), "names": names},
        ):
            self.entity_ids.add(eid)
            self.by_canonical[canon].add(eid)

    def load_existing(self, table: str, ids: set[str], known: set[str]) -> None:
        missing = sorted(ids - known)
        if missing:
            known.update(
                r[0]
                for r in self.store.fetch(
                    f"SELECT id FROM {table} WHERE id = ANY(:ids)", {"ids": missing}
                )
            )

    def entity(self, ref: str) -> str:
        if ref in self.entity_ids:
            return ref
        candidates = self.by_canonical.get(canonical_name(ref), set())
        if len(candidates) == 1:
            return next(iter(candidates))
        if not candidates:
            raise ValueError(
                f"unknown entity {ref!r}: add an entity record for it (before or in this file)"
            )
        raise ValueError(
            f"entity name {ref!r} is ambiguous ({', '.join(sorted(candidates))}); use the id"
        )


def _resolve(store: Store, by_type: dict[str, list[Numbered]], source: str) -> list[LineProblem]:
    """Replace entity names with ids and check every reference; returns the problems found."""
    resolver = _Resolver(store, by_type)
    refs = {n.record.entity for n in by_type["mention"]}  # type: ignore[attr-defined]
    for n in by_type["triple"]:
        refs.add(n.record.subject)  # type: ignore[attr-defined]
        if n.record.object_id:  # type: ignore[attr-defined]
            refs.add(n.record.object_id)  # type: ignore[attr-defined]
    resolver.load_entities(refs)
    sessions: set[str] = set()
    blocks: set[str] = set()
    for n in by_type["block"]:
        sessions.add(n.record.session_id or "")  # type: ignore[attr-defined]
    for n in by_type["mention"]:
        sessions.add(n.record.session_id or "")  # type: ignore[attr-defined]
        blocks.add(n.record.block_id or "")  # type: ignore[attr-defined]
    for n in by_type["triple"]:
        sessions.add(n.record.source_session or "")  # type: ignore[attr-defined]
        blocks.add(n.record.source_block or "")  # type: ignore[attr-defined]
    for n in by_type["original"]:
        blocks.add(n.record.id)  # type: ignore[attr-defined]
    sessions.discard("")
    blocks.discard("")
    resolver.load_existing("sessions", sessions, resolver.session_ids)
    resolver.load_existing("blocks", blocks, resolver.block_ids)

    problems: list[LineProblem] = []

    def check(n: Numbered, kind: str, value: str | None, known: set[str]) -> None:
        if value and value not in known:
            problems.append(LineProblem(source, n.line, f"unknown {kind} {value!r}"))

    for n in by_type["block"]:
        check(n, "session", n.record.session_id, resolver.session_ids)  # type: ignore[attr-defined]
    for n in by_type["original"]:
        check(n, "block", n.record.id, resolver.block_ids)  # type: ignore[attr-defined]
    for n in by_type["mention"]:
        rec: Any = n.record
        check(n, "session", rec.session_id, resolver.session_ids)
        check(n, "block", rec.block_id, resolver.block_ids)
        try:
            rec.__dict__["entity"] = resolver.entity(rec.entity)
        except ValueError as exc:
            problems.append(LineProblem(source, n.line, str(exc)))
    for n in by_type["triple"]:
        rec = n.record
        check(n, "session", rec.source_session, resolver.session_ids)
        check(n, "block", rec.source_block, resolver.block_ids)
        try:
            rec.__dict__["subject"] = resolver.entity(rec.subject)
            if rec.object_id:
                rec.__dict__["object_id"] = resolver.entity(rec.object_id)
        except ValueError as exc:
            problems.append(LineProblem(source, n.line, str(exc)))
    return problems


# -- preparing rows --------------------------------------------------------------------------


def _split_long_blocks(items: list[Numbered]) -> tuple[list[Numbered], int]:
    """Blocks longer than MAX_TEXT_CHARS become consecutive parts (nothing is cut off).

    Part 1 keeps the id (so references stay valid); part k is ``<id>~p<k>``
    with ``parent_id`` = the first part. The parts keep the whitespace at their
    cuts, so joining them in order gives the original text back exactly.
    """
    out: list[Numbered] = []
    split = 0
    for n in items:
        block: BlockRecord = n.record  # type: ignore[assignment]
        if len(block.text) <= MAX_TEXT_CHARS:
            out.append(n)
            continue
        split += 1
        parts = split_text(block.text)
        for k, text in enumerate(parts, 1):
            update: dict[str, Any] = {
                "text": text,
                "tags": [*block.tags, f"part:{k}/{len(parts)}"],
            }
            if k > 1:
                update |= {"id": f"{block.id}~p{k}", "parent_id": block.id}
            out.append(Numbered(n.line, block.model_copy(update=update)))
    return out, split


def _dedupe(items: list[Numbered], source: str) -> tuple[list[Numbered], list[LineProblem]]:
    """Identical repeats inside one input are dropped; the same id with other content is an error."""
    seen: dict[str, Numbered] = {}
    out: list[Numbered] = []
    problems: list[LineProblem] = []
    for n in items:
        rid = n.record.id  # type: ignore[attr-defined]
        first = seen.get(rid)
        if first is None:
            seen[rid] = n
            out.append(n)
        elif first.record != n.record:
            problems.append(
                LineProblem(
                    source, n.line, f"id {rid!r} also on line {first.line} with different content"
                )
            )
    return out, problems


def prepare(
    store: Store, items: Iterable[Numbered], source: str
) -> tuple[dict[str, list[Numbered]], int]:
    """Group, split, de-duplicate and resolve; raises IngestError with every problem found."""
    by_type: dict[str, list[Numbered]] = {t: [] for t in RECORD_TYPES}
    for n in items:
        by_type[n.record.type].append(n)  # type: ignore[attr-defined]
    by_type["block"], split = _split_long_blocks(by_type["block"])
    problems: list[LineProblem] = []
    for type_name in RECORD_TYPES:
        by_type[type_name], found = _dedupe(by_type[type_name], source)
        problems += found
    problems += _resolve(store, by_type, source)
    if problems:
        problems.sort(key=lambda p: p.line)
        raise IngestError(problems[:MAX_PROBLEMS], len(problems))
    return by_type, split


# -- writing ---------------------------------------------------------------------------------


def ingest_records(
    store: Store,
    items: Iterable[Numbered],
    *,
    source: str,
    source_hash: str | None = None,
    size_bytes: int = 0,
    run_id: str | None = None,
) -> IngestReport:
    """Validate references and write all records in one audited transaction."""
    items = list(items)
    report = IngestReport(source=source, records=len(items))
    by_type, report.split_blocks = prepare(store, items, source)
    del items  # from here on the records live only in by_type, and go as their rows are built
    frames: dict[str, pl.DataFrame] = {}
    for type_name in RECORD_TYPES:
        records = by_type.pop(type_name)
        if records:
            frames[type_name] = records_to_frame(type_name, [n.record for n in records])
        del records
    report.run_id = store.begin_run(
        "ingest", {"source": source, "records": report.records}, run_id=run_id
    )
    try:
        with store.mutation(report.run_id, "ingest") as m:
            skill_ids: list[str] = []
            referred: set[str] = set()
            for type_name, frame in frames.items():
                inserted = m.insert(
                    MAPPINGS[type_name].table, frame, action="ingest", reason=source
                )
                report.inserted[type_name] = len(inserted)
                report.existing[type_name] = frame.height - len(inserted)
                if type_name == "skill_use":
                    new_uses = frame.filter(pl.col("id").is_in(inserted))
                    skill_ids = sorted(set(new_uses["skill_id"]))
                if type_name in ("mention", "triple") and inserted:
                    new_rows = frame.filter(pl.col("id").is_in(inserted))
                    for column in ("entity_id", "subject_id", "object_id"):
                        if column in new_rows.columns:
                            referred.update(new_rows[column].drop_nulls().to_list())
                if type_name == "session" and report.existing["session"]:
                    report.sessions_extended = _extend_sessions(store, m, frame, inserted, source)
            report.skills_updated = recompute_skills(store, m, skill_ids, utcnow())
            report.entities_revived = revive(store, m, sorted(referred))
            pause_point("ingest-written")
            if source_hash:
                store.backend.insert_df(
                    "ingested_sources",
                    pl.DataFrame(
                        [
                            {
                                "id": source_hash,
                                "location": source,
                                "size_bytes": size_bytes,
                                "records": report.records,
                                "run_id": report.run_id,
                                "ingested_at": utcnow(),
                            }
                        ]
                    ),
                )
    except Exception as exc:
        store.finish_run(report.run_id, "failed", error=str(exc))
        raise
    store.finish_run(report.run_id, "succeeded", report.as_dict())
    return report


def _extend_sessions(
    store: Store, mutation: Mutation, frame: pl.DataFrame, inserted: list[str], source: str
) -> int:
    """Sessions that were already stored but have since gone on (a transcript that grew).

    The only field of an existing record that ingest changes: ``ended_at`` moves
    forward, audited like every other change.
    """
    known = frame.filter(~pl.col("id").is_in(inserted)).select("id", "ended_at")
    stored = store.fetch_df(
        "SELECT id, ended_at AS stored_end FROM sessions WHERE id = ANY(:ids)",
        {"ids": known["id"].to_list()},
    )
    if stored.is_empty():
        return 0
    later = known.join(stored.cast({"stored_end": pl.Datetime("us")}), on="id").filter(
        pl.col("ended_at").is_not_null()
        & (pl.col("stored_end").is_null() | (pl.col("ended_at") > pl.col("stored_end")))
    )
    return mutation.update_many(
        "sessions", later.select("id", "ended_at"), action="extend", reason=source
    )


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def already_ingested(store: Store, source_hash: str) -> bool:
    return bool(store.fetch("SELECT 1 FROM ingested_sources WHERE id = :h", {"h": source_hash}))


def ingest_file(
    store: Store,
    path: str | Path,
    *,
    force: bool = False,
    on_progress: Progress | None = None,
    digest: str | None = None,
) -> IngestReport:
    """Ingest a JSONL file (``-`` reads standard input). Unchanged files are skipped cheaply.

    ``digest`` is the file's hash when the caller computed it already.
    """
    if str(path) == "-":
        return ingest_records(
            store,
            read_jsonl(sys.stdin.buffer, "<stdin>", on_progress=on_progress),
            source="<stdin>",
        )
    file = Path(path)
    if not file.is_file():
        raise MemvaultError(f"{file}: no such file")
    digest = digest or file_hash(file)
    if not force and already_ingested(store, digest):
        return IngestReport(source=str(file), already_ingested=True)
    with file.open("rb") as stream:
        # No name holds the parsed records here, so ingest_records can free them as it goes.
        return ingest_records(
            store,
            read_jsonl(stream, str(file), on_progress=on_progress),
            source=str(file),
            source_hash=digest,
            size_bytes=file.stat().st_size,
        )
