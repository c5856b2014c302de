"""Currency by slot: for a question about an attribute that changes, the latest memory first.

Some things about a person hold one value at a time and change: the editor they use, the
city they live in, their employer, their job. "What editor does Ada use" has two memories
that answer it, July's "Ada uses Neovim" and November's "Ada switched to VS Code"; the
search scores them alike, or July's higher (it has the words "uses"). So a question that asks
about such a *slot* (:data:`SLOTS`: cue words in the question) for a subject (the entity it
names, or the owner) is answered this way:

1. the blocks that mention the subject and a known value (an editor's name, a place, an
   organization) are made candidates, whatever the words of the question
   (:meth:`Slot.value_entities`, :meth:`~memvault.recall.index.SearchIndex.co_mentioning`);
2. a memory states the slot's value when it mentions the subject (or the subject said it)
   and the slot's rule reads a value from its text (:meth:`Slot.value`);
3. of those, the latest (by when it was said) gives the current value: the memories that
   state it come first, in their own order (the change itself, "switched to VS Code", and
   any restatement of it); every one that states another value is marked ``older`` with
   ``superseded_by`` (the first current memory's id) and ranks at ``STALE_FACTOR`` of its
   score below them.

Where the night has recorded a change of the slot (a fact of its predicates invalidated by a
newer one: the editor preference "uses Neovim" retired by "switched to VS Code"), the facts
give the current value instead of the latest sentence (:func:`timeline_value`), and a block
a fact was read from states that fact's value. A slot's values are read from plain words: no
model, nothing tuned to one data set's phrasing.
"""

from __future__ import annotations

import datetime as dt
import re
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memvault.recall.currency import STALE_FACTOR
from memvault.recall.entities import EntityMatcher
from memvault.recall.result import RecallHit
from memvault.recall.text import words
from memvault.text_tokens import folded_words

#: How far above the best other memory the current one of a slot is lifted.
MARGIN = 1e-3

EDITORS = (
    "Vim", "Neovim", "Emacs", "VS Code", "Visual Studio Code", "VSCode", "Visual Studio",
    "IntelliJ", "IntelliJ IDEA", "PyCharm", "WebStorm", "GoLand", "CLion", "Rider", "Xcode",
    "Android Studio", "Eclipse", "NetBeans", "Sublime Text", "Sublime", "Atom", "Helix", "Zed",
    "Nano", "Kate", "Cursor", "Windsurf", "Notepad++", "TextMate", "BBEdit", "Spyder",
)  # fmt: skip
#: Spellings of one editor, folded to one value.
_SAME_EDITOR = {"visual studio code": "vs code", "vscode": "vs code", "intellij idea": "intellij",
                "sublime text": "sublime"}  # fmt: skip
_EDITOR_NAMES = "|".join(re.escape(e) for e in sorted(EDITORS, key=len, reverse=True))
_EDITOR_RE = re.compile(rf"(?<![\w+])({_EDITOR_NAMES})(?![\w+])", re.IGNORECASE)
#: A capitalized name of up to three words (a city, a company) after one of the cue words.
_NAME = r"([A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*){0,2})"
_HOME_CUE = re.compile(r"\b(live[sd]?|living|moved|move|moving|relocat\w+|home|based|settled|apartment|flat|house)\b", re.I)  # fmt: skip
_HOME_VALUE = re.compile(r"\b(?:in|to)\s+" + _NAME)
_WORK_CUE = re.compile(r"\b(work(?:s|ed|ing)?|job|joined|join|hired|employer|company|started)\b", re.I)  # fmt: skip
_WORK_VALUE = re.compile(r"\b(?:at|for|joined|join)\s+" + _NAME)
_ROLE_BEFORE = r"as|i'm|i am|am now|is now|now|became|become|promoted to|working as"
_ROLE_VALUE = re.compile(rf"\b(?:{_ROLE_BEFORE})\s+(?:a|an|the)\s+([a-z]+(?:\s+[a-z]+)?)", re.I)
_ROLE_CUE = re.compile(r"\b(work|works|worked|job|quit|hired|promoted|became|career|role|position)\b", re.I)  # fmt: skip
#: Words that begin a sentence or name a time, never a city or a company.
_NOT_NAMES = frozenset(
    [
        "I",
        "We",
        "The",
        "A",
        "An",
        "My",
        "Our",
        "This",
        "That",
        "It",
        "He",
        "She",
        "They",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ]
)
#: A speaker's name before the text ("Ada: I moved ..."): who said it, not what it says.
_SPEAKER = re.compile(r"^\s*[\w .'-]{1,40}:\s")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "we", "we're", "we've", "our", "us"})
_ROLE_STOP = frozenset({"lot", "bit", "few", "good", "great", "new", "big", "little", "while", "week", "day", "year", "month", "time"})  # fmt: skip


