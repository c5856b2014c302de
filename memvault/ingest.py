"""Ingest: JSONL interchange records (or importer output) into the store, all or nothing.

A file is read chunk by chunk into the store's staging (``memvault.ingest_staging``) and
validated completely there before anything is visible; every problem is reported with file
and line; the write into the memory tables is one transaction through the audited path, so
memory holds a chunk, never the file. An input that fits in one chunk (a remembered memory)
is staged and checked in this process's memory instead, by the same checks, and written the
same way. Records whose id is already in the store are left as they are
(the store may have curated them since), so ingesting the same input twice
adds nothing.
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import IO, Any

import polars as pl
from pydantic import ValidationError

from memvault.errors import IngestError, LineProblem, MemvaultError
from memvault.ingest_staging import LINE, MemoryStaging, Staging, bounded_cache
from memvault.interchange import MAPPINGS, records_to_frame
from memvault.layers.skills import recompute_skills
from memvault.normalize import MAX_TEXT_CHARS, canonical_name, split_text, utcnow
from memvault.orphans import revive
from memvault.records import RECORD_ADAPTER, RECORD_TYPES, BlockRecord, Record
from memvault.store import Mutation, Store
from memvault.store.queries import ingest as q
from memvault.store.queries import staging as staged_sql
from memvault.store.tracked import tracked_run
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


# -- staging: records become rows of the store's staging tables as they are read ----------

#: Records turned into columns and staged at a time: what is held in memory while reading.
CHUNK_RECORDS = 20_000
#: Rows read back from a staging held in this process (one chunk at most) and written at a
#: time; a staging in the store is moved by one statement a table instead.
WRITE_ROWS = 20_000
#: Whether an input of at most one chunk is staged and checked in memory (by the same checks)
#: rather than in the store's staging tables, which cost a small input more than its write.
SMALL_IN_MEMORY = True


def open_staging(
    store: Store, items: Iterable[Numbered], source: str
) -> tuple[Staging, Iterator[Numbered]]:
    """Where ``items`` will be staged (in memory when they fit in one chunk, else in the
    store), and the items to stage there (the first chunk is read to tell)."""
    rest = iter(items)
    if not SMALL_IN_MEMORY:
        return Staging(store, source), rest
    head = list(islice(rest, CHUNK_RECORDS + 1))
    if len(head) <= CHUNK_RECORDS:
        return MemoryStaging(store, source), iter(head)
    return Staging(store, source), chain(head, rest)


@dataclass
class _Read:
    """What reading an input leaves in memory besides the staging: counts, and the entity
    names and ids it holds (bounded by the entities, not by the records)."""

    records: int = 0
    split_blocks: int = 0
    entity_ids: set[str] = field(default_factory=set)
    by_canonical: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    #: Distinct values of each entity-naming column, by record type.
    entity_refs: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))


def stage(items: Iterable[Numbered], staging: Staging) -> _Read:
    """Read ``items`` once into ``staging``, ``CHUNK_RECORDS`` at a time."""
    read = _Read()
    chunk: list[Numbered] = []

    def flush() -> None:
        by_type: dict[str, list[Numbered]] = defaultdict(list)
        for n in chunk:
            by_type[n.record.type].append(n)  # type: ignore[attr-defined]
        if by_type["block"]:
            by_type["block"], split = _split_long_blocks(by_type["block"])
            read.split_blocks += split
        for type_name in RECORD_TYPES:
            numbered = by_type.get(type_name)
            if not numbered:
                continue
            frame = records_to_frame(type_name, [n.record for n in numbered])
            _remember_entities(read, type_name, frame)
            staging.append(
                type_name,
                frame.with_columns(pl.Series(LINE, [n.line for n in numbered], pl.Int64)),
            )
        chunk.clear()

    for n in items:
        read.records += 1
        chunk.append(n)
        if len(chunk) >= CHUNK_RECORDS:
            flush()
    flush()
    staging.ready()
    return read


def _remember_entities(read: _Read, type_name: str, frame: pl.DataFrame) -> None:
    if type_name == "entity":
        for eid, canon in frame.select("id", "canonical_name").iter_rows():
            read.entity_ids.add(eid)
            read.by_canonical[canon].add(eid)
    for column, kind in _REFERENCES.get(type_name, ()):
        if kind == "entity" and column in frame.columns:
            read.entity_refs[type_name, column].update(
                v for v in frame[column].unique().to_list() if v
            )


# -- checking: duplicates and references, in SQL over the staging ----------------------------


class _Problems:
    """Problems found so far: every one counted, the first by line kept for the report."""

    def __init__(self, staging: Staging, source: str) -> None:
        self.db = staging.db
        self.source = source
        self.total = 0
        self.kept: list[tuple[int, int, str]] = []  # (line, order of the check, message)
        self.checks = 0

    def add(
        self,
        sql: str | None,
        message: Callable[[dict[str, Any]], str],
        params: dict[str, Any] | None = None,
    ) -> None:
        """The rows ``sql`` finds (each with its ``_line``) are each a problem, described by
        ``message(row)``."""
        self.checks += 1
        if sql is None:
            return
        total = staged_sql.count_found(self.db, sql, params)
        if not total:
            return
        self.total += total
        order = self.checks
        first = staged_sql.first_found(self.db, sql, MAX_PROBLEMS, params)
        for row in first.iter_rows(named=True):
            self.kept.append((int(row[LINE]), order, message(row)))

    def raise_if_any(self) -> None:
        if self.total:
            first = sorted(self.kept)[:MAX_PROBLEMS]
            raise IngestError(
                [LineProblem(self.source, line, text) for line, _, text in first], self.total
            )


class _Resolver:
    """Resolves entity names and ids against the input and the store."""

    def __init__(self, store: Store, read: _Read) -> None:
        self.store = store
        self.entity_ids = set(read.entity_ids)
        self.by_canonical: dict[str, set[str]] = defaultdict(set)
        for canon, ids in read.by_canonical.items():
            self.by_canonical[canon] |= ids

    def load_entities(self, refs: set[str]) -> None:
        unknown = refs - self.entity_ids
        if not unknown:
            return
        names = sorted({canonical_name(r) for r in unknown})
        for eid, canon in q.entities_named(self.store, sorted(unknown), names):
            self.entity_ids.add(eid)
            self.by_canonical[canon].add(eid)

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


def _said(messages: dict[str, str]) -> Callable[[dict[str, Any]], str]:
    return lambda row: messages[row["ref"]]


def _unknown(kind: str) -> Callable[[dict[str, Any]], str]:
    return lambda row: f"unknown {kind} {row['ref']!r}"


def _clash(row: dict[str, Any]) -> str:
    return f"id {row['id']!r} also on line {row['first']} with different content"


def prepare(store: Store, staging: Staging, read: _Read, source: str) -> dict[str, str]:
    """Check the staged input: an id repeated with other content, and every reference (an
    entity by id or name, a session, a block) against the input and the store. Identical
    repeats are dropped. Returns how entity names map to ids (only those that differ);
    raises IngestError with every problem found (the first by line listed, all counted)."""
    problems = _Problems(staging, source)
    repeatable = [t for t in staging.types if staging.rows[t] > 1]  # one row repeats nothing
    for type_name in repeatable:
        problems.add(staging.clashes(type_name), _clash)
    problems.raise_if_any()  # a clash makes the rest meaningless (two rows claim one id)
    for type_name in repeatable:
        staging.drop_repeats(type_name)
    resolver = _Resolver(store, read)
    wanted = set().union(*read.entity_refs.values()) if read.entity_refs else set()
    resolver.load_entities(wanted)
    resolved: dict[str, str] = {}
    refused: dict[str, str] = {}
    for ref in wanted:
        try:
            resolved[ref] = resolver.entity(ref)
        except ValueError as exc:
            refused[ref] = str(exc)
    for type_name, references in _REFERENCES.items():
        for column, kind in references:
            if kind == "entity":
                if refused:
                    problems.add(
                        staging.naming(type_name, column), _said(refused), {"refs": list(refused)}
                    )
            else:
                problems.add(staging.unknown_references(type_name, column, kind), _unknown(kind))
    problems.raise_if_any()
    return {ref: eid for ref, eid in resolved.items() if ref != eid}


def _renamer(type_name: str, names: dict[str, str]) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """Entity names in a page of staged rows replaced by the ids they resolve to."""
    columns = [c for c, kind in _REFERENCES.get(type_name, ()) if kind == "entity"]

    def rename(page: pl.DataFrame) -> pl.DataFrame:
        present = [c for c in columns if c in page.columns]
        if not names or not present:
            return page
        return page.with_columns(pl.col(c).cast(pl.Utf8).replace(names) for c in present)

    return rename


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


def checked_frames(store: Store, items: Iterable[Numbered], source: str) -> dict[str, pl.DataFrame]:
    """A few records checked as an ingest checks them (references resolved against the input
    and the store), as one frame per type, written nowhere: for a caller that writes them
    itself inside its own transaction. Raises IngestError as an ingest does."""
    staging, items = open_staging(store, items, source)
    with staging:
        read = stage(items, staging)
        names = prepare(store, staging, read, source)
        return {
            t: pl.concat(
                list(staging.pages(t, WRITE_ROWS, _renamer(t, names))), how="diagonal_relaxed"
            )
            for t in staging.types
        }


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

    ``items`` is read once, as it comes, into the store's staging (a generator reading a
    file is never held whole: memory holds one chunk of records at a time)."""
    staging, items = open_staging(store, items, source)
    with bounded_cache(store, enabled=not staging.in_memory) as memory, staging:
        read = stage(items, staging)
        report = IngestReport(source=source, records=read.records)
        report.split_blocks = read.split_blocks
        names = prepare(store, staging, read, source)
        del read
        memory.fit(sum(staging.rows.values()))
        params = {"source": source, "records": report.records}
        with tracked_run(store, "ingest", params, run_id=run_id) as run:
            report.run_id = run.id
            _write(store, staging, names, report, source, source_hash, size_bytes)
            run.stats = report.as_dict()
    return report


