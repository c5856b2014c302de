"""The wiring and the command line ask the core, never the tables.

``resources/``, ``assets/`` and ``pipelines/`` (the CLI included) hold no SQL and name no shared
table to a store helper (``get_row("blocks", ...)``, ``read_table``, a mutation's ``insert``):
what they need of the store is a function of the data layer (``memvault/store/queries/``, one
module per table family) or of the core module that owns the rule. A query written in the
wiring would be one more place a column rename or a backend difference has to be found.

The scan reads the source with :mod:`tokenize` and :mod:`ast`: every line of every string
literal except docstrings (an f-string naming its table through a placeholder counts too, by
its keywords), and every call of a store helper whose first argument is a table's name.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from tests.sql_scan import ROOT, docstring_lines, helper_calls, shared_tables

WIRING = ("resources", "assets", "pipelines")
#: Core modules whose queries moved into the data layer: they stay without SQL (a write through
#: the audited path, ``mutation.update_many("entities", ...)``, is not SQL and may stay).
MOVED = (
    "memvault/graph/incremental.py",
    "memvault/inbox.py",
    "memvault/recall/feedback.py",
    "memvault/recall/context.py",
    "memvault/recall/recaller.py",
    "memvault/recall/currency.py",
    "memvault/recall/entities.py",
    "memvault/temporal/conflict/apply.py",
    "memvault/dream/normalize_content.py",
    "memvault/review/queue.py",
    "memvault/temporal/grounding.py",
    "memvault/temporal/asof.py",
    "memvault/temporal/facts.py",
    "memvault/gardener/ledger.py",
    "memvault/layers/skills.py",
    "memvault/serve/apply.py",
    "memvault/dream/orient.py",
    "memvault/review/impact.py",
    "memvault/review/intake.py",
    "memvault/recall/prefetch.py",
    "memvault/review/evidence.py",
    "memvault/dream/reflect.py",
    "memvault/temporal/conflict/candidates.py",
    "memvault/lifecycle/originals.py",
    "memvault/dream/check_scope.py",
    "memvault/temporal/checks.py",
    "memvault/recall/index.py",
    "memvault/memories.py",
    "memvault/orphans.py",
    "memvault/references.py",
    "memvault/artifacts.py",
    "memvault/recall/log.py",
    "memvault/vectors.py",
    "memvault/quality.py",
    "memvault/lifecycle/weights.py",
    "memvault/lifecycle/tiering.py",
    "memvault/export.py",
    "memvault/dream/prune.py",
    "memvault/lint/findings.py",
    "memvault/lint/run.py",
    "memvault/lint/confirm.py",
    "memvault/lint/structure.py",
    "memvault/lint/semantic.py",
    "memvault/lint/grounding_layer.py",
    "memvault/lint/scope.py",
    "memvault/review/calibration.py",
    "memvault/serve/facts.py",
    "memvault/dream/exclusive.py",
    "memvault/graph/inputs.py",
    "memvault/graph/connected.py",
    "memvault/graph/centrality.py",
    "memvault/graph/communities.py",
    "memvault/graph/discovery.py",
    "memvault/ingest.py",
    "memvault/ingest_staging.py",
    "memvault/profile/gaps.py",
    "memvault/profile/snapshot.py",
    "memvault/profile/stated.py",
    "memvault/profile/diary.py",
    "memvault/profile/interest.py",
    "memvault/profile/write.py",
    "memvault/dream/stages.py",
    "memvault/judge/store_cache.py",
    "memvault/layers/attitudes.py",
)


def sql_line_pattern(tables: set[str]) -> re.Pattern[str]:
    """A line of SQL: a statement's keywords (upper case, as the project writes SQL), or a
    shared table after FROM / JOIN / INTO / UPDATE."""
    names = "|".join(sorted(tables, key=len, reverse=True))
    return re.compile(
        r"\bSELECT\b.*\bFROM\b|\bINSERT INTO\b|\bUPDATE \S+ SET\b|\bDELETE FROM\b"
        rf'|\b(?:FROM|JOIN|INTO|UPDATE) "?(?:{names})\b'
    )


def sql_in(source: str, tables: set[str], helpers: bool = True) -> list[tuple[int, str]]:
    """Each (line, text) of ``source`` that queries a shared table: SQL in a string literal, or
    (if ``helpers``) a store helper called with a table's name."""
    tree = ast.parse(source)
    docs = docstring_lines(tree)
    pattern = sql_line_pattern(tables)
    hits: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.STRING or tok.start[0] in docs:
            continue
        for offset, text in enumerate(tok.string.splitlines()):
            if pattern.search(text):
                hits.append((tok.start[0] + offset, text.strip()))
    if helpers:
        hits += [(node.lineno, ast.unparse(node)) for node, _ in helper_calls(tree, tables)]
    return sorted(hits)


def test_the_scan_finds_sql_in_every_form_it_is_written() -> None:
    """A plain string, a statement split over implicit concatenation, an f-string with its
    table as a placeholder, a write, and a helper naming a table are all found; docstrings,
    prose and a helper given no table name are not (else the guard below could pass by not
    seeing)."""
    tables = shared_tables()
    assert {"blocks", "triples", "entities", "audit_log", "runs"} <= tables
    source = '''
"""SELECT the module's docstring: never counted FROM blocks."""
def f(store, table, m):
    """A docstring that says SELECT x FROM blocks is prose."""
    store.fetch("SELECT count(*) FROM blocks")
    store.fetch_df(
        "SELECT id, text "
        "FROM triples WHERE status = 'active'"
    )
    store.fetch(f"SELECT max(day) FROM {table}")
    store.execute("UPDATE runs SET status = 'failed'")
    store.get_row("entities", "e1")
    m.insert("audit_log", None)
    print("select what the user asked from the blocks")
    store.get_row(table, "x")
'''
    found = [line for line, _ in sql_in(source, tables)]
    assert found == [5, 8, 10, 11, 12, 13]


def test_the_wiring_and_the_cli_ask_the_core_never_the_tables() -> None:
    tables = shared_tables()
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for package in WIRING
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, text in sql_in(path.read_text(encoding="utf-8"), tables)
    ]
    assert not offenders, "SQL against shared tables outside the core:\n" + "\n".join(offenders)


def test_the_core_modules_whose_queries_moved_stay_without_sql() -> None:
    tables = shared_tables()
    offenders = [
        f"{rel}:{line}: {text}"
        for rel in MOVED
        for line, text in sql_in((ROOT / rel).read_text(encoding="utf-8"), tables, helpers=False)
    ]
    assert not offenders, "SQL back in a core module the data layer answers for:\n" + "\n".join(
        offenders
    )
