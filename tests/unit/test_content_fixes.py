"""The text repairs of content normalization: each defect, and a second pass that changes nothing."""

from __future__ import annotations

import pytest

from memvault.dream.normalize_content import fix_text

CASES = [
    ("cafÃ© â€œquotedâ€\x9d", "café “quoted”", {"mojibake"}),
    ("ÃƒÂ©tÃƒÂ©", "été", {"mojibake"}),  # encoded twice
    ("\ud83d\ude00 and \ud800 alone", "😀 and \ufffd alone", {"surrogates"}),
    ("a\x00b\x07c\r\nd\ufeff", "abc\nd", {"control_characters"}),
    ("e\u0301cole", "\u00e9cole", {"unicode_form"}),
    ("a    b\t\tc  \n\n\n\nd\u00a0e ", "a b c\n\nd e", {"whitespace"}),
    (
        "Code:\n    indented    line\n```\nx    = 1\n```",
        "Code:\n    indented line\n```\nx    = 1\n```",
        {"whitespace"},
    ),  # indentation and fenced code keep their spaces
]
CLEAN = ["naïve café, déjà vu — fine", "Ça va? à é", "Â alone", "plain ascii"]


@pytest.mark.parametrize(("text", "fixed", "kinds"), CASES)
def test_each_defect_is_repaired_once(text: str, fixed: str, kinds: set[str]) -> None:
    assert fix_text(text) == (fixed, kinds)
    assert fix_text(fixed) == (fixed, set())


@pytest.mark.parametrize("text", CLEAN)
def test_correct_text_is_left_alone(text: str) -> None:
    assert fix_text(text) == (text, set())


def test_a_fact_value_becomes_one_line() -> None:
    assert fix_text("  Acme \n  Corp ", single_line=True) == ("Acme Corp", {"whitespace"})
