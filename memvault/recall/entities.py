"""Which entities a query names: entity names and aliases found in its words.

Names are matched as whole word sequences, longest first, without overlap. When
several active entities share a name, the one mentioned most wins (the same
name is almost always the same thing the owner talks about). A capitalized
first name alone ("where does Ada work") names the most-mentioned person with
that first name. The words of the matched names are taken out of the query
before its intent is classified.

The owner (the person mentioned most) is implied: a question about where
they work or live, or about their preferences, names them even when it does
not say their name, and "how does Ada know Sam" is about Sam. A question that
names a speaker no entity stands for (a name seen only before the colon of
``Name: text`` turns) is about that speaker, not the owner.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import polars as pl

from memvault.recall.text import STOPWORDS, words
from memvault.store import Store
from memvault.store.queries.entities import active_entities_with_mentions

#: Longest entity name, in words, that is looked for.
MAX_NAME_WORDS = 8


@dataclass
class NamedEntity:
    id: str
    name: str
    entity_type: str


@dataclass
class EntityMatch:
    """The entities a query names and the query's words without them."""

    entities: list[NamedEntity] = field(default_factory=list)
    rest: str = ""

    @property
    def ids(self) -> list[str]:
        return sorted({e.id for e in self.entities})


class EntityMatcher:
    """Entity names (and aliases) to the entity each most likely means."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.by_id: dict[str, NamedEntity] = {}
        best: dict[tuple[str, ...], tuple[int, str]] = {}
        firsts: dict[str, tuple[int, str]] = {}
        for row in frame.iter_rows(named=True):
            eid, mentions = str(row["id"]), int(row["mentions"] or 0)
            self.by_id[eid] = NamedEntity(eid, str(row["name"]), str(row["entity_type"]))
            names = [str(row["name"]), *json.loads(row["aliases"] or "[]")]
            for name in names:
                key = tuple(words(name))
                if not key or len(key) > MAX_NAME_WORDS or (len(key) == 1 and key[0] in STOPWORDS):
                    continue
                if key not in best or (mentions, eid) > best[key]:
                    best[key] = (mentions, eid)
            if row["entity_type"] == "person":
                first = words(str(row["name"]))[:1]
                if (
                    first
                    and first[0] not in STOPWORDS
                    and (first[0] not in firsts or (mentions, eid) > firsts[first[0]])
                ):
                    firsts[first[0]] = (mentions, eid)
        self.names = {k: eid for k, (_, eid) in best.items()}
        people = frame.filter(pl.col("entity_type") == "person").sort(
            ["mentions", "id"], descending=True
        )
        #: The owner: the person mentioned most (the memory is theirs).
        self.owner: str | None = str(people["id"][0]) if people.height else None
        self.first_names = {k: eid for k, (_, eid) in firsts.items()}

    @classmethod
    def load(cls, store: Store) -> EntityMatcher:
        return cls(active_entities_with_mentions(store))

    def resolve(self, name: str) -> NamedEntity | None:
        """The entity a name alone means, as a question naming it would: a name or alias in
        any case ("ada lovelace"), or a person's first name ("Ada", "ada"); the most
        mentioned of those sharing it."""
        key = tuple(words(name))
        eid = self.names.get(key)
        if eid is None and len(key) == 1:
            eid = self.first_names.get(key[0])
        return self.by_id.get(eid) if eid is not None else None

    def match(self, query: str) -> EntityMatch:
        """The entities ``query`` names, longest names first."""
        raw = query.split()
        tokens = words(query)
        capitalized = {w.lower().strip(".,;:!?'\"()") for w in raw if w[:1].isupper()}
        capitalized |= {c.removesuffix("'s") for c in capitalized}
        found: list[NamedEntity] = []
        used = [False] * len(tokens)
        for size in range(min(MAX_NAME_WORDS, len(tokens)), 0, -1):
            for start in range(len(tokens) - size + 1):
                if any(used[start : start + size]):
                    continue
                eid = self.names.get(tuple(tokens[start : start + size]))
                if eid is None and size == 1 and tokens[start] in capitalized:
                    eid = self.first_names.get(tokens[start])
                if eid is not None:
                    found.append(self.by_id[eid])
                    used[start : start + size] = [True] * size
        rest = " ".join(t for t, u in zip(tokens, used, strict=True) if not u)
        unique = list({e.id: e for e in found}.values())
        return EntityMatch(unique, rest)


#: Intents about the owner themselves: without a named entity they mean the owner.
OWNER_INTENTS = frozenset({"employer_lookup", "location_lookup", "preference_lookup"})


def resolve_owner(
    match: EntityMatch, intent: str | None, owner: str | None, *, speaker_named: bool = False
) -> list[str]:
    """The entity ids of the query's signature, the owner implied or dropped as the demo asks.
    ``speaker_named``: the query names a speaker no entity stands for ("what food does elise
    like?"); then it is about them, and the owner is not implied."""
    ids = match.ids
    if owner is None:
        return ids
    if len(ids) > 1 and owner in ids:
        return [i for i in ids if i != owner]
    if not ids and intent in OWNER_INTENTS and not speaker_named:
        return [owner]
    return ids
