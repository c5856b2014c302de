"""One home for words: the cuts other modules take from :mod:`memvault.text_tokens` agree
with themselves (the polars twin with the Python one), and the one plural rule folds what it
should and leaves the rest."""

from __future__ import annotations

import ast
from pathlib import Path

import polars as pl
import pytest

import memvault
from memvault.text_tokens import (
    ENTITY_TOKEN,
    NAME_WORD,
    NUMBER,
    normalized,
    normalized_expr,
    normalized_words,
    singular,
)

TEXTS = [
    "Acme, Inc.",
    "  Stream   processing—topics ",
    "ＡＣＭＥ ｃｏｒｐ",
    "snake_case_name",
    "Zürich (Switzerland)",
    "C++ / .NET",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_normalized_wording_is_the_same_in_python_and_polars(text: str) -> None:
    """Conflict resolution compares a column with the polars form and one value with the
    Python form: a pair equal in one must be equal in the other."""
    frame = pl.DataFrame({"object": [text]}).select(normalized_expr("object"))
    assert frame.item() == normalized(text)


def test_normalized_words_drop_case_width_and_punctuation() -> None:
    assert normalized("Acme, Inc.") == "acme inc"
    assert normalized_words("ＡＣＭＥ ｃｏｒｐ") == ["acme", "corp"]
    assert normalized_words("snake_case_name") == ["snake", "case", "name"]


@pytest.mark.parametrize(
    ("plural", "one"),
    [
        ("libraries", "library"),
        ("editors", "editor"),
        ("memories", "memory"),
        ("relations", "relation"),
        ("class", "class"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("ties", "tie"),
        ("bus", "bus"),
        ("go", "go"),
    ],
)
def test_singular_folds_plain_plurals_only(plural: str, one: str) -> None:
    assert singular(plural) == one


def test_written_words_keep_their_inner_punctuation() -> None:
    assert NAME_WORD.findall("O'Neill met Jean-Luc at Node.js 2024") == [
        "O'Neill",
        "met",
        "Jean-Luc",
        "at",
        "Node.js",
    ]
    assert NUMBER.findall("on 2024-03-05 at 10:30, 1.5 hours") == ["2024-03-05", "10:30", "1.5"]
    assert [m.group() for m in ENTITY_TOKEN.finditer("C++ and C# on .NET, acme-api 3.12")] == [
        "C++",
        "and",
        "C#",
        "on",
        ".NET",
        "acme-api",
        "3.12",
    ]


def test_no_other_module_writes_the_plural_rule() -> None:
    """The plural rule lives once: no other core module strips an "ies" ending itself."""
    core = Path(memvault.__file__).parent
    offenders = []
    for path in core.rglob("*.py"):
        if path.name == "text_tokens.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value == "ies":
                offenders.append(str(path.relative_to(core)))
    assert offenders == []