#: Per entity matcher (one version of the entities), each slot's value entities.
_VALUES: weakref.WeakKeyDictionary[EntityMatcher, dict[str, list[str]]] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True)
class Slot:
    """An attribute with one value at a time: how a question asks about it, how a memory's
    text states it, and the facts (predicates) the night records for it."""

    name: str
    question: re.Pattern[str]
    read: Callable[[str], str | None]
    predicates: tuple[str, ...] = ()
    #: The kind of entity its values are (an organization, a place), for finding candidates.
    entity_types: tuple[str, ...] = ()
    #: Value names looked up as entities, for finding candidates.
    names: tuple[str, ...] = ()
    #: Other predicates whose facts can state its value (read from their object: a
    #: preference "switched to VS Code", a tool used).
    fact_predicates: tuple[str, ...] = ()

    @property
    def all_predicates(self) -> tuple[str, ...]:
        return self.predicates + self.fact_predicates

    def value(self, text: str, subject_words: Collection[str] = ()) -> str | None:
        """The value ``text`` states for this slot about the subject (folded), or None: read
        from its last sentence that names the subject (``subject_words``: the words of its
        name, lower case) or speaks in the first person ("I live in Porto", said by the
        subject), not from "my brother moved to Denver"."""
        body = text
        if (said := _SPEAKER.match(text)) and set(words(said.group())) <= set(subject_words):
            body = text[said.end() :]  # said by the subject: its name is no statement
        found = None
        for sentence in _SENTENCE_END.split(body):
            folded = set(folded_words(sentence))
            if folded & _FIRST_PERSON or folded & set(subject_words):
                found = self.read(sentence) or found
        return found

    def value_entities(self, matcher: EntityMatcher) -> list[str]:
        """The entities that can be a value of this slot: those named by its value names, or
        of its entity types (worked out once per version of the entities)."""
        known = _VALUES.setdefault(matcher, {})
        if (found := known.get(self.name)) is None:
            ids = {matcher.names.get(tuple(words(n))) for n in self.names}
            if self.entity_types:
                ids |= {e.id for e in matcher.by_id.values() if e.entity_type in self.entity_types}
            found = known[self.name] = sorted(f for f in ids if f)
        return found


def _editor(text: str) -> str | None:
    found = [m.group(1).casefold() for m in _EDITOR_RE.finditer(text)]
    if not found:
        return None
    # "switched from Neovim to VS Code": the value is the one switched to
    last = found[-1]
    return _SAME_EDITOR.get(last, last)


def _named(cue: re.Pattern[str], value: re.Pattern[str]) -> Callable[[str], str | None]:
    def read(text: str) -> str | None:
        if not cue.search(text):
            return None
        names = [m.group(1) for m in value.finditer(text)]
        names = [n.rstrip(".'-") for n in names if n.split()[0] not in _NOT_NAMES]
        return names[-1].casefold() if names else None

    return read


def _role(text: str) -> str | None:
    if not _ROLE_CUE.search(text):
        return None
    found = [m.group(1).casefold() for m in _ROLE_VALUE.finditer(text)]
    found = [f for f in found if f.split()[0] not in _ROLE_STOP]
    return found[-1].split()[0] if found else None


SLOTS: tuple[Slot, ...] = (
    Slot("role", re.compile(r"\b(for a living|job title|occupation|profession|what is \S+ job|what job|role|position)\b", re.I),
         _role, predicates=("has_role",)),
    Slot("editor", re.compile(r"\b(editor|ide|code in|coding in|write code in)\b", re.I), _editor,
         names=EDITORS, fact_predicates=("prefers", "uses_tool")),
    Slot("home", re.compile(r"\b(live|lives|lived|reside\w*|home town|hometown|based)\b|\bliving (in|at|near)\b", re.I),
         _named(_HOME_CUE, _HOME_VALUE), predicates=("lives_in",), entity_types=("place",)),
    Slot("employer", re.compile(r"\b(employer|company|works? (at|for)|employed|job at)\b|\bwhere (does|do|did) (\S+ )?work\b", re.I),
         _named(_WORK_CUE, _WORK_VALUE), predicates=("works_at",), entity_types=("organization",)),
)  # fmt: skip


