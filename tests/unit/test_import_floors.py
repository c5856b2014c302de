"""The floors of the code stand straight: no import circles, and nothing imports a floor above it.

The project is built in floors, each importing only the floors below it:

1. the core, ``memvault`` (and the demo generator beside it, ``memvault_demo``), which knows
   nothing of Dagster;
2. the resources, ``resources`` (how the wiring reaches the core: settings, the store, a judge);
3. the assets, ``assets`` (what Dagster materializes, and the housekeeping of the Dagster
   instance its sensors and the runner share, ``assets.recovery``);
4. the code location and its runners, ``pipelines`` (``definitions``, ``runner``,
   ``owners``);
5. the command line, ``pipelines.cli``.

The graph is read with :mod:`ast` from the source, so it counts every import, at module level
and inside a function alike (a function-level import is still a dependency; it only hides a
circle until it runs). Imports under ``if TYPE_CHECKING:`` are left out: they never run, and
naming a type from another module in an annotation is not a dependency on its code.

``from package import name`` is an edge to ``package.name`` when that is a module, else to
``package`` (the name lives in its ``__init__``). Importing ``a.b.c`` also runs ``a`` and
``a.b``'s ``__init__``, but that implicit edge is not counted: a package that gathers its
modules' names would otherwise be a circle with each of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The floors, lowest first: a module's floor is that of the longest prefix listed.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("memvault", "memvault_demo"),
    ("resources",),
    ("assets",),
    ("pipelines",),
    ("pipelines.cli",),
)
PACKAGES = ("memvault", "memvault_demo", "resources", "assets", "pipelines")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the project's packages, by dotted name."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out[_module_name(path)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those under ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module ``name`` is, or is inside."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, known: dict[str, Path]) -> set[str]:
    """The project's modules ``module`` imports (itself left out)."""
    path = known[module]
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
            targets = [t if t in known else base for t in targets]
        for target in targets:
            resolved = _resolve(target, known)
            if resolved is not None and resolved != module:
                found.add(resolved)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module and the project modules it imports."""
    known = modules()
    return {module: imports_of(module, known) for module in known}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0

    def visit(root: str) -> None:
        nonlocal counter
        # Iterative depth-first search: (node, its successors still to visit).
        work: list[tuple[str, Iterator[str]]] = []

        def enter(node: str) -> None:
            nonlocal counter
            index[node] = low[node] = counter
            counter += 1
            stack.append(node)
            on_stack.add(node)
            work.append((node, iter(sorted(graph.get(node, ())))))

        enter(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    enter(nxt)
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(out)


def floor(module: str) -> int:
    """The floor ``module`` stands on (0 the core)."""
    best, best_len = 0, -1
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = level, len(prefix)
    return best


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Each (importer, imported) where the imported module stands on a higher floor."""
    return sorted(
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if floor(target) > floor(module)
    )


def test_the_graph_sees_every_kind_of_import() -> None:
    """The reader finds module-level, function-level, relative and ``from package import
    module`` imports, and leaves ``TYPE_CHECKING`` ones out (else the other tests could pass
    by not seeing an import)."""
    known = modules()
    graph = import_graph()
    assert len(known) > 150
    # A module-level import and a function-level one, both seen.
    assert "memvault.store" in graph["memvault.ingest"]
    assert "memvault.text_tokens" in graph["memvault.recall.keywords"]
    assert "assets.recovery" in graph["pipelines.runner"]
    sample = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import assets.profile\n"
        "def f():\n    from memvault import clock\n    import resources.store\n"
    )
    seen = {
        alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
        for node in _import_nodes(sample)
        for alias in node.names
    }
    assert seen == {"typing.TYPE_CHECKING", "memvault.clock", "resources.store"}
    # A circle and an upward import are found when they are there.
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert upward_imports({"memvault.x": {"assets.y"}, "assets.y": {"memvault.x"}}) == [
        ("memvault.x", "assets.y")
    ]
    assert floor("pipelines.cli.app") == 4 and floor("pipelines.runner") == 3


def test_no_import_circles() -> None:
    """No group of modules imports itself round: each can be read, tested and loaded on its
    own, bottom up."""
    assert circles(import_graph()) == []


def test_nothing_imports_a_floor_above_it() -> None:
    """The core never imports the wiring (resources, assets, pipelines), the wiring never the
    command line, a resource never an asset, an asset never the code location."""
    assert upward_imports(import_graph()) == []


#: Libraries of the wiring that the core never imports: it returns plain reports and verdicts,
#: and the adapter in ``assets`` turns them into Dagster's results.
WIRING_LIBRARIES = ("dagster",)


def libraries_of(tree: ast.AST) -> set[str]:
    """The top-level names of the absolute imports in ``tree`` (``dagster`` for ``import
    dagster as dg``, ``from dagster._core import x`` and ``import dagster_graphql``)."""
    found: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def _is_wiring_library(name: str) -> bool:
    return any(name == lib or name.startswith(f"{lib}_") for lib in WIRING_LIBRARIES)


def test_the_core_never_imports_dagster() -> None:
    """No module of ``memvault`` (or the demo generator) imports Dagster, at any depth: a
    check in the core returns a :class:`memvault.stage.Verdict`, not an asset check result."""
    sample = ast.parse(
        "import dagster as dg\n"
        "def f():\n    from dagster._core.x import y\n    import dagster_graphql\n"
        "from .dagster import z\nimport polars\n"
    )
    assert {n for n in libraries_of(sample) if _is_wiring_library(n)} == {
        "dagster",
        "dagster_graphql",
    }
    offenders = sorted(
        (module, name)
        for module, path in modules().items()
        if floor(module) == 0
        for name in libraries_of(ast.parse(path.read_text(encoding="utf-8")))
        if _is_wiring_library(name)
    )
    assert offenders == []
