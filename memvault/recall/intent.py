"""What a recall query asks for: a small rule-based classifier into the recall intents.

The intents are the ones the knowledge-gap detector and the daily profile count
(``employer_lookup`` … ``concept_lookup``). Rules are tried in order on the
query with the entity names it names taken out (so an entity called "Status
Board" does not make every question about it a status question); the first rule
that matches wins, and a query no rule matches has no intent (``None``).
"""

from __future__ import annotations

import re

#: The intents a recall can have (the demo's recall queries use the same labels).
INTENTS: tuple[str, ...] = (
    "employer_lookup",
    "location_lookup",
    "project_status",
    "person_lookup",
    "dependency_lookup",
    "preference_lookup",
    "howto",
    "tool_usage",
    "concept_lookup",
)

#: (intent, pattern) in the order they are tried; patterns see the lower-cased query.
RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (intent, re.compile(pattern))
    for intent, pattern in (
        ("employer_lookup", r"\b(employer|company|employed|works? (at|for)|job|for a living|occupation|profession)\b|\bwhere does (\S+ )?work\b"),
        ("location_lookup", r"\b(live|lives|living|city|based|located|home town|hometown|moved to)\b"),
        ("dependency_lookup", r"\b(depend\w*|requires?|services does|needs?)\b"),
        ("preference_lookup", r"\b(prefer\w*|like|likes|style|taste)\b"),
        ("project_status", r"\b(status|still active|progress|where are we|state of|how far)\b"),
        ("person_lookup", r"\b(who is|who's|who was|know about|knows?|contact|met)\b"),
        ("tool_usage", r"\b(use|used|using|setup|set up|configure\w*|install\w*)\b"),
        ("howto", r"\b(how (do|to|can|should) (i|we|you)?|deploy\w*|steps|release|runbook|procedure)\b"),
        ("concept_lookup", r"\b(decide\w*|decision|notes?|summary|summari[sz]e|what is|what are|explain|discussion|about)\b"),
    )
)  # fmt: skip


def classify_intent(text: str) -> str | None:
    """The intent of a query (entity names removed first), or None when no rule matches."""
    lowered = " ".join(text.lower().split())
    for intent, pattern in RULES:
        if pattern.search(lowered):
            return intent
    return None
