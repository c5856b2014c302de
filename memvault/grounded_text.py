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
  prompt injection, which no summary of a person's memory needs;
* every **content word**, in any case, must be in the sources: words are compared folded
  and stemmed (:func:`memvault.text_tokens.stemmed`, the stemmer keyword search uses), so
  "ada now works at globex" is read as closely as "Ada now works at Globex". Function words
  do not count, and neither do the few framing words any summary uses (:data:`FRAMING`:
  "discussed", "mentioned", "user"); a negation ("not", "never", "didn't") the sources do
  not hold is a content word they do not say;
* it must keep **who did what to whom** (:func:`flips`): a name and another word the
  sources put in one order within a clause ("Ada hired Bob") are not put the other way round
  around a relation ("Bob hired Ada"), nor are any two words on either side of a direction
  ("from Acme to Globex" written "from Globex to Acme"; "from", "to", "by", "than").

A text that stands for several (a merge of duplicates, :func:`merged_problem`) must also
keep their names, numbers and dates and most of their content words.

The check is deliberately simple and errs on the side of refusing: a refused text is
replaced by something extractive (a digest) or dropped (an insight), and counted.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from bm25s.stopwords import STOPWORDS_EN

from memvault.extract import STOPWORDS
from memvault.text_tokens import NAME_WORD, NOT, NUMBER, THOUSANDS, stem, stemmed
from memvault.text_tokens import STOPWORDS as FUNCTION_WORDS

#: Why a text was refused (the order is the order of the checks).
INSTRUCTIONS = "instructions"
UNSUPPORTED_NAMES = "unsupported_names"
UNSUPPORTED_NUMBERS = "unsupported_numbers"
UNSUPPORTED_WORDS = "unsupported_words"
FLIPPED = "flipped_order"
REASONS: tuple[str, ...] = (
    INSTRUCTIONS,
    UNSUPPORTED_NAMES,
    UNSUPPORTED_NUMBERS,
    UNSUPPORTED_WORDS,
    FLIPPED,
)
#: Why a text that stands for several was refused: it lost a name or number one of them held,
#: or most of their content words.
LOST_TERMS = "lost_terms"
LOST_WORDS = "lost_words"
MERGE_REASONS: tuple[str, ...] = (*REASONS, LOST_TERMS, LOST_WORDS)
#: A merged text keeps at least this share of its records' content words.
MERGE_KEEPS = 0.5

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

#: Words that say nothing about what happened (besides :data:`memvault.text_tokens.STOPWORDS`
#: and the English stop words keyword search drops): pronouns, auxiliaries, connectives.
MORE_FUNCTION_WORDS = """
    i i'm i've i'd i'll me myself mine we us ours ourselves you yours yourself he him his
    himself she her hers herself it itself they them theirs themselves one ones
    am would shall may might must can could should will do does did done doing have has had
    having be been being is are was were get got gets
    but if because since while though although whether unless until also too either both each
    such own same other others another only just even yet still here there thus hence
    an a the this that these those what which who whom whose where when why how
    etc via per e.g i.e
"""
#: Words that may be written for any memory without the sources saying them: how a summary,
#: an insight or a diary page frames what it reports ("the user discussed ..."). Compared
#: stemmed; a word that says what happened, or to whom, is not here.
FRAMING = """
    user users owner person people agent assistant someone everyone anyone
    conversation conversations session sessions chat chats discussion discussions discuss
    discussed talk talked talks say said says tell told mention mentioned mentions note noted
    notes explain explained describe described ask asked asks question questions reply replied
    decide decided decision plan plans planned planning want wanted wants need needs needed
    like liked likes prefer preferred prefers preference consider considered think thought
    feel felt seem seems seemed appear appears appeared share shared keep kept continue
    continued remain remains again already currently current recent recently now today
    yesterday day days week weeks time times later earlier soon first second last next new
    main mainly mostly most more many several various multiple some few lot lots often
    frequently repeatedly regularly usually generally overall together every all
    different similar related regarding including include includes included about around
    across within thing things something anything everything kind part point topic topics
    subject area matter item items detail details information summary summarized summarize
    memory memories record recorded records entry entries mind focus focused interest
    interested important key notable pattern patterns recurring repeated theme themes
    suggest suggests suggested indicate indicates show shows showed reflect reflects involve
    involved involving spent spend came come went go going make made well clearly likely
    probably possibly perhaps maybe really quite rather much also yes okay
"""
#: Short forms of units a summary may write for the word its source spells out ("10 min").
_ABBREVIATED = {
    stem(short): stem(word)
    for short, word in (("min", "minute"), ("mins", "minute"), ("sec", "second"),
                        ("secs", "second"), ("hr", "hour"), ("hrs", "hour"), ("wk", "week"),
                        ("yr", "year"), ("yrs", "year"), ("approx", "approximately"))
}  # fmt: skip
#: Words that deny: a text that holds one where its sources hold none says the opposite.
NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "nor",
        "neither",
        "none",
        "nobody",
        "nothing",
        "nowhere",
        "cannot",
        "without",
    ]
)
#: Words that give a relation its direction: what stands on one side of them must not move
#: to the other ("from Acme to Globex", "hired by Ada", "bigger than").
DIRECTIONS = frozenset(
    [
        "from",
        "to",
        "into",
        "onto",
        "toward",
        "towards",
        "than",
        "by",
        "before",
        "after",
        "above",
        "below",
        "over",
        "under",
        "against",
        "versus",
        "vs",
        "instead",
    ]
)
_SKIPPED = frozenset(
    stem(w) for w in (*FUNCTION_WORDS, *STOPWORDS_EN, *MORE_FUNCTION_WORDS.split())
) - {stem(w) for w in NEGATIONS}
_FRAMING = frozenset(stem(w) for w in FRAMING.split())
_NEGATION = frozenset(stem(w) for w in NEGATIONS) | {NOT}
_DIRECTION = frozenset(stem(w) for w in DIRECTIONS)
#: What ends a clause: punctuation, and the words that join two statements.
_CLAUSE = re.compile(
    r"[.!?;:,]+(?=\s|$)|[()\[\]{}\"\n]"
    r"|\b(?:and|but|or|while|whereas|because|although|though|so|which|who|that|when|where|then)\b",
    re.IGNORECASE,
)


