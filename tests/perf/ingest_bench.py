"""Ingest throughput: memvault's bulk path against naive row-by-row INSERTs, same data, same run.

Each measurement runs in a fresh subprocess so its peak RSS is its own. The
naive baselines parse and validate each line with the same record models and
INSERT row by row in one transaction — once with an audit row per record (the
same work memvault does) and once without (bare inserts). They run on a
sample (rows/s does not depend on the row count for row-by-row inserts).

    python -m tests.perf.ingest_bench [--blocks 100000] [--naive-rows 10000] [--backend duckdb]

Peak RSS and CPU seconds are the ingesting child's own (``ru_maxrss``, user + system time,
imports included); PostgreSQL's server work is not in them.
"""

from __future__ import annotations

import argparse
import json
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PG_URL = "postgresql://root@127.0.0.1:5432/test"


def make_input(path: Path, blocks: int) -> int:
    """Sessions and blocks of the demo generator, until ``blocks`` blocks are written."""
    from memvault_demo.generator import DemoConfig, generate

    sessions = max(200, blocks // 9)
    records, _ = generate(DemoConfig(sessions=sessions, days=max(150, sessions // 20), seed=11))
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            if record.type == "session":
                fh.write(json.dumps(record.to_json_dict()) + "\n")
            elif record.type == "block":
                fh.write(json.dumps(record.to_json_dict()) + "\n")
                written += 1
                if written >= blocks:
                    break
    return written


def _sample(src: Path, dst: Path, rows: int) -> None:
    with src.open() as fin, dst.open("w") as fout:
        blocks = 0
        for line in fin:
            fout.write(line)
            blocks += '"type": "block"' in line
            if blocks >= rows:
                break


# -- what each subprocess runs ---------------------------------------------------------------


def run_ours(url: str, path: str) -> dict[str, Any]:
    import memvault
    from memvault.ingest import ingest_file

    with memvault.open(url) as store:
        start = time.perf_counter()
        report = ingest_file(store, path)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": sum(report.inserted.values())}


def run_naive(url: str, path: str, audit: bool) -> dict[str, Any]:
    """Row by row: parse, validate, INSERT (and INSERT an audit row), one transaction."""
    import memvault
    from memvault.interchange import MAPPINGS
    from memvault.normalize import utcnow
    from memvault.records import RECORD_ADAPTER
    from memvault.store.tables import JSON_COLUMNS

    def row_of(record: Any) -> dict[str, Any]:
        mapping = MAPPINGS[record.type]
        renames, json_cols = mapping.field_to_column, JSON_COLUMNS.get(mapping.table, ())
        row = {}
        for name, value in record.__dict__.items():
            if name != "type":
                column = renames.get(name, name)
                row[column] = json.dumps(value) if column in json_cols else value
        return row

    rows = 0
    with memvault.open(url) as store:
        backend = store.backend
        start = time.perf_counter()
        with store.transaction(), open(path, "rb") as fh:
            for line in fh:
                record = RECORD_ADAPTER.validate_json(line)
                table = MAPPINGS[record.type].table
                row = row_of(record)
                cols = ", ".join(row)
                marks = ", ".join(f":{c}" for c in row)
                backend.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", row)
                if audit:
                    backend.execute(
                        "INSERT INTO audit_log (run_id, phase, action, target_table, target_id, "
                        "before_image, after_image, created_at) "
                        "VALUES ('naive', 'ingest', 'ingest', :t, :id, NULL, :img, :now)",
                        {"t": table, "id": row["id"], "img": line.decode(), "now": utcnow()},
                    )
                rows += 1
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": rows}


def _child(argv: list[str]) -> None:
    mode, url, path = argv[:3]
    result = (
        run_ours(url, path) if mode == "ours" else run_naive(url, path, audit=mode == "naive-audit")
    )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    result["cpu_s"] = usage.ru_utime + usage.ru_stime  # the whole child, imports included
    print(json.dumps(result))


# -- orchestration ---------------------------------------------------------------------------


def measure(mode: str, url: str, path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "tests.perf.ingest_bench", "--child", mode, url, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["rows_per_s"] = result["rows"] / result["seconds"]
    return result


def _fresh_url(backend: str, workdir: Path) -> tuple[str, Any]:
    if backend == "duckdb":
        return f"duckdb://{workdir / f'{secrets.token_hex(4)}.duckdb'}", None
    schema = f"mvbench_{secrets.token_hex(4)}"
    return f"{PG_URL}?schema={schema}", schema


def _drop(schema: str | None) -> None:
    if schema:
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True) as con:
            con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def benchmark(
    blocks: int, naive_rows: int, backends: tuple[str, ...] = ("duckdb", "postgresql")
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        full, sample = work / "blocks.jsonl", work / "sample.jsonl"
        written = make_input(full, blocks)
        _sample(full, sample, naive_rows)
        for backend in backends:
            row: dict[str, Any] = {}
            for mode, path in (("ours", full), ("naive-audit", sample), ("naive-bare", sample)):
                url, schema = _fresh_url(backend, work)
                try:
                    row[mode] = measure(mode, url, path)
                finally:
                    _drop(schema)
            row["ratio_same_work"] = row["ours"]["rows_per_s"] / row["naive-audit"]["rows_per_s"]
            row["ratio_bare_inserts"] = row["ours"]["rows_per_s"] / row["naive-bare"]["rows_per_s"]
            results[backend] = row
    results["blocks"] = written
    return results


def report(results: dict[str, Any]) -> str:
    targets = {"duckdb": 20.0, "postgresql": 5.0}
    lines = [
        f"ingest of {results['blocks']:,} blocks (+ their sessions); naive baselines on a sample"
    ]
    for backend, target in targets.items():
        if backend not in results:
            continue
        r = results[backend]
        lines.append(
            f"  {backend:<10} memvault {r['ours']['rows_per_s']:>9,.0f} rows/s "
            f"({r['ours']['seconds']:.2f} s, {r['ours']['cpu_s']:.1f} s CPU, "
            f"peak RSS {r['ours']['peak_rss_mb']:.0f} MB) | "
            f"naive+audit {r['naive-audit']['rows_per_s']:>7,.0f} rows/s → ×{r['ratio_same_work']:.1f} "
            f"(target ×{target:.0f}: {'met' if r['ratio_same_work'] >= target else 'NOT met'}) | "
            f"naive bare {r['naive-bare']['rows_per_s']:>7,.0f} rows/s → ×{r['ratio_bare_inserts']:.1f}"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=100_000)
    parser.add_argument("--naive-rows", type=int, default=10_000)
    parser.add_argument("--backend", action="append", choices=("duckdb", "postgresql"))
    args = parser.parse_args()
    backends = tuple(args.backend or ("duckdb", "postgresql"))
    print(report(benchmark(args.blocks, args.naive_rows, backends)))


if __name__ == "__main__":
    main()