def _write(
    store: Store,
    staging: Staging,
    names: dict[str, str],
    report: IngestReport,
    source: str,
    source_hash: str | None,
    size_bytes: int,
) -> None:
    """Move the staged rows into the memory tables in one audited transaction."""
    assert report.run_id is not None
    with store.mutation(report.run_id, "ingest") as m:
        move = _write_pages if staging.in_memory else _write_in_store
        skill_ids, referred = move(store, m, staging, names, report, source)
        report.skills_updated = recompute_skills(store, m, sorted(skill_ids), utcnow())
        report.entities_revived = revive(store, m, sorted(referred))
        pause_point("ingest-written")
        if source_hash:
            q.record_source(
                store, source_hash, source, size_bytes, report.records, report.run_id, utcnow()
            )


#: The columns whose new values name what an ingest changes besides its rows: the skills
#: whose summary is recomputed, the entities that are revived.
_SKILL_COLUMNS = {"skill_use": ("skill_id",)}
_ENTITY_COLUMNS = {"mention": ("entity_id",), "triple": ("subject_id", "object_id")}


def _write_in_store(
    store: Store,
    m: Mutation,
    staging: Staging,
    names: dict[str, str],
    report: IngestReport,
    source: str,
) -> tuple[set[str], set[str]]:
    """Staged in the store: each table's new rows and their audit rows are moved by one
    statement each, inside the database (no row passes through this process, and DuckDB
    writes them to its file before the commit rather than holding them in memory)."""
    for type_name in staging.types:
        columns = [c for c, kind in _REFERENCES.get(type_name, ()) if kind == "entity"]
        staging.resolve(type_name, columns, names)  # its own tables: before the write, unseen
    skill_ids: set[str] = set()
    referred: set[str] = set()
    for type_name in staging.types:
        table = MAPPINGS[type_name].table
        staged = staging.columns[type_name]
        skill_ids |= staging.new_values(type_name, table, _SKILL_COLUMNS.get(type_name, ()))
        referred |= staging.new_values(type_name, table, _ENTITY_COLUMNS.get(type_name, ()))
        # Stored sessions the input shows going on: found before the new rows join them.
        later = staging.later_ends(type_name, table) if type_name == "session" else None
        inserted = m.insert_new(
            table, staging.table(type_name), staged, action="ingest", reason=source
        )
        report.inserted[type_name] += inserted
        report.existing[type_name] = staging.rows[type_name] - inserted
        if later is not None and not later.is_empty():
            report.sessions_extended += m.update_many(
                "sessions", later, action="extend", reason=source
            )
    return skill_ids, referred


