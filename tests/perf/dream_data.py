"""A large demo store for the dream benchmarks, built once and cached under /tmp.

The demo generator at ~10k sessions gives ≥ 100k blocks, ≥ 20k entities and
≥ 200k triples (10,000 sessions, seed 11: 103k blocks, 23k entities, 213k
triples, 392k mentions). Generating and ingesting that takes minutes, so the
finished DuckDB file is cached under ``/tmp/memvault-perf/`` keyed by the
parameters and by the source of everything that shapes it (generator, ingest,
schema); a rerun copies the cached file (seconds). The history's JSONL files are
cached apart, keyed by the generator's sources only (:func:`history_files`): a
change to the ingest rebuilds the store, not the history (at 1M blocks generating
it takes most of an hour).

``holdout`` keeps the last sessions of the history out of the store and writes
them to a JSONL file (:func:`holdout_path`): ingesting it later is "new
sessions arrived", the input of an incremental run.

    build_scaled_store("duckdb:///tmp/x.duckdb", sessions=10_100, seed=11, holdout=100)
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import memvault
from memvault.normalize import utcnow
from memvault.records import Record
from memvault_demo.generator import DemoConfig, DemoHistory, GroundTruth

CACHE_ROOT = Path(os.environ.get("MEMVAULT_PERF_CACHE", "/tmp/memvault-perf"))
#: A fixed end keeps ids and times identical between builds (records may not lie in the future).
END = min(dt.datetime(2026, 11, 1), utcnow().replace(hour=0, minute=0, second=0, microsecond=0))
_REPO = Path(__file__).resolve().parents[2]
#: Everything whose change must invalidate a cached history (its JSONL files).
_HISTORY_SOURCES = (
    "memvault_demo/generator.py",
    "memvault_demo/vocabulary.py",
    "memvault/interchange.py",
    "memvault/records.py",
    "tests/perf/dream_data.py",
)
#: Everything whose change must invalidate a cached store.
_SOURCES = (
    *_HISTORY_SOURCES,
    "memvault/ingest.py",
    "memvault/vectors.py",
    "memvault/embed/hashing.py",
)


def scaled_config(sessions: int, seed: int) -> DemoConfig:
    """The demo config of the benchmark histories: about 20 sessions a day."""
    return DemoConfig(sessions=sessions, days=max(150, sessions // 20), seed=seed, end=END)


def _digest(key: list[object], paths: list[Path]) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(key).encode())
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _cache_dir(sessions: int, seed: int, holdout: int, embed: tuple[str, ...]) -> Path:
    paths = [_REPO / p for p in _SOURCES]
    paths += sorted((_REPO / "sql" / "migrations").glob("*.sql"))
    digest = _digest([sessions, seed, holdout, list(embed), END.isoformat()], paths)
    return CACHE_ROOT / f"scaled-s{sessions}-seed{seed}-h{holdout}-{digest}"


def _history_dir(sessions: int, seed: int, holdout: int) -> Path:
    paths = [_REPO / p for p in _HISTORY_SOURCES]
    digest = _digest([sessions, seed, holdout, END.isoformat()], paths)
    return CACHE_ROOT / f"history-s{sessions}-seed{seed}-h{holdout}-{digest}"


def holdout_path(
    sessions: int, seed: int, holdout: int, embed: tuple[str, ...] = ("entity",)
) -> Path:
    """The JSONL file of the held-out sessions (exists after :func:`build_scaled_store`)."""
    return _cache_dir(sessions, seed, holdout, embed) / "holdout.jsonl"


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One builder per cache entry (another process waits and then reuses the result)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_split(records: Iterator[Record], keep_sessions: int, main: Path, rest: Path) -> None:
    """Stream the records of the first ``keep_sessions`` sessions to ``main``, the rest to ``rest``
    (a session's records follow its session record)."""
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    seen = 0
    with main.open("w", encoding="utf-8") as kept, rest.open("w", encoding="utf-8") as later:
        for record in records:
            seen += record.type == "session"
            out = kept if seen <= keep_sessions else later
            out.write(dumps(record.to_json_dict()))
            out.write("\n")


def history_files(sessions: int, seed: int, holdout: int) -> tuple[Path, Path]:
    """The history's JSONL (its first ``sessions - holdout`` sessions) and the held-out
    sessions' JSONL, generated once and cached."""
    directory = _history_dir(sessions, seed, holdout)
    main, held = directory / "history.jsonl", directory / "holdout.jsonl"
    with _locked(directory):
        if not (main.is_file() and held.is_file()):
            history = DemoHistory(scaled_config(sessions, seed))
            parts = main.with_suffix(".part"), held.with_suffix(".part")
            _write_split(history.records(), sessions - holdout, *parts)
            os.replace(parts[1], held)
            os.replace(parts[0], main)
    return main, held


def _build(directory: Path, sessions: int, seed: int, holdout: int, embed: tuple[str, ...]) -> None:
    from memvault.embed import HashingEmbedder
    from memvault.ingest import ingest_file
    from memvault.vectors import embed_missing

    started = time.perf_counter()
    main, held = history_files(sessions, seed, holdout)
    shutil.copyfile(held, directory / "holdout.jsonl")
    part = directory / "store.duckdb.part"
    part.unlink(missing_ok=True)
    with memvault.open(f"duckdb://{part}") as store:
        ingest_file(store, main)
        if embed:
            embed_missing(store, HashingEmbedder(), kinds=embed, batch_size=8192)
        store.backend.execute("CHECKPOINT")
    os.replace(part, directory / "store.duckdb")
    (directory / "built.json").write_text(
        json.dumps({"seconds": round(time.perf_counter() - started, 1)}), encoding="utf-8"
    )


def build_scaled_store(
    url: str,
    *,
    sessions: int,
    seed: int,
    holdout: int = 0,
    embed: tuple[str, ...] = ("entity",),
) -> GroundTruth:
    """Fill the empty store at ``url`` with the first ``sessions - holdout`` sessions of a
    ``sessions``-session demo history (entity vectors by the hashing embedder, as ``embed`` says).

    DuckDB URLs get a copy of the cached file; other URLs are ingested from the cached JSONL.
    Returns the ground truth of the whole history.
    """
    if not 0 <= holdout < sessions:
        raise ValueError("holdout must be at least 0 and less than sessions")
    directory = _cache_dir(sessions, seed, holdout, embed)
    with _locked(directory):
        if not (directory / "store.duckdb").is_file():
            _build(directory, sessions, seed, holdout, embed)
    if url.startswith("duckdb:"):
        path = Path(url.split("://", 1)[1] if "://" in url else url.split(":", 1)[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(directory / "store.duckdb", path)
    else:
        from memvault.embed import HashingEmbedder
        from memvault.ingest import ingest_file
        from memvault.vectors import embed_missing

        with memvault.open(url) as store:
            ingest_file(store, history_files(sessions, seed, holdout)[0])
            if embed:
                embed_missing(store, HashingEmbedder(), kinds=embed, batch_size=8192)
    return DemoHistory(scaled_config(sessions, seed)).truth
