"""The recall intent classifier and the keyword index, without a store."""

from __future__ import annotations

import polars as pl
import pytest

from memvault.recall.entities import EntityMatcher, resolve_owner
from memvault.recall.intent import INTENTS, classify_intent
from memvault.recall.keywords import KeywordIndex
from memvault_demo.vocabulary import PREFERENCE_TOPICS, RECALL_QUERIES

#: Entity names that contain the words the rules look for.
TRICKY = ("Status Board", "Release Notes", "Who Knows", "Deploy Bot")


def _matcher() -> EntityMatcher:
    names = [("ent_ada", "Ada Lovelace", "person", 50)] + [
        (f"ent_{k}", name, "project", 1) for k, name in enumerate(TRICKY)
    ]
    return EntityMatcher(
        pl.DataFrame(
            {
                "id": [n[0] for n in names],
                "name": [n[1] for n in names],
                "entity_type": [n[2] for n in names],
                "aliases": ["[]"] * len(names),
                "mentions": [n[3] for n in names],
            }
        )
    )


@pytest.mark.parametrize("intent", INTENTS)
def test_every_demo_query_gets_its_intent_even_about_tricky_names(intent: str) -> None:
    matcher = _matcher()
    for template in RECALL_QUERIES[intent]:
        for name in TRICKY:
            query = template.format(
                e=name, owner="Ada Lovelace", owner_first="Ada", topic=PREFERENCE_TOPICS[-1]
            )
            match = matcher.match(query)
            got = classify_intent(match.rest)
            assert got == intent, query
            ids = resolve_owner(match, got, matcher.owner)
            expected = ["ent_ada"] if "{e}" not in template else [f"ent_{TRICKY.index(name)}"]
            assert ids == expected, query


def test_a_query_no_rule_matches_has_no_intent() -> None:
    assert classify_intent("ramen") is None


def test_bm25_prefers_the_rarer_word_and_scores_new_documents_alike() -> None:
    ids = pl.Series(["a", "b", "c"])
    texts = pl.Series(["redis cache redis", "the cache layer", "billing service"])
    index = KeywordIndex.build(ids, texts)
    scores = index.score("redis cache")
    assert scores.argmax() == 0 and scores[2] == 0
    later = KeywordIndex.build(pl.Series(["d"]), pl.Series(["redis cache redis"]), index.stats)
    assert later.score("redis cache")[0] == pytest.approx(scores[0])
    assert later.score("kubernetes")[0] == 0


def test_what_someone_does_for_a_living_asks_for_their_work_not_their_home() -> None:
    assert classify_intent("What does Sam do for a living now?") == "employer_lookup"
    assert classify_intent("What is her profession?") == "employer_lookup"
    assert classify_intent("Where is Sam living these days?") == "location_lookup"
