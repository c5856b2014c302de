"""GD0: map a store's tools to capabilities by what they do, not by what they are called.

Each capability is described by *intents*: a verb group and an object group
("invalidate" + "relation", "archive" + "memory", "set" + "expiry"). A tool
serves an intent when its name or description contains a word of each group
(names are split at ``_ - . /`` and camelCase; simple plurals are folded).
A first pass looks at tool names; a capability still missing is then searched
for by intent in the descriptions before it is declared missing (GD0), and
that search is recorded so the report can say what was looked for.

A third pass reads each tool's input schema (parameter names and their
descriptions): ``createdAfter`` or "Include timestamps" says the store's
records carry times (``timestamps``), ``expires_at`` an expiry, and so on.
What a store's records show when read (an adapter that finds ``createdAt`` on
every entity) it reports itself (``observed``); nothing else is assumed.

A delete tool serves one capability only, ``delete``, which the gardener uses
for nothing but a lossless merge in autonomous mode (it prefers archive and
expiry, and proposes every other deletion); a delete that *retires* an
assertion (its description says so: "invalidate", "retire", "soft", "history
kept") maps to ``kg_invalidate`` / ``archive`` through those words instead.
A tool that matches no intent at all is listed as unknown, never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from memvault.gardener.adapter import WANTED, Capability, GardenStore, ToolInfo
from memvault.text_tokens import singular
from memvault.text_tokens import words as text_words

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def words(text: str) -> list[str]:
    """Lower-case folded words of a tool name or description."""
    text = _CAMEL.sub(" ", text)
    return [singular(w) for w in text_words(text)]


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
        frozenset(singular(v) for v in verbs.split()),
        frozenset(singular(o) for o in objects.split()),
    )


_ITEM = "memory memories item note observation entry record block content text context"
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
        # update_*, edit_*, patch_* change something in place, whatever its name calls it.
        _intent("update in place", "update edit patch", ""),
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
        _intent("backup store", "backup snapshot checkpoint", ""),
        _intent(
            "export store", "export dump", "store database graph all whole everything snapshot"
        ),
    ),
    Capability.ARTIFACT: (
        _intent("save report", "save store persist write put", "artifact report document file"),
    ),
    Capability.TIMESTAMPS: (
        _intent("records with times", "timestamp datetime", ""),
        _intent(
            "filter by time",
            "created updated modified changed",
            "after before since at date time",
        ),
    ),
    Capability.DELETE: (
        _intent(
            "delete memory",
            "delete remove destroy drop purge erase",
            _ITEM + " context",
        ),
    ),
}
#: Capabilities a tool's input schema can show (its parameters say what it returns or
#: filters by); the others are found from names and descriptions only.
SCHEMA_SHOWS = frozenset({Capability.TIMESTAMPS, Capability.EXPIRE})

#: Verbs that destroy; a tool whose *name* leads with one serves no capability.
DESTRUCTIVE_VERBS = frozenset(
    singular(w) for w in ("delete", "remove", "destroy", "drop", "purge", "erase", "wipe", "clear")
)
#: Words in a description that make a delete a retirement (history kept), not a destruction.
RETIRING_WORDS = frozenset(
    singular(w)
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
    #: Tools that match no intent at all: listed in the report, never guessed at.
    unknown: list[str] = field(default_factory=list)
    #: Capabilities the adapter found in the store's records rather than in a tool.
    observed: dict[Capability, str] = field(default_factory=dict)

    @property
    def capabilities(self) -> set[Capability]:
        return set(self.mapping) | set(self.observed)

    @property
    def missing(self) -> list[Capability]:
        return [c for c in WANTED if c not in self.capabilities]

    def has(self, *capabilities: Capability) -> bool:
        return all(c in self.capabilities for c in capabilities)

    def summary(self) -> str:
        """One line: the capabilities found, what is missing, and the tools nobody knows."""
        found = [c.value for c in Capability if c in self.capabilities]
        text = ", ".join(found) if found else "no capabilities"
        if self.missing:
            text += " (missing: " + ", ".join(c.value for c in self.missing) + ")"
        if self.unknown:
            text += " (unknown tools, not used: " + ", ".join(self.unknown) + ")"
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
            "unknown": self.unknown,
            "observed": {c.value: why for c, why in self.observed.items()},
        }


def schema_words(tool: ToolInfo) -> list[str]:
    """Words of a tool's input schema: parameter names and descriptions, one level into the
    items of array parameters (where batch tools keep them)."""

    def of(properties: object) -> list[str]:
        if not isinstance(properties, Mapping):
            return []
        out: list[str] = []
        for name, spec in properties.items():
            out += words(str(name))
            if isinstance(spec, Mapping):
                out += words(str(spec.get("description") or ""))
                if spec.get("format") in ("date-time", "date"):
                    out.append("datetime")
                inner = spec.get("items")
                if isinstance(inner, Mapping):
                    out += of(inner.get("properties"))
        return out

    return of(tool.input_schema.get("properties")) if tool.input_schema else []


def _is_destructive(tool: ToolInfo) -> bool:
    name_words = words(tool.name)
    if not name_words or not (DESTRUCTIVE_VERBS & set(name_words)):
        return False
    return not (RETIRING_WORDS & set(words(tool.description)))


def _best(intent: Intent, hits: list[ToolInfo]) -> ToolInfo:
    """The best-fitting tool; ties go to the first name in order."""
    return min(hits, key=lambda t: (-intent.score(words(t.name), words(t.description)), t.name))


def survey(store: str, tools: Iterable[ToolInfo]) -> Survey:
    """Map ``tools`` to capabilities by intent: names first, then a search of descriptions,
    then of input schemas. Destructive tools serve ``delete`` and nothing else."""
    listed = sorted(tools, key=lambda t: t.name)
    result = Survey(store=store, tools=listed)
    destructive = [t for t in listed if _is_destructive(t)]
    usable = [t for t in listed if not _is_destructive(t)]

    def pool(capability: Capability) -> list[ToolInfo]:
        return destructive if capability is Capability.DELETE else usable

    def mapped(capability: Capability, text: Callable[[ToolInfo], list[str]], how: str) -> bool:
        for intent in INTENTS[capability]:
            hits = [t for t in pool(capability) if intent.matches(text(t))]
            if hits:
                best = _best(intent, hits)
                result.mapping[capability] = best
                result.evidence[capability] = f"{best.name} ({how}: {intent.phrase})"
                return True
        return False

    # Pass 1: tool names alone say what most tools do.
    for capability in INTENTS:
        mapped(capability, lambda t: words(t.name), "name")
    # Pass 2: before calling a capability missing, search the descriptions by intent; pass 3:
    # the input schemas, for what parameters show (times, expiry).
    for capability, intents in INTENTS.items():
        if capability in result.mapping:
            continue
        result.searched[capability] = [i.phrase for i in intents]
        if mapped(capability, lambda t: words(t.name) + words(t.description), "description"):
            continue
        if capability in SCHEMA_SHOWS:
            mapped(capability, schema_words, "input schema")
    used = {t.name for t in result.mapping.values()}
    result.unused_destructive = [t.name for t in destructive if t.name not in used]
    result.unknown = [t.name for t in usable if t.name not in used and not _recognised(t)]
    return result


def _recognised(tool: ToolInfo) -> bool:
    """Whether a tool matches any intent (it does something the gardener knows, even if
    another tool was chosen for it)."""
    text = words(tool.name) + words(tool.description)
    return any(
        intent.matches(text) for capability, intents in INTENTS.items() for intent in intents
    )


def survey_and_bind(store: GardenStore) -> Survey:
    """Survey ``store``'s tools and bind it to what was found; a capability the adapter then
    declines (a tool that looked right but it cannot serve) is not one. What the adapter
    found in the store's records (``observed``) and how it serves a capability
    (``explained``) are added to the evidence."""
    found = survey(store.name, store.tools())
    store.bind(found.mapping)
    for capability, why in getattr(store, "declined", {}).items():
        found.mapping.pop(capability, None)
        found.evidence[capability] = f"declined: {why}"
    for capability, why in getattr(store, "observed", {}).items():
        found.observed[capability] = why
        found.evidence[capability] = f"observed: {why}"
    for capability, how in getattr(store, "explained", {}).items():
        if capability in found.mapping:
            found.evidence[capability] += f"; {how}"
    return found