def _write_pages(
    store: Store,
    m: Mutation,
    staging: Staging,
    names: dict[str, str],
    report: IngestReport,
    source: str,
) -> tuple[set[str], set[str]]:
    """Staged in this process (one chunk at most): moved page by page through it."""
    skill_ids: set[str] = set()
    referred: set[str] = set()
    for type_name in staging.types:
        table = MAPPINGS[type_name].table
        written = 0
        for page in staging.pages(type_name, WRITE_ROWS, _renamer(type_name, names)):
            inserted = m.insert(table, page, action="ingest", reason=source)
            report.inserted[type_name] += len(inserted)
            written += page.height
            new_rows = page.filter(pl.col("id").is_in(inserted)) if inserted else None
            if new_rows is not None:
                for column in _SKILL_COLUMNS.get(type_name, ()):
                    skill_ids.update(new_rows[column].drop_nulls().to_list())
                for column in _ENTITY_COLUMNS.get(type_name, ()):
                    if column in new_rows.columns:
                        referred.update(new_rows[column].drop_nulls().to_list())
            if type_name == "session" and len(inserted) < page.height:
                report.sessions_extended += _extend_sessions(store, m, page, inserted, source)
        report.existing[type_name] = written - report.inserted[type_name]
    return skill_ids, referred


def _extend_sessions(
    store: Store, mutation: Mutation, frame: pl.DataFrame, inserted: list[str], source: str
) -> int:
    """Sessions that were already stored but have since gone on (a transcript that grew).

    The only field of an existing record that ingest changes: ``ended_at`` moves
    forward, audited like every other change.
    """
    known = frame.filter(~pl.col("id").is_in(inserted)).select("id", "ended_at")
    stored = q.session_ends(store, known["id"].to_list())
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
    return q.is_ingested(store, source_hash)


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
