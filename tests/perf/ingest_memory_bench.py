"""What an ingest's memory holds, by size: the scale benchmark's full history (seed 11) ingested
into a new DuckDB store, each size in a fresh process.

    python -m tests.perf.ingest_memory_bench [--sessions 9700,19400,38800] [--trace]

Per size: peak RSS (``ru_maxrss``), the ingest's CPU and wall seconds (``ingest_file`` then
``CHECKPOINT``) and the peak of each ``duckdb_memory()`` tag, sampled every 0.5 s from another
connection (``ART_INDEX``: the index entries; ``IN_MEMORY_TABLE``: the transaction's rows;
``BASE_TABLE``: cached blocks). ``MEMVAULT_INGEST_MEMORY`` in the shell reaches the children.
The histories are generated once and cached (:func:`tests.perf.dream_data.history_files`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

SEED = 11


def _child(path: str, workdir: str, trace: bool) -> None:
    import memvault
    from memvault.ingest import ingest_file

    peaks: dict[str, int] = {}
    samples: list[tuple[float, dict[str, int]]] = []
    stop = threading.Event()

    def sample(con: Any) -> None:
        start = time.perf_counter()
        while not stop.wait(0.5):
            try:
                rows = con.execute("SELECT tag, memory_usage_bytes FROM duckdb_memory()").fetchall()
            except Exception:  # the database busy or closing: the next sample counts
                continue
            for tag, used in rows:
                peaks[tag] = max(peaks.get(tag, 0), used)
            big = {tag: used >> 20 for tag, used in rows if used > 1 << 20}
            samples.append((round(time.perf_counter() - start, 1), big))

    with memvault.open(f"duckdb://{Path(workdir) / 'store.duckdb'}") as store:
        sampler = threading.Thread(target=sample, args=(store.backend.con.cursor(),))  # type: ignore[attr-defined]
        sampler.start()
        wall, cpu = time.perf_counter(), time.process_time()
        report = ingest_file(store, path)
        store.backend.execute("CHECKPOINT")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        stop.set()
        sampler.join()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result = {
        "rows": sum(report.inserted.values()),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "cpu_s": round(cpu, 1),
        "wall_s": round(wall, 1),
        "duckdb_peak_mb": {t: b >> 20 for t, b in peaks.items() if b > 1 << 20},
        "limit": os.environ.get("MEMVAULT_INGEST_MEMORY") or "sized",
    }
    if trace:
        result["trace"] = samples[:: max(1, len(samples) // 40)]
    print(json.dumps(result))


def _history(sessions: int) -> str:
    from tests.perf.dream_data import history_files

    history, _ = history_files(sessions, SEED, 0)
    return str(history)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4] == "trace")
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", default="9700,19400,38800")
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args()
    for sessions in [int(s) for s in args.sessions.split(",")]:
        path = _history(sessions)
        with tempfile.TemporaryDirectory() as work:
            mode = "trace" if args.trace else "-"
            command = [sys.executable, "-m", "tests.perf.ingest_memory_bench", "--child"]
            out = subprocess.run(
                [*command, path, work, mode], check=True, capture_output=True, text=True
            )
        print(json.dumps({"sessions": sessions} | json.loads(out.stdout.strip().splitlines()[-1])))


if __name__ == "__main__":
    main()
