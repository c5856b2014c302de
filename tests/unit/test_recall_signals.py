"""The small signals recall adds to what a block says: who said it, which day, whether it asks."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from memvault.recall.context import is_question, with_questions_lowered
from memvault.recall.dates import days_asked, days_meant
from memvault.recall.index import day_match
from memvault.recall.speakers import said_by, speakers_named, without_people


def test_speakers_are_read_from_the_prefix_in_any_case() -> None:
    texts = [
        "elise: I went hiking.",
        "Fahim Khan: I read Pachinko.",
        "elise: Then we ate.",
        "Note: buy milk",
        "Fahim Khan: And you?",
    ]
    said = said_by(texts)
    assert set(said) == {("elise",), ("fahim", "khan")}  # a prefix on one block is no speaker
    assert said[("elise",)].tolist() == [0, 2]


def test_a_query_names_a_speaker_by_name_or_capitalized_first_name() -> None:
    speakers = [("elise",), ("fahim", "khan")]
    assert speakers_named("Where did Elise go hiking?", speakers) == [("elise",)]
    assert speakers_named("What did Fahim read?", speakers) == [("fahim", "khan")]
    assert speakers_named("what did fahim read?", speakers) == []  # a first name alone: capitalized
    assert speakers_named("What did Fahim Khan read?", speakers) == [("fahim", "khan")]


def test_the_query_vector_is_made_without_the_people_it_names() -> None:
    people = {"kate", "elise", "fahim", "khan"}
    assert without_people("What do Elise and Kate have in common?", people) == "What do and have in common?"  # fmt: skip
    assert without_people("Where did Kate’s sister move?", people) == "Where did sister move?"
    assert without_people("What did Fahim Khan cook?", people) == "What did cook?"
    # a lower-case word is no name; a query of nothing but names and stop words stays whole
    assert without_people("where did kate go", people) == "where did kate go"
    assert without_people("Who is Kate?", people) == "Who is Kate?"
    assert without_people("What did Ada build?", people) == "What did Ada build?"


@pytest.mark.parametrize(
    ("query", "days"),
    [
        ("What did Paola cook on 22.01.2024?", [(2024, 1, 22)]),
        ("naps on January 6 2024", [(2024, 1, 6)]),
        ("on the 17th of January, 2024", [(2024, 1, 17)]),
        ("pasta on 29 Dec 2023", [(2023, 12, 29)]),
        ("on 2024-01-05 and 01/22/2024", [(2024, 1, 5), (2024, 1, 22)]),
        ("what did we do on May 5", [(None, 5, 5)]),
        ("before January 1st, 2024", []),  # a bound, not the day asked
        ("may I ask about 31.02.2024", []),  # no such day
    ],
)
def test_the_days_a_query_names(query: str, days: list[tuple[int | None, int, int]]) -> None:
    assert days_asked(query) == days


def test_a_block_means_the_day_written_and_its_relative_days() -> None:
    said = dt.datetime(2024, 1, 23, 1, 30)
    assert days_meant("Remember the stir fry from yesterday?", said) == {
        dt.date(2024, 1, 23),
        dt.date(2024, 1, 22),
    }
    assert dt.date(2024, 1, 24) in days_meant("We fly tomorrow.", said)


def test_the_day_before_or_after_counts_half() -> None:
    assert day_match(dt.date(2024, 1, 22), (2024, 1, 22)) == 1.0
    assert day_match(dt.date(2024, 1, 23), (2024, 1, 22)) == 0.5
    assert day_match(dt.date(2023, 1, 22), (None, 1, 22)) == 1.0
    assert day_match(dt.date(2024, 1, 25), (2024, 1, 22)) == 0.0


def test_a_question_keeps_part_of_its_score() -> None:
    assert is_question("Melanie: Which race did you run? ")
    assert not is_question("Sam: The trail marathon.")
    total = np.asarray([1.0, 1.0, -0.5])
    lowered = with_questions_lowered(total, np.asarray([True, False, True]))
    assert lowered.tolist() == [0.8, 1.0, -0.5]
