"""A small ingest (one session and one block, what ``memvault serve``'s ``remember`` writes):
checked in memory against staged in the store, same store, same run, alternating.

Each run ingests a new session and block through ``ingest_records`` (parsing included) with
``memvault.ingest.SMALL_IN_MEMORY`` on ("in memory") or off ("staged"), one after the other,
so both see the same load; the first runs of each are warm-up and not counted. The store
round trips of one ingest are counted too (calls of the backend's execute / fetch /
fetch_df / append_df).

    python -m tests.perf.small_ingest_bench [--runs 40] [--backend duckdb|postgresql]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import memvault
import memvault.ingest as ingest
from memvault.ingest import ingest_records, read_jsonl
from memvault.store import Store

PG_URL = os.environ.get("MEMVAULT_TEST_PG", "postgresql://root@127.0.0.1:5432/test")
WARMUP = 3
PATHS = {"in memory": True, "staged": False}


def _remembered(n: str) -> bytes:
    session = {"type": "session", "id": f"bench-s{n}", "started_at": "2026-02-01T10:00:00Z"}
    block = {
        "type": "block",
        "id": f"bench-b{n}",
        "session_id": f"bench-s{n}",
        "text": f"Remembered fact number {n}: the meeting moved to Thursday.",
        "created_at": "2026-02-01T10:05:00Z",
    }
    return (json.dumps(session) + "\n" + json.dumps(block) + "\n").encode()


def _counting(store: Store) -> Callable[[], int]:
    """Count the backend's round trips from now on; returns a reader of the count."""
    calls = [0]
    backend: Any = store.backend
    for name in ("execute", "fetch", "fetch_df", "append_df"):
        method = getattr(backend, name)

        def counted(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            calls[0] += 1
            return _method(*args, **kwargs)

        setattr(backend, name, counted)
    return lambda: calls[0]


def measure(store: Store, runs: int) -> dict[str, Any]:
    """Median / p90 milliseconds and round trips of one small ingest on each path."""
    seconds: dict[str, list[float]] = {p: [] for p in PATHS}
    trips: dict[str, int] = {}
    count = _counting(store)
    token = secrets.token_hex(3)
    saved = ingest.SMALL_IN_MEMORY
    try:
        for n in range(runs + WARMUP):
            order = list(PATHS) if n % 2 == 0 else list(reversed(PATHS))
            for path in order:
                ingest.SMALL_IN_MEMORY = PATHS[path]
                raw = _remembered(f"{token}-{n}-{order.index(path)}")
                before = count()
                start = time.perf_counter()
                items = read_jsonl(io.BytesIO(raw), "<remember>")
                report = ingest_records(store, items, source="<remember>")
                took = time.perf_counter() - start
                assert report.inserted["block"] == 1
                trips[path] = count() - before
                if n >= WARMUP:
                    seconds[path].append(took)
    finally:
        ingest.SMALL_IN_MEMORY = saved
    result: dict[str, Any] = {"runs": runs, "load": os.getloadavg()}
    for path, values in seconds.items():
        ordered = sorted(values)
        result[path] = {
            "median_ms": statistics.median(values) * 1000,
            "p90_ms": ordered[int(0.9 * (len(ordered) - 1))] * 1000,
            "round_trips": trips[path],
        }
    result["ratio"] = result["staged"]["median_ms"] / result["in memory"]["median_ms"]
    return result


def benchmark(backend: str, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        if backend == "duckdb":
            url, schema = f"duckdb://{Path(tmp) / 'small.duckdb'}", None
        else:
            schema = f"mvbench_{secrets.token_hex(4)}"
            url = f"{PG_URL}?schema={schema}"
        try:
            with memvault.open(url) as store:
                result = measure(store, runs)
        finally:
            if schema:
                import psycopg

                with psycopg.connect(PG_URL, autocommit=True) as con:
                    con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    result["backend"] = backend
    return result


def report(result: dict[str, Any]) -> str:
    load = ", ".join(f"{x:.1f}" for x in result["load"])
    parts = [
        f"{path}: median {result[path]['median_ms']:.1f} ms, p90 {result[path]['p90_ms']:.1f} ms, "
        f"{result[path]['round_trips']} round trips"
        for path in PATHS
    ]
    return (
        f"{result['backend']:<10} one session + one block, {result['runs']} runs each: "
        + " | ".join(parts)
        + f" | staged / in memory ×{result['ratio']:.1f} (load {load})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--backend", choices=["duckdb", "postgresql"], action="append")
    args = parser.parse_args()
    for backend in args.backend or ["duckdb", "postgresql"]:
        print(report(benchmark(backend, args.runs)), flush=True)


if __name__ == "__main__":
    main()
