"""GD0: map a store's tools to capabilities by what they do, not by what they are called.

Each capability is described by *intents*: a verb group and an object group
("invalidate" + "relation", "archive" + "memory", "set" + "expiry"). A tool
serves an intent when its name or description contains a word of each group
(names are split at ``_ - . /`` and camelCase; simple plurals are folded).
A first pass looks at tool names; a capability still missing is then searched
for by intent in the descriptions before it is declared missing (GD0), and
that search is recorded so the report can say what was looked for.

Plain delete tools are never mapped to anything: the gardener does not hard-
delete, and a delete that *retires* an assertion (its description says so:
"invalidate", "retire", "soft", "history kept") maps to ``kg_invalidate`` /
``archive`` through those words, not through "delete".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from memvault.gardener.adapter import ALL_CAPABILITIES, Capability, GardenStore, ToolInfo
from memvault.text_tokens import words as text_words

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _fold(word: str) -> str:
    """A crude singular: ``memories`` → ``memory``, ``relations`` → ``relation``."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-case folded words of a tool name or description."""
    text = _CAMEL.sub(" ", text)
    return [_fold(w) for w in text_words(text)]


def _forms(word: str) -> set[str]:
    """A word and its inflections ("archive" → archived, archiving, archives ...)."""
    stem = word[:-1] if word.endswith("e") else word
    return {word, word + "d", word + "ed", stem + "ing", word + "s", stem + "ed"}


@dataclass(frozen=True)
class Intent:
    """A verb group and an object group; a phrase like "invalidate relation" is one intent."""

    phrase: str
    verbs: frozenset[str]
    objects: frozenset[str]

    @property
    def _verb_forms(self) -> frozenset[str]:
        return frozenset(f for v in self.verbs for f in _forms(v))

    @property
    def _object_forms(self) -> frozenset[str]:
        return frozenset(f for o in self.objects for f in _forms(o))

    def matches(self, tokens: Sequence[str]) -> bool:
        present = set(tokens)
        return bool(self._verb_forms & present) and (
            not self.objects or bool(self._object_forms & present)
        )

    def score(self, name: Sequence[str], description: Sequence[str]) -> int:
        """How well a tool fits: intent words in its name count twice, in its description once."""
        wanted = self._verb_forms | self._object_forms
        return 2 * len(wanted & set(name)) + len(wanted & set(description))


def _intent(phrase: str, verbs: str, objects: str = "") -> Intent:
    return Intent(
        phrase,
        frozenset(_fold(v) for v in verbs.split()),
        frozenset(_fold(o) for o in objects.split()),
    )


_ITEM = "memory memories item note observation entry record block content text"
_FACT = "relation fact triple edge link assertion statement relationship"
_GRAPH = "graph knowledge kg node entity " + _FACT

#: Intents per capability, in the order the survey tries them (strongest first).
INTENTS: Mapping[Capability, tuple[Intent, ...]] = {
    Capability.SEARCH: (
        _intent(
            "search memory",
            "search find query recall retrieve lookup",
            _ITEM + " node entity graph",
        ),
        _intent("list memories", "list read open get browse fetch", _ITEM + " node entity graph"),
    ),
    Capability.CREATE: (
        _intent(
            "create memory", "create add store save remember insert write append", _ITEM + " entity"
        ),
    ),
    Capability.MUTATE: (
        _intent(
            "update memory",
            "update edit modify rewrite replace patch amend change",
            _ITEM + " entity importance",
        ),
    ),
    Capability.ARCHIVE: (
        _intent("archive memory", "archive retire deactivate shelve soft", _ITEM + " entity"),
    ),
    Capability.EXPIRE: (_intent("set expiry", "expire expiry expiration ttl", ""),),
    Capability.DUPLICATE_CHECK: (
        _intent("check duplicate", "duplicate dedup deduplicate dedupe near", ""),
        _intent(
            "similarity search",
            "similar similarity semantic vector cosine score",
            _ITEM + " search",
        ),
        # No duplicate tool and no scored search: a full read lets the gardener compare itself.
        _intent("read everything", "read list dump get", "entire whole all everything"),
    ),
    Capability.KG_ADD: (_intent("add relation", "create add assert insert record", _FACT),),
    Capability.KG_SEARCH: (
        _intent("search facts", "search find query read get list open", _FACT + " graph knowledge"),
    ),
    Capability.KG_INVALIDATE: (
        _intent(
            "invalidate relation",
            "invalidate supersede retire deprecate expire end obsolete",
            _FACT,
        ),
    ),
    Capability.KG_TIMELINE: (
        _intent("fact timeline", "timeline history version asof past", _GRAPH),
    ),
    Capability.STRUCTURE: (
        _intent(
            "reconnect link",
            "reconnect link connect relink attach move reparent",
            _ITEM + " " + _GRAPH + " container collection room drawer parent orphan",
        ),
        _intent(
            "list containers", "list traverse neighbor", "container collection room drawer orphan"
        ),
        _intent("add link", "create add", "link edge relation relationship"),
    ),
    Capability.JOURNAL: (
        _intent("write journal", "write add append create log record", "journal diary"),
    ),
    Capability.STATS: (
        _intent("store stats", "stat statistic count metric size", ""),
        # A tool that reads the whole store can be counted.
        _intent("read everything", "read list dump get", "entire whole all everything"),
    ),
    Capability.BACKUP: (
        _intent("backup store", "backup snapshot", ""),
        _intent(
            "export store", "export dump", "store database graph all whole everything snapshot"
        ),
    ),
    Capability.ARTIFACT: (
        _intent("save report", "save store persist write put", "artifact report document file"),
    ),
}

