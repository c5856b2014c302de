"""Which memory says a current fact: the strict reading that puts a memory first."""

from __future__ import annotations

from memvault.recall.currency import Currency


def _currency() -> Currency:
    fact = {
        "id": "t1",
        "subject_id": "ada",
        "predicate": "works_at",
        "object": "Tyrell Systems",
        "object_id": "tyrell",
        "source_block": "b_source",
        "status": "active",
        "invalid_at": None,
        "expired_at": None,
        "superseded_by": None,
    }
    return Currency(("works_at",), ["ada"], entity_facts=[fact])


def test_the_source_of_the_current_fact_answers() -> None:
    assert _currency().answers("b_source", "anything at all", {"ada"})


def test_a_sentence_naming_the_subject_and_the_object_answers() -> None:
    text = "Long day. Ada Lovelace started at Tyrell Systems this week."
    assert _currency().answers("b_other", text, {"ada", "lovelace"})


def test_the_object_in_a_sentence_without_the_subject_does_not() -> None:
    note = "Ada moved the workout to the morning. The invoice goes to Tyrell Systems."
    currency = _currency()
    assert currency.states_current("b_note", note)  # the loose reading: a boost only
    assert not currency.answers("b_note", note, {"ada", "lovelace"})
