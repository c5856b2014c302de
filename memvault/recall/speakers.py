"""Who a conversation turn is about: its speaker, not the person it greets.

A block written as ``Speaker: text`` is said by that person, so for the entity boost it
counts as a mention of the speaker (the offline extractor does not see the prefix as a
name). A name the turn only addresses — "Hey Caroline!", "Oh Caroline, knitting!" — is the
listener, not the subject: that mention is not counted. "What did Caroline say about
climbing?" then favours Caroline's turns over the other speaker's greetings to her.

A speaker the extractor never made an entity of (a name that only ever appears as the
prefix, or one typed in lower case, "elise: ...") is still the person a question names:
:func:`said_by` keeps, per speaker, the blocks they said, and a query that names a speaker
(the whole name or its first word) favours those blocks as it would an entity's.

The people a query names are *who* it asks about, which the boost above answers; they are
not *what* it asks. Left in the text the query's vector is made of, a name pulls that vector
toward every short turn that names the person ("Hey Kate!", "What about you, Kate?") and
away from the turn that answers. So the vector is made of the query without them
(:func:`without_people`); keywords keep every word.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import numpy as np

from memvault.recall.entities import EntityMatcher
from memvault.recall.text import STOPWORDS, words

#: "Name: " (up to three capitalized words) at the start of a block.
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")
_GREETING = r"(?:hey|hi|hello|oh|aw|wow|thanks|thank you|dear|yes|no|ok|okay|congrats|congratulations|well|good morning|good night|good evening)"  # fmt: skip
#: A name addressed at the start of a sentence: "Hey Caroline!", "Caroline, ...", "Oh Caroline!"
_VOCATIVE = re.compile(
    rf"(?:^|(?<=[.!?]\s))(?:{_GREETING}[,!]?\s+)?([A-Z][\w'-]*)(?=\s*[!,?])", re.IGNORECASE
)


#: "name: " at the start of a block in any case (up to three words): who said it, for
#: :func:`said_by`; a prefix counts once two blocks or more carry it.
_ANY_SPEAKER = re.compile(r"^\s*([^\W\d_][\w'.-]*(?: [^\W\d_][\w'.-]*){0,2}):\s")


def speaker(text: str) -> str | None:
    """The name before the colon of a ``Speaker: text`` block, if any."""
    m = _SPEAKER.match(text)
    return m.group(1) if m else None


def addressed(text: str) -> list[str]:
    """The names ``text`` (after any speaker prefix) only addresses, lower case."""
    body = _SPEAKER.sub("", text, count=1)
    found = [m.group(1).lower() for m in _VOCATIVE.finditer(body) if m.group(1)[:1].isupper()]
    # a name also used in the text's body (not as an address) is still a mention
    return [n for n in found if words(body).count(n) <= found.count(n)]


def _person(matcher: EntityMatcher, name: str) -> str | None:
    key = tuple(words(name))
    eid = matcher.names.get(key)
    if eid is None and len(key) == 1:
        eid = matcher.first_names.get(key[0])
    return eid


def speaker_mentions(
    mentions: dict[str, np.ndarray], texts: Sequence[str], matcher: EntityMatcher
) -> dict[str, np.ndarray]:
    """``mentions`` (entity id -> rows) with speakers added and mere addressees removed."""
    add: dict[str, set[int]] = {}
    drop: dict[str, set[int]] = {}
    for row, text in enumerate(texts):
        if not text or (":" not in text[:60] and "!" not in text and "," not in text):
            continue
        who = speaker(text)
        if who and (eid := _person(matcher, who)):
            add.setdefault(eid, set()).add(row)
        for name in addressed(text):
            if (eid := _person(matcher, name)) and eid != (who and _person(matcher, who)):
                drop.setdefault(eid, set()).add(row)
    if not add and not drop:
        return mentions
    out: dict[str, np.ndarray] = {}
    for eid in mentions.keys() | add.keys():
        rows = set(mentions.get(eid, np.zeros(0, dtype=np.int64)).tolist())
        rows = (rows - drop.get(eid, set())) | add.get(eid, set())
        if rows:
            out[eid] = np.asarray(sorted(rows), dtype=np.int64)
    return out


def said_by(texts: Sequence[str]) -> dict[tuple[str, ...], np.ndarray]:
    """Per speaker (the lower-case words of the name before the colon, any case), the rows
    of ``texts`` they said; a prefix on a single block is no speaker ("Note: ...")."""
    rows: dict[tuple[str, ...], list[int]] = {}
    for row, text in enumerate(texts):
        if text and (m := _ANY_SPEAKER.match(text[:80])):
            key = tuple(words(m.group(1)))
            if key and not (len(key) == 1 and key[0] in STOPWORDS):
                rows.setdefault(key, []).append(row)
    return {k: np.asarray(v, dtype=np.int64) for k, v in rows.items() if len(v) >= 2}


def speakers_named(query: str, speakers: Collection[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The speakers ``query`` names: their whole name, or its first word (three letters or
    more) written with a capital ("What did Fahim say" names the speaker "Fahim Khan")."""
    tokens = words(query)
    text = f" {' '.join(tokens)} "
    capitalized = {w.strip(".,;:!?'\"()").removesuffix("'s").lower() for w in query.split() if w[:1].isupper()}  # fmt: skip
    return [
        key
        for key in speakers
        if f" {' '.join(key)} " in text
        or (len(key) > 1 and len(key[0]) >= 3 and key[0] in capitalized and key[0] in tokens)
    ]


def person_words(matcher: EntityMatcher, speakers: Collection[tuple[str, ...]]) -> frozenset[str]:
    """The lower-case words that name a person in this store: the speakers' names, one-word
    names of person entities and the first names of people."""
    found = {w for key in speakers for w in key}
    found.update(matcher.first_names)
    found.update(
        key[0]
        for key, eid in matcher.names.items()
        if len(key) == 1 and (e := matcher.by_id.get(eid)) is not None and e.entity_type == "person"
    )
    return frozenset(w for w in found if w not in STOPWORDS)


def without_people(query: str, people: Collection[str]) -> str:
    """``query`` without the capitalized words that name a person of ``people`` (lower-case
    name words, see :func:`person_words`); the query itself when nothing but stop words
    would be left ("Who is Kate?")."""
    kept = [w for w in query.split() if not (w[:1].isupper() and _name_word(w) in people)]
    if len(kept) == len(query.split()) or not any(
        t not in STOPWORDS for t in words(" ".join(kept))
    ):
        return query
    return " ".join(kept)


#: What may surround a name in a query: punctuation and quotes ("(Kate)", "Kate?").
_EDGES = ".,;:!?'\"()"


def _name_word(word: str) -> str:
    """A query word as a name, lower case: "Kate's" and "Kate’s?" are "kate"."""
    return word.replace("’", "'").strip(_EDGES).removesuffix("'s").lower()