def _kind(word_stem: str) -> str | None:
    """What a stemmed word is to the checks: ``not`` (a negation), ``dir`` (a direction),
    ``word`` (a content word), or None (a function word)."""
    if word_stem in _NEGATION:
        return "not"
    if word_stem in _DIRECTION:
        return "dir"
    if word_stem in _SKIPPED or len(word_stem) < 2:
        return None
    return "word"


@functools.lru_cache(maxsize=1 << 16)
def _is_number_word(folded: str) -> bool:
    return folded in _MONTHS or folded in _NUMBER_WORDS


def _content(text: str) -> list[tuple[str, str]]:
    """The content words of ``text`` in order, as written and stemmed (a negation as
    :data:`memvault.text_tokens.NOT`); month names and number words are numbers, not words."""
    out = []
    for word, word_stem in stemmed(text):
        kind = _kind(word_stem)
        if kind == "not":
            out.append((word, NOT))
        elif kind == "word" and not _is_number_word(word.casefold()):
            out.append((word, word_stem))
    return out


def _clauses(text: str) -> list[list[tuple[str, str, str]]]:
    """``text`` cut into clauses, each a list of (word as written, stem, kind) of its content
    words and directions."""
    out = []
    for clause in _CLAUSE.split(text):
        tokens = []
        for word, word_stem in stemmed(clause):
            kind = _kind(word_stem)
            if kind in ("word", "dir") and not _is_number_word(word.casefold()):
                tokens.append((word, word_stem, str(kind)))
        if len(tokens) > 1:
            out.append(tokens)
    return out


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
    """What the sources say: their words and number parts, folded; their content words
    stemmed; the stems of their names; and where each content word stands (clause, position),
    for the order of who did what to whom."""

    words: frozenset[str]
    numbers: frozenset[str]
    stems: frozenset[str] = frozenset()
    named: frozenset[str] = frozenset()
    places: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, sources: Iterable[str]) -> Vocabulary:
        words: set[str] = set()
        numbers: set[str] = set()
        stems: set[str] = set()
        named: set[str] = set()
        places: dict[str, list[tuple[int, int]]] = {}
        clause_no = 0
        for text in sources:
            text = unicodedata.normalize("NFKC", text or "")
            for match in NAME_WORD.finditer(text):
                forms = _forms(match.group())
                folded = forms[0]
                words.update(forms)
                if folded in _MONTHS:
                    numbers.add(_MONTHS[folded])
                if folded in _NUMBER_WORDS:
                    numbers.add(_NUMBER_WORDS[folded])
            for match in NUMBER.finditer(THOUSANDS.sub("", text)):
                numbers.update(_parts(match.group()))
            for word, word_stem in stemmed(text):
                stems.add(NOT if word_stem in _NEGATION else word_stem)
                if _names_something(word):
                    named.add(word_stem)
            for clause in _clauses(text):
                for position, (_, word_stem, _) in enumerate(clause):
                    places.setdefault(word_stem, []).append((clause_no, position))
                clause_no += 1
        return cls(
            frozenset(words),
            frozenset(numbers),
            frozenset(stems),
            frozenset(named),
            {k: tuple(v) for k, v in places.items()},
        )

    def says_before(self, first: str, then: str) -> bool:
        """Whether some clause of the sources has the stem ``first`` before ``then``."""
        later = self.places.get(then, ())
        return any(c == d and p < q for c, p in self.places.get(first, ()) for d, q in later)


