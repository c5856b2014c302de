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
3. of those, the latest (by when it was said) is current: it ranks first; every older one
   whose value differs is marked ``older`` with ``superseded_by`` (the current memory's id)
   and ranks at ``STALE_FACTOR`` of its score below it. An older memory that says the same
   value is a restatement, left as it is.

Where the night has recorded the slot's facts (triples with ``valid_at``/``invalid_at``, see
:mod:`memvault.recall.currency`), the facts decide instead of the text: the block a current
fact was read from is current, a block whose facts were all superseded is older. A slot's
values are read from plain words: no model, nothing tuned to one data set's phrasing.
"""

from __future__ import annotations

import datetime as dt
import re
import weakref
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from memvault.recall.currency import STALE_FACTOR, Currency
from memvault.recall.entities import EntityMatcher
from memvault.recall.result import RecallHit
from memvault.recall.text import words

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
_WORDS = re.compile(r"[\w']+")
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
            folded = set(_WORDS.findall(sentence.casefold()))
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
         names=EDITORS),
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


def apply(
    slot: Slot,
    hits: list[RecallHit],
    about_subject: Collection[str],
    subject_words: Collection[str],
    currency: Currency | None = None,
) -> list[RecallHit]:
    """``hits`` with the slot's current memory lifted first and the older ones marked and
    lowered (see the module's docstring). ``about_subject``: the hits that mention the
    subject or were said by it; ``subject_words``: the words of its name."""
    by_facts = _by_facts(slot, hits, currency)
    if by_facts is not None:
        latest, older = by_facts
    else:
        statements = [
            Statement(h.block_id, slot.value(h.text, subject_words), h.created_at)
            for h in hits
            if h.block_id in about_subject and h.kind != "insight"
        ]
        statements = [s for s in statements if s.value is not None and s.said_at is not None]
        if not statements:
            return hits
        statements.sort(key=lambda s: (s.said_at, s.block_id))
        current = statements[-1]
        latest = current.block_id
        older = {s.block_id for s in statements[:-1] if s.value != current.value}
    return _reranked(hits, latest, older)


def _by_facts(
    slot: Slot, hits: Sequence[RecallHit], currency: Currency | None
) -> tuple[str, set[str]] | None:
    """(the current block, the older blocks) as the night's facts of the slot say, or None
    when no fact of the slot's predicates is recorded for the subject."""
    if currency is None or not slot.predicates:
        return None
    facts = [f for f in currency.entity_facts if f["predicate"] in slot.predicates]
    current = [f for f in currency.current_facts if f["predicate"] in slot.predicates]
    sources = [str(f["source_block"]) for f in current if f["source_block"]]
    if not facts or not sources:
        return None
    shown = {h.block_id for h in hits}
    latest = next((s for s in sources if s in shown), sources[0])
    older = {h.block_id for h in hits if h.superseded_since is not None}
    return latest, older


def _reranked(hits: list[RecallHit], latest: str, older: set[str]) -> list[RecallHit]:
    others = [h.score for h in hits if h.block_id != latest]
    top = max(others, default=0.0)
    out = []
    for hit in hits:
        if hit.block_id == latest and hit.score <= top:
            hit = hit.model_copy(update={"score": round(top + MARGIN, 6)})
        elif hit.block_id in older:
            lowered = hit.score * STALE_FACTOR if hit.score > 0 else hit.score
            hit = hit.model_copy(
                update={"score": round(lowered, 6), "older": True, "superseded_by": latest}
            )
        out.append(hit)
    return out
