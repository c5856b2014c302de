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
from collections.abc import Callable, Iterable, Iterator
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


def iter_jsonl(
    stream: IO[bytes], source: str, *, on_progress: Progress | None = None
) -> Iterator[Numbered]:
    """The records of a JSONL stream, one at a time; after the last, an IngestError listing
    the bad lines if there were any (the caller has written nothing by then)."""
    context = {"now": utcnow()}
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
            yield Numbered(number, parse_line(raw, context))
        except ValueError as exc:
            total += 1
            if len(problems) < MAX_PROBLEMS:
                problems.append(LineProblem(source, number, str(exc)))
    if problems:
        raise IngestError(problems, total)


def read_jsonl(
    stream: IO[bytes], source: str, *, on_progress: Progress | None = None
) -> list[Numbered]:
    """Every record of a JSONL stream, or an IngestError listing the bad lines."""
    return list(iter_jsonl(stream, source, on_progress=on_progress))


# -- staging: records become columns as they are read -------------------------------------

#: Records turned into columns at a time: what is held as Python objects while reading.
CHUNK_RECORDS = 20_000
#: The input line of each staged row (for the problems found later); not a store column.
LINE = "_line"


@dataclass
class Staged:
    """An input's records as one frame per type (with each row's line), read in bounded chunks
    so a large file is held as columns, not as millions of objects."""

    frames: dict[str, pl.DataFrame]
    records: int = 0
    split_blocks: int = 0


def stage(items: Iterable[Numbered]) -> Staged:
    parts: dict[str, list[pl.DataFrame]] = defaultdict(list)
    staged = Staged(frames={})
    chunk: list[Numbered] = []

    def flush() -> None:
        by_type: dict[str, list[Numbered]] = defaultdict(list)
        for n in chunk:
            by_type[n.record.type].append(n)  # type: ignore[attr-defined]
        if by_type["block"]:
            by_type["block"], split = _split_long_blocks(by_type["block"])
            staged.split_blocks += split
        for type_name, numbered in by_type.items():
            if numbered:
                frame = records_to_frame(type_name, [n.record for n in numbered])
                parts[type_name].append(
                    frame.with_columns(pl.Series(LINE, [n.line for n in numbered], pl.Int64))
                )
        chunk.clear()

    for n in items:
        staged.records += 1
        chunk.append(n)
        if len(chunk) >= CHUNK_RECORDS:
            flush()
    flush()
    staged.frames = {
        t: pl.concat(parts[t], how="diagonal_relaxed") for t in RECORD_TYPES if parts.get(t)
    }
    return staged


#: Rows written (with their audit rows) at a time, all in the one transaction of the input.
WRITE_ROWS = 50_000


# -- checking: duplicates and references, column by column ---------------------------------


