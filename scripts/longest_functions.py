"""The longest functions of the project's packages: where logic piles up.

Run from the repository root::

    python scripts/longest_functions.py            # the 10 longest
    python scripts/longest_functions.py -n 30      # more
    python scripts/longest_functions.py --root DIR # another checkout (a before/after)

A function's length is its lines from ``def`` to its last line, its docstring and comments
included, its decorators left out; a method is named ``Class.method``, a nested function
``outer.inner`` (and counted apart from its parent too). The packages are the core
(``memvault``) and the wiring (``assets``, ``resources``, ``pipelines``): in the wiring a
long function usually holds logic that belongs in the core.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("memvault", "assets", "resources", "pipelines")


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int, int]]:
    """(qualified name, first line, length) of every function in ``tree``, nested ones too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            yield name, node.lineno, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def longest(root: Path, count: int) -> list[tuple[int, str]]:
    """The ``count`` longest functions under ``root`` as (lines, ``path:line name``)."""
    found: list[tuple[int, str]] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            relative = path.relative_to(root)
            found += [(n, f"{relative}:{line} {name}") for name, line, n in functions(tree)]
    return sorted(found, key=lambda item: (-item[0], item[1]))[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="how many (10)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to read")
    args = parser.parse_args()
    for lines, where in longest(args.root, args.n):
        print(f"{lines:5d}  {where}")


if __name__ == "__main__":
    main()
