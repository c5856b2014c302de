"""The ``asof`` tool's answer: what held for a subject named as recall names it.

An agent names people as the owner does: "Ada", not the entity id or "Ada Lovelace". The
subject is read the way recall reads a name in a question (:meth:`EntityMatcher.resolve`: a
name or alias in any case, a person's first name), else as ``memvault asof`` reads it (an id,
a canonical name, an alias). Every answer lists the kinds of fact (predicates) the subject
has at that time, so the agent can ask for one; a predicate nobody has is refused with the
list, not answered with nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from memvault.errors import MemvaultError
from memvault.recall.entities import EntityMatcher
from memvault.store import Store
from memvault.store.queries.triples import held_predicates
from memvault.temporal.asof import SubjectNotFoundError, asof, resolve_subject
from memvault.temporal.grounding import Grounding


class UnknownPredicateError(MemvaultError):
    """A predicate no fact in memory has and no definition names."""


def subject_of(store: Store, matcher: EntityMatcher, subject: str) -> tuple[str, str]:
    """The (id, name) of the entity ``subject`` names, as recall would read it."""
    named = matcher.by_id.get(subject) or matcher.resolve(subject)
    if named is not None:
        return named.id, named.name
    try:
        return resolve_subject(store, subject)
    except SubjectNotFoundError:
        raise SubjectNotFoundError(
            f"nobody and nothing in memory is named {subject!r}; give a name as the owner "
            "says it (recall lists who a question names under entity_names)"
        ) from None


def known_predicates(store: Store) -> list[str]:
    """Every kind of fact memory defines or holds."""
    return sorted(held_predicates(store) | set(Grounding.load().predicates))


def answer_asof(
    store: Store,
    matcher: EntityMatcher,
    subject: str,
    at: str | None = None,
    predicate: str | None = None,
    known_at: str | None = None,
) -> dict[str, Any]:
    """What held for ``subject`` at ``at`` (default now): its facts (of ``predicate`` only,
    when given) and, whatever was asked, the predicates it has then with their counts."""
    subject_id, name = subject_of(store, matcher, subject)
    wanted = predicate.strip() if predicate is not None else None
    if wanted is not None:
        known = known_predicates(store)
        if wanted not in known:
            raise UnknownPredicateError(
                f"no kind of fact is called {wanted!r}; the kinds are {', '.join(known)}"
            )
    facts = asof(store, subject_id, None, at, known_at=known_at)
    counts = Counter(f.predicate for f in facts)
    chosen = [f for f in facts if wanted is None or f.predicate == wanted]
    return {
        "subject": name,
        "subject_id": subject_id,
        "at": at,
        "predicates": dict(sorted(counts.items())),
        "facts": [f.model_dump(mode="json") for f in chosen],
    }
