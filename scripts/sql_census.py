"""Where the shared tables are queried from: a census of inline SQL outside the data layer.

Run from the repository root::

    python scripts/sql_census.py            # the table
    python scripts/sql_census.py --lines    # and every inline SQL line, by file

What counts:

* **an inline SQL line**: a physical line of a string literal (docstrings left out) in a ``.py``
  file of the project's packages that holds ``SELECT``, ``INSERT INTO``, ``UPDATE <t> SET``,
  ``DELETE FROM``, or ``FROM`` / ``JOIN`` / ``INTO`` followed by a shared table's name. Only
  upper-case keywords count, as the project writes its SQL (so prose is not counted).
* **a file that queries a table**: its string literals name the table after ``FROM``, ``JOIN``,
  ``INTO``, ``UPDATE`` or ``TABLE``, or it calls a store helper with the table's name as a
  literal (``read_table``, ``get_row``, a mutation's ``insert`` / ``update`` / ``update_many``
  / ``restore_many``); the two are also shown apart.

The data layer (``memvault/store/``: the backends, the audited write path, the run bookkeeping
and the table families in ``memvault/store/queries/``) and the tests are left out: that is
where SQL belongs. The shared tables are those the migrations in ``sql/migrations`` create.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(
    0, str(ROOT)
)  # run as `python scripts/sql_census.py`: the scan is tests/sql_scan.py
from tests import sql_scan  # noqa: E402

PACKAGES = ("memvault", "memvault_demo", "resources", "assets", "pipelines")
DATA_LAYER = ("memvault/store/",)
#: The tables the issue names first (most read); shown first.
FIRST = ("blocks", "triples", "entities", "audit_log", "runs", "sessions", "mentions")


def shared_tables() -> list[str]:
    """Every table a migration creates, the most-read first."""
    found = sql_scan.shared_tables()
    return sorted(found, key=lambda t: (t not in FIRST, FIRST.index(t) if t in FIRST else 0, t))


def project_files() -> list[Path]:
    """The ``.py`` files of the project's packages, outside the data layer."""
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(DATA_LAYER):
                out.append(path)
    return out


def string_lines(path: Path) -> list[tuple[int, str]]:
    """Each (line number, text) of the file's string literals, docstrings left out."""
    source = path.read_text(encoding="utf-8")
    docs = sql_scan.docstring_lines(ast.parse(source))
    out: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.STRING or tok.start[0] in docs:
            continue
        for offset, text in enumerate(tok.string.splitlines()):
            out.append((tok.start[0] + offset, text))
    return out


def sql_patterns(tables: list[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a line of SQL, a table named by SQL: group 1 the table)."""
    names = "|".join(sorted(tables, key=len, reverse=True))
    line = re.compile(
        rf"\bSELECT\b|\bINSERT INTO\b|\bUPDATE \w+ SET\b|\bDELETE FROM\b"
        rf'|\b(?:FROM|JOIN|INTO) "?(?:{names})\b'
    )
    table = re.compile(rf'\b(?:FROM|JOIN|INTO|UPDATE|TABLE) "?({names})\b"?')
    return line, table


def helper_tables(path: Path, tables: set[str]) -> set[str]:
    """Tables named as a literal first argument of a store helper in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {name for _, name in sql_scan.helper_calls(tree, tables)}


def census() -> tuple[dict[str, list[int]], dict[str, set[str]], dict[str, set[str]]]:
    """(inline SQL lines by file, files querying each table by SQL, by a helper)."""
    tables = shared_tables()
    line_re, table_re = sql_patterns(tables)
    lines: dict[str, list[int]] = {}
    by_sql: dict[str, set[str]] = defaultdict(set)
    by_helper: dict[str, set[str]] = defaultdict(set)
    for path in project_files():
        rel = path.relative_to(ROOT).as_posix()
        strings = string_lines(path)
        hits = sorted({n for n, text in strings if line_re.search(text)})
        if hits:
            lines[rel] = hits
        for _, text in strings:
            for name in table_re.findall(text):
                by_sql[name].add(rel)
        for name in helper_tables(path, set(tables)):
            by_helper[name].add(rel)
    return lines, by_sql, by_helper


def area(rel: str) -> str:
    """A file's area: its top package and first sub-package (``memvault/recall``)."""
    parts = rel.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", action="store_true", help="list every inline SQL line")
    args = parser.parse_args(argv)
    lines, by_sql, by_helper = census()
    total = sum(len(v) for v in lines.values())
    wiring = sum(len(v) for k, v in lines.items() if not k.startswith(("memvault", "memvault_")))
    print(f"inline SQL lines outside the data layer: {total} in {len(lines)} files")
    print(f"  of which in the wiring and the CLI (resources/, assets/, pipelines/): {wiring}")
    print()
    print(f"{'table':<18}{'files':>6}{'areas':>6}{'by SQL':>8}{'by helper':>10}")
    for table in shared_tables():
        files = by_sql[table] | by_helper[table]
        if not files:
            continue
        areas = {area(f) for f in files}
        print(
            f"{table:<18}{len(files):>6}{len(areas):>6}"
            f"{len(by_sql[table]):>8}{len(by_helper[table]):>10}"
        )
    if args.lines:
        print()
        for rel, numbers in sorted(lines.items(), key=lambda kv: -len(kv[1])):
            print(f"{len(numbers):>4}  {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
