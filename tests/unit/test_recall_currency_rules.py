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


def test_many_facts_are_read_as_one_by_one() -> None:
    """The owner's ten thousand facts are looked up by their first letters, not one by one:
    the same blocks state a current fact, and the same are stale since the same date."""
    import datetime as dt
    import random

    rng = random.Random(3)
    names = ["Tyrell Systems", "Acme", "Straße Nord", "ab", "Zanzibar", "Quill", "Madrid", "Kubernetes"]  # fmt: skip
    facts = []
    for k in range(400):
        current = rng.random() < 0.5
        facts.append({
            "id": f"t{k}", "subject_id": "ada", "predicate": "works_at",
            "object": rng.choice(names) + ("" if rng.random() < 0.7 else f" {k}"),
            "object_id": None, "source_block": f"b{k}" if rng.random() < 0.3 else None,
            "status": "active",
            "invalid_at": None if current else dt.datetime(2025, 1, 1 + k % 28),
            "expired_at": None, "superseded_by": None,
        })  # fmt: skip
    currency = Currency(("works_at",), ["ada"], entity_facts=facts)
    words = [*names, "STRASSE nord", "tyrell", "the", "and", "12", "quill 7.", "Ada"]
    for k in range(300):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        folded = text.casefold()
        current = [f for f in facts if f["invalid_at"] is None]
        expected = any(f["source_block"] == f"b{k}" for f in current) or any(
            len(f["object"]) >= 3 and f["object"].casefold() in folded for f in current
        )
        assert currency.states_current(f"b{k}", text) == expected, text
        stale = [
            f["invalid_at"] for f in facts
            if len(f["object"]) >= 3 and f["object"].casefold() in folded
        ]  # fmt: skip
        want = None if expected or not stale or None in stale else max(stale)
        assert currency.superseded_since(f"x{k}", text) == (
            None if currency.states_current(f"x{k}", text) else want
        ), text