def _common(folded: str) -> bool:
    return len(folded) < 2 or folded in STOPWORDS or folded in COMMON_WORDS


def names(text: str) -> list[str]:
    """The words of ``text`` that name something: every capitalized word (a sentence's first
    too) that is not a common word (:data:`COMMON_WORDS`, stop words)."""
    return [
        word
        for word in NAME_WORD.findall(unicodedata.normalize("NFKC", text))
        if _names_something(word)
    ]


@functools.lru_cache(maxsize=1 << 16)
def _names_something(word: str) -> bool:
    return any(c.isupper() for c in word) and not _common(_fold(word))


def numbers(text: str) -> list[str]:
    """The number tokens of ``text`` (dates and times included), as written."""
    return NUMBER.findall(THOUSANDS.sub("", unicodedata.normalize("NFKC", text)))


def key_terms(text: str) -> frozenset[str]:
    """What a faithful digest of ``text`` keeps: its names (folded, as :func:`names` finds them)
    and its number and date parts (``#`` and the integer, a month name counting as its number).
    The reverse of :func:`check`: coverage of the original, not support by it."""
    found = {_fold(w) for w in names(text)}
    out = {w for w in found if w not in _MONTHS}
    out.update(f"#{_MONTHS[w]}" for w in found if w in _MONTHS)
    out.update(f"#{p}" for n in numbers(text) for p in _parts(n))
    return frozenset(out)


def instructions(text: str) -> list[str]:
    """The instruction-like phrases in ``text`` (empty for a text that only tells)."""
    return [m.group().strip() for m in _INSTRUCTION.finditer(text)]


@dataclass(frozen=True)
class Support:
    """The verdict on one text: what it says that its sources do not."""

    instructions: list[str] = field(default_factory=list)
    unsupported_names: list[str] = field(default_factory=list)
    unsupported_numbers: list[str] = field(default_factory=list)
    unsupported_words: list[str] = field(default_factory=list)
    #: Pairs of words put the other way round from the sources ("Globex … Acme").
    flipped: list[str] = field(default_factory=list)

    def _findings(self) -> list[tuple[str, list[str]]]:
        return [
            (INSTRUCTIONS, self.instructions),
            (UNSUPPORTED_NAMES, self.unsupported_names),
            (UNSUPPORTED_NUMBERS, self.unsupported_numbers),
            (UNSUPPORTED_WORDS, self.unsupported_words),
            (FLIPPED, self.flipped),
        ]

    @property
    def reason(self) -> str | None:
        """The first failed check (:data:`REASONS`), or None when the text is supported."""
        return next((reason for reason, found in self._findings() if found), None)

    @property
    def problem(self) -> str | None:
        """The first failed check and what it found ("unsupported_words: globex, mallory"),
        or None when the text is supported."""
        for reason, found in self._findings():
            if found:
                return f"{reason}: {', '.join(found[:5])}"
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
    words = [_fold(m.group()) for m in NAME_WORD.finditer(text)]
    wanted = [w for w in words if not _common(w)] or words
    return all(w in vocabulary.words or _name_supported(w, vocabulary) for w in wanted) and all(
        p in vocabulary.numbers for n in numbers(text) for p in _parts(n)
    )


#: Month names and number words a text may write for a number (checked as that number);
#: "may" and "one" are more often a verb and a pronoun.
_NUMBER_NAMES = {w: n for w, n in (_MONTHS | _NUMBER_WORDS).items() if w not in ("may", "one")}


