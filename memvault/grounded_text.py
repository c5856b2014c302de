"""Does a text written by an LLM say only what its sources say?

An LLM that summarizes a memory (a tier digest) or reads meaning into several (a dream
insight) may invent a name, change a number or obey an instruction hidden in the data.
Whatever it writes replaces or joins the owner's memory, so it is checked against the text
it was given before it is stored:

* every **name** (a capitalized word that is not a common word, or a word with a capital
  inside it such as ``EvilCorp``) must appear in the sources, compared case-folded without
  punctuation or a possessive ``'s``;
* every **number or date part** (``2024-03-05`` counts as 2024, 3 and 5; ``1,200`` as 1200)
  must appear in the sources as a number (a month name or a number word up to twenty
  standing for its number);
* it must hold no **instruction-like text** (:data:`INSTRUCTION_PATTERNS`): the marks of a
  prompt injection, which no summary of a person's memory needs.

The check is deliberately simple and errs on the side of refusing: a refused text is
replaced by something extractive (a digest) or dropped (an insight), and counted.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from memvault.extract import STOPWORDS

#: Why a text was refused (the order is the order of the checks).
INSTRUCTIONS = "instructions"
UNSUPPORTED_NAMES = "unsupported_names"
UNSUPPORTED_NUMBERS = "unsupported_numbers"
REASONS: tuple[str, ...] = (INSTRUCTIONS, UNSUPPORTED_NAMES, UNSUPPORTED_NUMBERS)
#: Why a text that stands for several was refused: it lost a name or number one of them held.
LOST_TERMS = "lost_terms"

#: Capitalized words a summary or an insight may open a sentence with although its sources
#: do not hold them (besides :data:`memvault.extract.STOPWORDS`): they name no one.
COMMON_WORDS: frozenset[str] = frozenset(
    [
        "user",
        "owner",
        "person",
        "agent",
        "they",
        "he",
        "she",
        "conversation",
        "session",
        "discussion",
        "discussed",
        "notes",
        "asked",
        "explained",
        "mentioned",
        "decided",
        "plans",
        "planned",
        "planning",
        "working",
        "uses",
        "using",
        "prefers",
        "preferred",
        "likes",
        "wants",
        "needs",
        "said",
        "says",
        "memory",
        "memories",
        "recent",
        "recently",
    ]
)

#: The marks of text that talks to a model instead of about the owner's memory. Kept small
#: on purpose: each one is a phrase no faithful summary or insight has reason to contain.
INSTRUCTION_PATTERNS: tuple[str, ...] = (
    r"\b(?:ignore|forget|override)\b[^.!?\n]{0,40}\b(?:instructions?|prompts?|rules|context)\b",
    r"\bdisregard\b",
    r"\bsystem\s+prompt\b",
    r"\bnew\s+instructions?\b",
    r"\byou\s+(?:must|should|will)\s+now\b",
    r"\byou\s+must\b",
    r"\bjailbreak\b",
    r"(?:^|\n|[.!?]\s*)\s*(?:system|assistant|user|developer)\s*:",
    r"<\s*/?\s*(?:system|assistant|user|memvault-data)\s*>",
    r"\[/?INST\]|<\|im_(?:start|end)\|>",
)
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in INSTRUCTION_PATTERNS), re.IGNORECASE)

_WORD = re.compile(r"[^\W\d_][\w'’.-]*[\w]|[^\W\d_]", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_MONTHS = {
    m: str(k)
    for k, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for m in names
}


#: Number words the sources may spell out where a digest writes digits ("ten" → 10).
_NUMBER_WORDS = {
    w: str(k)
    for k, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000"}


_POSSESSIVE = re.compile(r"'s$")
_WORD_PARTS = re.compile(r"[.'-]")


@functools.lru_cache(maxsize=1 << 16)
def _fold(word: str) -> str:
    """A word compared: NFKC, case-folded, without possessive or edge punctuation (cached: a
    night checks thousands of texts made of the same words)."""
    folded = unicodedata.normalize("NFKC", word).casefold().replace("’", "'")
    folded = _POSSESSIVE.sub("", folded)
    return folded.strip(".'-")


@functools.lru_cache(maxsize=1 << 16)
def _forms(word: str) -> tuple[str, ...]:
    """A word's folded form and its parts (``o'neill`` also as ``o`` and ``neill``)."""
    folded = _fold(word)
    return (folded, *(p for p in _WORD_PARTS.split(folded) if p))


def _parts(number: str) -> list[str]:
    """A number token as the integers it is made of (leading zeros dropped)."""
    return [p.lstrip("0") or "0" for p in re.split(r"[.,:/-]", number) if p]


@dataclass(frozen=True)
class Vocabulary:
    """What the sources say: their words and number parts, folded."""

    words: frozenset[str]
    numbers: frozenset[str]

    @classmethod
    def of(cls, sources: Iterable[str]) -> Vocabulary:
        words: set[str] = set()
        numbers: set[str] = set()
        for text in sources:
            text = unicodedata.normalize("NFKC", text or "")
            for match in _WORD.finditer(text):
                forms = _forms(match.group())
                folded = forms[0]
                words.update(forms)
                if folded in _MONTHS:
                    numbers.add(_MONTHS[folded])
                if folded in _NUMBER_WORDS:
                    numbers.add(_NUMBER_WORDS[folded])
            for match in _NUMBER.finditer(_THOUSANDS.sub("", text)):
                numbers.update(_parts(match.group()))
        return cls(frozenset(words), frozenset(numbers))


def _common(folded: str) -> bool:
    return len(folded) < 2 or folded in STOPWORDS or folded in COMMON_WORDS


def names(text: str) -> list[str]:
    """The words of ``text`` that name something: every capitalized word (a sentence's first
    too) that is not a common word (:data:`COMMON_WORDS`, stop words)."""
    return [
        word
        for word in _WORD.findall(unicodedata.normalize("NFKC", text))
        if _names_something(word)
    ]


@functools.lru_cache(maxsize=1 << 16)
def _names_something(word: str) -> bool:
    return any(c.isupper() for c in word) and not _common(_fold(word))


def numbers(text: str) -> list[str]:
    """The number tokens of ``text`` (dates and times included), as written."""
    return _NUMBER.findall(_THOUSANDS.sub("", unicodedata.normalize("NFKC", text)))


def key_terms(text: str) -> frozenset[str]:
    """What a faithful digest of ``text`` keeps: its names (folded, as :func:`names` finds them)
    and its number and date parts (``#`` and the integer, a month name counting as its number).
    The reverse of :func:`check`: coverage of the original, not support by it."""
    found = {_fold(w) for w in names(text)}
    out = {w for w in found if w not in _MONTHS}
    out.update(f"#{_MONTHS[w]}" for w in found if w in _MONTHS)
    out.update(f"#{p}" for n in numbers(text) for p in _parts(n))
    return frozenset(out)


def merged_problem(text: str, sources: Iterable[str]) -> str | None:
    """Why ``text``, written to stand for all of ``sources`` at once (a merge of duplicates),
    does not: it says what none of them says (:func:`check`), or drops a name, a number or a
    date one of them holds (:func:`key_terms`). None when it does."""
    sources = list(sources)
    support = check(text, sources)
    if not support.ok:
        found = support.instructions or support.unsupported_names or support.unsupported_numbers
        return f"{support.reason}: {', '.join(found[:5])}"
    kept = key_terms(text)
    lost = sorted({t for s in sources for t in key_terms(s)} - kept)
    if lost:
        return f"{LOST_TERMS}: {', '.join(t.lstrip('#') for t in lost[:5])}"
    return None


def instructions(text: str) -> list[str]:
    """The instruction-like phrases in ``text`` (empty for a text that only tells)."""
    return [m.group().strip() for m in _INSTRUCTION.finditer(text)]


@dataclass(frozen=True)
class Support:
    """The verdict on one text: what it says that its sources do not."""

    instructions: list[str] = field(default_factory=list)
    unsupported_names: list[str] = field(default_factory=list)
    unsupported_numbers: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str | None:
        """The first failed check (:data:`REASONS`), or None when the text is supported."""
        if self.instructions:
            return INSTRUCTIONS
        if self.unsupported_names:
            return UNSUPPORTED_NAMES
        if self.unsupported_numbers:
            return UNSUPPORTED_NUMBERS
        return None

    @property
    def ok(self) -> bool:
        return self.reason is None


def _name_supported(word: str, vocabulary: Vocabulary) -> bool:
    folded = _fold(word)
    if folded in vocabulary.words:
        return True
    pieces = [p for p in re.split(r"[.'-]", folded) if p]
    return bool(pieces) and all(p in vocabulary.words or _common(p) for p in pieces)


def says(phrase: str, sources: Iterable[str] | Vocabulary) -> bool:
    """Whether ``sources`` say ``phrase`` (an entity's name, a fact's object): every word of it
    that is not a common word, capitalized or not, and every number part is in them."""
    vocabulary = sources if isinstance(sources, Vocabulary) else Vocabulary.of(sources)
    text = unicodedata.normalize("NFKC", phrase)
    words = [_fold(m.group()) for m in _WORD.finditer(text)]
    wanted = [w for w in words if not _common(w)] or words
    return all(w in vocabulary.words or _name_supported(w, vocabulary) for w in wanted) and all(
        p in vocabulary.numbers for n in numbers(text) for p in _parts(n)
    )


def check(
    text: str, sources: Iterable[str] | Vocabulary, *, names_too: Iterable[str] = ()
) -> Support:
    """What ``text`` says that ``sources`` do not. ``names_too``: more names the text claims
    (an insight's entity list), checked like the names in the text."""
    vocabulary = sources if isinstance(sources, Vocabulary) else Vocabulary.of(sources)
    claimed = names(text) + [
        w
        for n in names_too
        for w in _WORD.findall(unicodedata.normalize("NFKC", n))
        if not _common(_fold(w))
    ]
    missing_names = [w for w in claimed if not _name_supported(w, vocabulary)]
    missing_numbers = [
        n for n in numbers(text) if not all(p in vocabulary.numbers for p in _parts(n))
    ]
    return Support(
        instructions=instructions(text),
        unsupported_names=list(dict.fromkeys(missing_names)),
        unsupported_numbers=list(dict.fromkeys(missing_numbers)),
    )