#: Verbs that destroy; a tool whose *name* leads with one serves no capability.
DESTRUCTIVE_VERBS = frozenset(
    _fold(w) for w in ("delete", "remove", "destroy", "drop", "purge", "erase", "wipe", "clear")
)
#: Words in a description that make a delete a retirement (history kept), not a destruction.
RETIRING_WORDS = frozenset(
    _fold(w)
    for w in ("invalidate", "retire", "soft", "supersede", "history", "timeline", "archive")
)


@dataclass
class Survey:
    """What one store can do: capability → tool, with the evidence and the searches made."""

    store: str
    tools: list[ToolInfo]
    mapping: dict[Capability, ToolInfo] = field(default_factory=dict)
    evidence: dict[Capability, str] = field(default_factory=dict)
    searched: dict[Capability, list[str]] = field(default_factory=dict)
    unused_destructive: list[str] = field(default_factory=list)

    @property
    def capabilities(self) -> set[Capability]:
        return set(self.mapping)

    @property
    def missing(self) -> list[Capability]:
        return [c for c in ALL_CAPABILITIES if c not in self.mapping]

    def has(self, *capabilities: Capability) -> bool:
        return all(c in self.mapping for c in capabilities)

    def summary(self) -> str:
        """One line: the capabilities found, then what is missing."""
        found = [c.value for c in ALL_CAPABILITIES if c in self.mapping]
        text = ", ".join(found) if found else "no capabilities"
        if self.missing:
            text += " (missing: " + ", ".join(c.value for c in self.missing) + ")"
        return text

    def as_dict(self) -> dict[str, object]:
        return {
            "store": self.store,
            "tools": [t.name for t in self.tools],
            "mapping": {c.value: t.name for c, t in self.mapping.items()},
            "evidence": {c.value: e for c, e in self.evidence.items()},
            "missing": [c.value for c in self.missing],
            "searched": {c.value: s for c, s in self.searched.items()},
            "unused_destructive": self.unused_destructive,
        }


def _is_destructive(tool: ToolInfo) -> bool:
    name_words = words(tool.name)
    if not name_words or not (DESTRUCTIVE_VERBS & set(name_words)):
        return False
    return not (RETIRING_WORDS & set(words(tool.description)))


def _best(intent: Intent, hits: list[ToolInfo]) -> ToolInfo:
    """The best-fitting tool; ties go to the first name in order."""
    return min(hits, key=lambda t: (-intent.score(words(t.name), words(t.description)), t.name))


def survey(store: str, tools: Iterable[ToolInfo]) -> Survey:
    """Map ``tools`` to capabilities by intent (names first, then a search of descriptions)."""
    listed = sorted(tools, key=lambda t: t.name)
    result = Survey(store=store, tools=listed)
    usable = []
    for tool in listed:
        if _is_destructive(tool):
            result.unused_destructive.append(tool.name)
        else:
            usable.append(tool)
    # Pass 1: tool names alone say what most tools do.
    for capability, intents in INTENTS.items():
        for intent in intents:
            hits = [t for t in usable if intent.matches(words(t.name))]
            if hits:
                best = _best(intent, hits)
                result.mapping[capability] = best
                result.evidence[capability] = f"{best.name} (name: {intent.phrase})"
                break
    # Pass 2: before calling a capability missing, search the descriptions by intent.
    for capability, intents in INTENTS.items():
        if capability in result.mapping:
            continue
        result.searched[capability] = [i.phrase for i in intents]
        for intent in intents:
            hits = [t for t in usable if intent.matches(words(t.name) + words(t.description))]
            if hits:
                best = _best(intent, hits)
                result.mapping[capability] = best
                result.evidence[capability] = f"{best.name} (description: {intent.phrase})"
                break
    return result


def survey_and_bind(store: GardenStore) -> Survey:
    """Survey ``store``'s tools and bind it to what was found; a capability the adapter then
    declines (a tool that looked right but it cannot serve) is not one."""
    found = survey(store.name, store.tools())
    store.bind(found.mapping)
    for capability, why in getattr(store, "declined", {}).items():
        found.mapping.pop(capability, None)
        found.evidence[capability] = f"declined: {why}"
    return found
