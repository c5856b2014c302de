"""The core package stands on its own: the demo generator is installed beside it, not in it."""

from __future__ import annotations

import ast
from pathlib import Path

import memvault
import memvault_demo


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_core_never_imports_the_demo_generator() -> None:
    core = Path(memvault.__file__).parent
    offenders = {
        str(path.relative_to(core)): sorted(
            n for n in _imports(path) if n.startswith("memvault_demo")
        )
        for path in core.rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert not (core / "demo").exists()
    assert Path(memvault_demo.__file__).parent.parent == core.parent