class _Problems:
    """Problems found so far: every one counted, the first by line kept for the report."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.total = 0
        self.kept: list[tuple[int, int, str]] = []  # (line, order of the check, message)
        self.checks = 0

    def add(self, rows: pl.DataFrame, message: Callable[[dict[str, Any]], str]) -> None:
        """``rows`` (with their line) each a problem, described by ``message(row)``."""
        self.checks += 1
        if rows.is_empty():
            return
        self.total += rows.height
        order = self.checks
        for row in rows.sort(LINE).head(MAX_PROBLEMS).iter_rows(named=True):
            self.kept.append((row[LINE], order, message(row)))

    def raise_if_any(self) -> None:
        if self.total:
            first = sorted(self.kept)[:MAX_PROBLEMS]
            raise IngestError(
                [LineProblem(self.source, line, text) for line, _, text in first], self.total
            )


def _dedupe(frame: pl.DataFrame, problems: _Problems) -> pl.DataFrame:
    """Identical repeats inside one input are dropped; the same id with other content is an error."""
    content = [c for c in frame.columns if c != LINE]
    distinct = frame.unique(subset=content, keep="first", maintain_order=True)
    if distinct.height == distinct["id"].n_unique():
        return distinct
    firsts = distinct.group_by("id", maintain_order=True).agg(pl.col(LINE).first().alias("_first"))
    clashes = distinct.join(firsts, on="id").filter(pl.col(LINE) != pl.col("_first"))
    problems.add(
        clashes,
        lambda r: f"id {r['id']!r} also on line {r['_first']} with different content",
    )
    return distinct.unique(subset=["id"], keep="first", maintain_order=True)


class _Resolver:
    """Resolves entity, session and block references against the input and the store."""

    def __init__(self, store: Store, frames: dict[str, pl.DataFrame]) -> None:
        self.store = store
        entities = frames.get("entity")
        self.entity_ids: set[str] = set()
        self.by_canonical: dict[str, set[str]] = defaultdict(set)
        if entities is not None:
            for eid, canon in entities.select("id", "canonical_name").iter_rows():
                self.entity_ids.add(eid)
                self.by_canonical[canon].add(eid)
        self.session_ids = _ids(frames, "session")
        self.block_ids = _ids(frames, "block")

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


def _ids(frames: dict[str, pl.DataFrame], type_name: str) -> set[str]:
    frame = frames.get(type_name)
    return set() if frame is None else set(frame["id"].to_list())


def _values(frames: dict[str, pl.DataFrame], type_name: str, column: str) -> set[str]:
    frame = frames.get(type_name)
    if frame is None or column not in frame.columns:
        return set()
    return {v for v in frame[column].unique().to_list() if v}


#: The references each record type holds: (column, what it names).
_REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "block": (("session_id", "session"),),
    "original": (("id", "block"),),
    "mention": (("session_id", "session"), ("block_id", "block"), ("entity_id", "entity")),
    "triple": (
        ("source_session", "session"),
        ("source_block", "block"),
        ("subject_id", "entity"),
        ("object_id", "entity"),
    ),
}


def _said(messages: dict[str, str], column: str) -> Callable[[dict[str, Any]], str]:
    return lambda row: messages[row[column]]


def _unknown(kind: str, column: str) -> Callable[[dict[str, Any]], str]:
    return lambda row: f"unknown {kind} {row[column]!r}"


def _resolve(store: Store, frames: dict[str, pl.DataFrame], problems: _Problems) -> None:
    """Replace entity names with ids and check every reference (in place)."""
    resolver = _Resolver(store, frames)
    wanted: dict[str, set[str]] = defaultdict(set)
    for type_name, references in _REFERENCES.items():
        for column, kind in references:
            wanted[kind] |= _values(frames, type_name, column)
    resolver.load_entities(wanted["entity"])
    resolver.load_existing("sessions", wanted["session"], resolver.session_ids)
    resolver.load_existing("blocks", wanted["block"], resolver.block_ids)
    resolved: dict[str, str] = {}
    refused: dict[str, str] = {}
    for ref in wanted["entity"]:
        try:
            resolved[ref] = resolver.entity(ref)
        except ValueError as exc:
            refused[ref] = str(exc)
    known = {"session": resolver.session_ids, "block": resolver.block_ids}
    for type_name, references in _REFERENCES.items():
        frame = frames.get(type_name)
        if frame is None:
            continue
        for column, kind in references:
            if column not in frame.columns:
                continue
            frame = frame.with_columns(pl.col(column).cast(pl.Utf8))  # an all-null chunk is Null
            if kind == "entity":
                bad = frame.filter(pl.col(column).is_in(list(refused)))
                problems.add(bad, _said(refused, column))
                frame = frame.with_columns(pl.col(column).replace(resolved))
            else:
                value = pl.col(column)
                bad = frame.filter(
                    value.is_not_null() & (value != "") & ~value.is_in(list(known[kind]))
                )
                problems.add(bad, _unknown(kind, column))
        frames[type_name] = frame


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


def prepare(store: Store, staged: Staged, source: str) -> dict[str, pl.DataFrame]:
    """De-duplicate and resolve the staged frames (their line column dropped); raises
    IngestError with every problem found (the first by line listed, all counted)."""
    problems = _Problems(source)
    # Each staged frame is let go as its checked copy is made (the peak is one copy, not two).
    frames = {t: _dedupe(staged.frames.pop(t), problems) for t in list(staged.frames)}
    _resolve(store, frames, problems)
    problems.raise_if_any()
    return {t: f.drop(LINE) for t, f in frames.items()}


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
    """Validate references and write all records in one audited transaction.

    ``items`` is read once, as it comes (a generator reading a file is held as columns in
    bounded chunks, never as a list of records)."""
    staged = stage(items)
    report = IngestReport(source=source, records=staged.records)
    report.split_blocks = staged.split_blocks
    frames = prepare(store, staged, source)
    del staged
    report.run_id = store.begin_run(
        "ingest", {"source": source, "records": report.records}, run_id=run_id
    )
    try:
        with store.mutation(report.run_id, "ingest") as m:
            skill_ids: list[str] = []
            referred: set[str] = set()
            for type_name, frame in frames.items():
                inserted = [
                    row_id
                    for part in frame.iter_slices(WRITE_ROWS)
                    for row_id in m.insert(
                        MAPPINGS[type_name].table, part, action="ingest", reason=source
                    )
                ]
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
            iter_jsonl(sys.stdin.buffer, "<stdin>", on_progress=on_progress),
            source="<stdin>",
        )
    file = Path(path)
    if not file.is_file():
        raise MemvaultError(f"{file}: no such file")
    digest = digest or file_hash(file)
    if not force and already_ingested(store, digest):
        return IngestReport(source=str(file), already_ingested=True)
    with file.open("rb") as stream:
        # Read as it is staged: the parsed records never exist all at once.
        return ingest_records(
            store,
            iter_jsonl(stream, str(file), on_progress=on_progress),
            source=str(file),
            source_hash=digest,
            size_bytes=file.stat().st_size,
        )
