"""Finding SQL against memvault's shared tables in Python source: the pieces the data-layer
guard (tests/unit/test_data_layer.py) and the census (scripts/sql_census.py) share, so the two
agree on what a table, a docstring and a store helper's table argument are."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Store helpers whose first argument names a table.
HELPERS = ("read_table", "get_row", "insert", "update", "update_many", "restore_many")


def shared_tables() -> set[str]:
    """Every table a migration creates (the schema's own version table left out)."""
    found: set[str] = set()
    for path in sorted((ROOT / "sql" / "migrations").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(r"CREATE TABLE(?: IF NOT EXISTS)? (\w+)", text))
    found.discard("schema_version")
    return found


def docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers docstrings occupy."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def helper_calls(tree: ast.AST, tables: set[str] | list[str]) -> list[tuple[ast.Call, str]]:
    """Each call of a store helper whose first argument is a shared table's name literal."""
    found: list[tuple[ast.Call, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in HELPERS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in tables
        ):
            found.append((node, str(node.args[0].value)))
    return found