def flips(text: str, sources: Iterable[str] | Vocabulary) -> list[str]:
    """Pairs of words ``text`` puts the other way round from its sources, within a clause: a
    name (a word the sources capitalize, whatever case the text writes it in) and another word with a relation between them ("Bob hired Ada" for "Ada hired Bob",
    "the billing service depends on Quill" for "Quill depends on the billing service"), or
    any two content words with a direction between them ("from Globex to Acme" for "from
    Acme to Globex"). A pair the sources never put in one clause, or put both ways, is not a
    flip."""
    vocabulary = sources if isinstance(sources, Vocabulary) else Vocabulary.of(sources)
    named = vocabulary.named  # the sources' names: a text's capitals (or lack of them) don't count
    found: list[str] = []
    for clause in _clauses(unicodedata.normalize("NFKC", text)):
        anchors = [(i, w, s) for i, (w, s, kind) in enumerate(clause) if kind == "word"]
        for a, (i, first, x) in enumerate(anchors):
            for j, then, y in anchors[a + 1 :]:
                if x == y:
                    continue
                between = {kind for _, _, kind in clause[i + 1 : j]}
                related = "dir" in between or ("word" in between and (x in named or y in named))
                if not related or vocabulary.says_before(x, y):
                    continue
                if vocabulary.says_before(y, x):
                    found.append(f"{first} … {then}")
    return list(dict.fromkeys(found))


def content_words(text: str) -> list[str]:
    """The stems of the content words of ``text`` (no function words, no framing words), in
    order; a negation as :data:`memvault.text_tokens.NOT`."""
    return [s for _, s in _content(unicodedata.normalize("NFKC", text)) if s not in _FRAMING]


def check(
    text: str, sources: Iterable[str] | Vocabulary, *, names_too: Iterable[str] = ()
) -> Support:
    """What ``text`` says that ``sources`` do not. ``names_too``: more names the text claims
    (an insight's entity list), checked like the names in the text."""
    vocabulary = sources if isinstance(sources, Vocabulary) else Vocabulary.of(sources)
    text = unicodedata.normalize("NFKC", text)
    claimed = names(text) + [
        w
        for n in names_too
        for w in NAME_WORD.findall(unicodedata.normalize("NFKC", n))
        if not _common(_fold(w))
    ]
    missing_names = [w for w in claimed if not _name_supported(w, vocabulary)]
    missing_numbers = [
        n for n in numbers(text) if not all(p in vocabulary.numbers for p in _parts(n))
    ] + [
        w
        for w in NAME_WORD.findall(text)
        if _NUMBER_NAMES.get(_fold(w), "") not in ("", *vocabulary.numbers)
    ]
    missing_words = [
        word
        for word, word_stem in _content(text)
        if word_stem not in vocabulary.stems
        and word_stem not in _FRAMING
        and _ABBREVIATED.get(word_stem) not in vocabulary.stems
    ]
    return Support(
        instructions=instructions(text),
        unsupported_names=list(dict.fromkeys(missing_names)),
        unsupported_numbers=list(dict.fromkeys(missing_numbers)),
        unsupported_words=list(dict.fromkeys(missing_words)),
        flipped=flips(text, vocabulary),
    )


def merged_problem(text: str, sources: Iterable[str]) -> str | None:
    """Why ``text``, written to stand for all of ``sources`` at once (a merge of duplicates),
    does not: it holds instructions or a name or number none of them holds, drops a name, a
    number or a date one of them holds (:func:`key_terms`), keeps less than
    :data:`MERGE_KEEPS` of their content words, or says a word none says, or turns a relation
    round (:func:`check`). None when it does."""
    sources = list(sources)
    vocabulary = Vocabulary.of(sources)
    support = check(text, vocabulary)
    if support.instructions or support.unsupported_names or support.unsupported_numbers:
        return support.problem
    written = {s for _, s in stemmed(text)}  # a name kept in another case is kept
    lost = sorted(
        t
        for t in {t for s in sources for t in key_terms(s)} - key_terms(text)
        if t.startswith("#") or stem(t) not in written
    )
    if lost:
        return f"{LOST_TERMS}: {', '.join(t.lstrip('#') for t in lost[:5])}"
    theirs = {w: s for src in sources for w, s in _content(src) if s not in _FRAMING}
    wanted = set(theirs.values())
    kept = wanted & set(content_words(text))
    if wanted and len(kept) < MERGE_KEEPS * len(wanted):
        dropped = [w for w, s in theirs.items() if s not in kept]
        return f"{LOST_WORDS}: kept {len(kept)} of {len(wanted)}, not {', '.join(dropped[:5])}"
    return support.problem