def slot_of(question: str) -> Slot | None:
    """The slot a question asks about (the first whose cue it holds), or None."""
    for slot in SLOTS:
        if slot.question.search(question):
            return slot
    return None


@dataclass
class Statement:
    block_id: str
    value: str | None
    said_at: dt.datetime | None


#: The columns of a slot fact (see :func:`timeline_value`).
FACT_COLUMNS = "predicate, object, valid_at, invalid_at, expired_at, status, source_block"


def apply(
    slot: Slot,
    hits: list[RecallHit],
    about_subject: Collection[str],
    subject_words: Collection[str],
    facts: Sequence[Mapping[str, Any]] = (),
) -> list[RecallHit]:
    """``hits`` with the memories stating the slot's current value lifted first and those
    stating another one marked and lowered (see the module's docstring).

    ``about_subject``: the hits that mention the subject or were said by it;
    ``subject_words``: the words of its name; ``facts``: the subject's facts of the slot's
    predicates (:data:`FACT_COLUMNS`), when it is an entity."""
    by_source = {str(f["source_block"]): v for f in facts if f["source_block"] and (v := fact_value(slot, f))}  # fmt: skip
    statements = []
    for hit in hits:
        if hit.kind == "insight" or hit.created_at is None:
            continue
        value = by_source.get(hit.block_id)
        if value is None and hit.block_id in about_subject:
            value = slot.value(hit.text, subject_words)
        if value is not None:
            statements.append(Statement(hit.block_id, value, hit.created_at))
    if not statements:
        return hits
    statements.sort(key=lambda s: (s.said_at, s.block_id))
    now = timeline_value(slot, facts) or statements[-1].value
    current = {s.block_id for s in statements if s.value == now}
    older = {s.block_id for s in statements} - current
    return _reranked(hits, current, older)


def fact_value(slot: Slot, fact: Mapping[str, Any]) -> str | None:
    """The slot's value a fact states: its object as the slot reads it ("switched to VS Code
    for the debugger": vs code), else the object itself for a predicate of the slot's own."""
    obj = str(fact["object"] or "")
    value = slot.read(obj)
    if value is None and fact["predicate"] in slot.predicates:
        value = obj.strip().casefold() or None
    return value


def timeline_value(slot: Slot, facts: Sequence[Mapping[str, Any]]) -> str | None:
    """The slot's current value as the night's facts tell it, or None when they tell no
    change: among the predicates with a superseded fact of the slot (a timeline the night
    wrote), the value of the current fact that became true last."""
    stated = [(f, v) for f in facts if (v := fact_value(slot, f))]
    changed = {f["predicate"] for f, _ in stated if f["invalid_at"] is not None and f["status"] == "superseded"}  # fmt: skip
    holding = [
        (f["valid_at"], v)
        for f, v in stated
        if f["predicate"] in changed
        and f["status"] in ("active", "merged")
        and f["invalid_at"] is None
        and f["expired_at"] is None
        and f["valid_at"] is not None
    ]
    return max(holding)[1] if holding else None


def _reranked(hits: list[RecallHit], current: set[str], older: set[str]) -> list[RecallHit]:
    """The ``current`` memories first, in their own order (each lifted alike), the ``older``
    ones marked (``superseded_by`` the first current one) and lowered."""
    mine = [h.score for h in hits if h.block_id in current]
    others = [h.score for h in hits if h.block_id not in current]
    lift = 0.0
    if mine and others and min(mine) <= max(others):
        lift = max(others) - min(mine) + MARGIN
    lifted = [
        h.model_copy(update={"score": round(h.score + lift, 6)}) if h.block_id in current else h
        for h in hits
    ]
    lead = min((h for h in lifted if h.block_id in current), key=lambda h: (-h.score, h.block_id), default=None)  # fmt: skip
    if lead is None:
        return lifted
    out = []
    for hit in lifted:
        if hit.block_id in older:
            lowered = hit.score * STALE_FACTOR if hit.score > 0 else hit.score
            hit = hit.model_copy(
                update={"score": round(lowered, 6), "older": True, "superseded_by": lead.block_id}
            )
        out.append(hit)
    return out
