"""A synthetic, realistic memory history of one engineer who works with an AI coding agent.

Tests, benchmarks and ``memvault demo`` need a store that rots the way real
ones do: facts that change (employers, a move and a move back, a project's
status), a fact that arrives late, a fact said twice in other words,
near-duplicate and bloated memories, preference version chains, skills used
often / once / no longer, recalls that keep failing, and two people with the
same name. This module writes such a history as interchange records and says,
in :class:`GroundTruth`, what a correct pipeline should conclude from it.

Two phases keep memory flat and the truth known up front: a cheap *plan*
(O(sessions), no text) fixes times, layouts and every ground-truth item with
explicit ids; the *render* phase streams the records session by session. The
same :class:`DemoConfig` always gives byte-identical records.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import random
import string
from collections import deque
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from itertools import pairwise
from types import MappingProxyType
from typing import IO, Any, Literal, NamedTuple

from memvault.normalize import canonical_name, to_utc_naive, utcnow
from memvault.records import (
    ATTITUDE_CATEGORIES,
    AttitudeRecord,
    BlockRecord,
    EntityRecord,
    FeedbackRecord,
    MentionRecord,
    RecallRecord,
    Record,
    SessionRecord,
    SkillUseRecord,
    TripleRecord,
    Verdict,
)
from memvault_demo import vocabulary as V

# =========================================================================== public constants


@dataclass(frozen=True)
class PredicateSpec:
    """What a predicate means, for grounding: how many objects at once and whether it changes."""

    cardinality: Literal["functional", "multi"]
    volatility: Literal["volatile", "stable"]
    subject_types: tuple[str, ...]
    object_type: str  # an entity type, or "literal"
    description: str


#: The fixed predicate vocabulary of the demo (and the seed of the grounding definitions, L2/T6).
PREDICATES: Mapping[str, PredicateSpec] = MappingProxyType(
    {
        "works_at": PredicateSpec(
            "functional", "volatile", ("person",), "organization", "current employer"
        ),
        "lives_in": PredicateSpec("functional", "volatile", ("person",), "place", "home city"),
        "has_role": PredicateSpec("functional", "volatile", ("person",), "literal", "job title"),
        "project_status": PredicateSpec(
            "functional", "volatile", ("project",), "literal", "planning/active/paused/shipped"
        ),
        "prefers": PredicateSpec(
            "multi", "volatile", ("person",), "literal", "a stated preference"
        ),
        "works_on": PredicateSpec("multi", "stable", ("person",), "project", "contributes to"),
        "uses_tool": PredicateSpec(
            "multi", "stable", ("person", "organization"), "tool", "uses regularly"
        ),
        "knows": PredicateSpec("multi", "stable", ("person",), "person", "acquainted with"),
        "depends_on": PredicateSpec(
            "multi", "stable", ("project",), "tool", "technical dependency"
        ),
        "interested_in": PredicateSpec(
            "multi", "stable", ("person", "organization"), "concept", "a topic of interest"
        ),
        "related_to": PredicateSpec(
            "multi", "stable", ("concept", "project", "tool"), "concept", "topical link"
        ),
        "located_in": PredicateSpec(
            "functional", "stable", ("organization",), "place", "headquarters"
        ),
    }
)

ENTITY_TYPES: tuple[str, ...] = ("person", "organization", "place", "project", "tool", "concept")
PROJECT_STATUSES: tuple[str, ...] = ("planning", "active", "paused", "shipped")

#: Share of memory blocks that belong to a near-duplicate group / are bloated (> 750 chars).
NEAR_DUPLICATE_SHARE = 0.05
BLOAT_SHARE = 0.03
BLOAT_MIN_CHARS = 750
BLOAT_LONG_CHARS = 1500
#: The last days in which every session's first recall returns the reinforced early memory.
REINFORCED_DAYS = 28

# =========================================================================== config and truth


@dataclass(frozen=True)
class DemoConfig:
    """What to generate; the same config always yields the same records."""

    sessions: int = 240
    days: int = 150
    seed: int = 7
    end: dt.datetime | None = None  # default: now, rounded down to the hour
    owner: str = "Ada Lovelace"

    def __post_init__(self) -> None:
        if self.sessions < 1 or self.days < 1:
            raise ValueError("sessions and days must be at least 1")
        if not self.owner.strip():
            raise ValueError("owner must be a name")


class Span(NamedTuple):
    """One interval of a changing fact: ``value`` was true from ``valid_from`` to ``valid_to``."""

    value: str
    valid_from: dt.datetime
    valid_to: dt.datetime | None  # None: still true at the end of the history
    entity_id: str | None  # the object's entity, None for literal objects
    triple_ids: tuple[str, ...]  # the statements of it (two when it was restated)


class LateFact(NamedTuple):
    """A fact learned weeks after it became true, after later-valid facts were already known."""

    triple_id: str
    predicate: str
    value: str
    valid_at: dt.datetime
    created_at: dt.datetime


class RestatedFact(NamedTuple):
    """The same fact in two sessions with different wording of the object (expect MERGE)."""

    original_id: str
    restated_id: str
    original_object: str
    restated_object: str
    entity_id: str


class PreferenceVersion(NamedTuple):
    attitude_id: str
    statement: str
    created_at: dt.datetime
    superseded_at: dt.datetime | None
    previous_id: str | None


class RecallGap(NamedTuple):
    """A recall signature that failed (verdict INCORRECT) ``fail_count`` ≥ 2 times."""

    signature: str
    intent_label: str
    entities: tuple[str, ...]
    fail_count: int
    last_fail_at: dt.datetime


class SameNamePeople(NamedTuple):
    name: str
    colleague_id: str
    neighbour_id: str
    colleague_blocks: tuple[str, ...]
    neighbour_blocks: tuple[str, ...]


@dataclass
class GroundTruth:
    """What a correct pipeline should conclude from the generated history.

    Timelines are in valid time and ordered; ``valid_to`` of a span is the
    ``valid_from`` of the next (a superseding statement's ``valid_at``).
    """

    config: DemoConfig
    start: dt.datetime  # first day of the history (midnight)
    end: dt.datetime  # every observation time is before this
    owner_id: str
    owner_name: str
    sessions: int
    blocks: int
    memory_blocks: int
    session_ids: tuple[str, str]  # first and last
    employer_timeline: list[Span]
    city_timeline: list[Span]
    role_timeline: list[Span]
    project_id: str
    project_name: str
    project_status_timeline: list[Span]
    late_fact: LateFact
    #: The move away, told only after the move back (its span lies between two home statements).
    late_move: LateFact
    restated_fact: RestatedFact
    near_duplicate_groups: list[tuple[str, ...]]  # block ids, each group in session order
    bloated_blocks: list[str]  # all blocks over 750 characters
    long_bloated_blocks: list[str]  # the subset over 1,500 characters
    preference_versions: dict[str, list[PreferenceVersion]]  # per category, oldest first
    skill_use_counts: dict[str, int]
    skill_last_used: dict[str, dt.datetime]
    recall_gaps: list[RecallGap]  # exactly the signatures with ≥ 2 INCORRECT verdicts
    same_name_people: SameNamePeople
    feedback_by_block: dict[str, float]  # summed thumbs per block
    #: An early memory the owner keeps asking about in the last four weeks, and a memory of the
    #: same session nothing ever returns: use should keep the first close while the second ages.
    reinforced_block: str | None = None
    untouched_twin: str | None = None
    predicates: Mapping[str, PredicateSpec] = field(default_factory=lambda: PREDICATES)

    def employer_at(self, when: dt.datetime) -> str | None:
        """The owner's employer on ``when`` (valid time), per the timeline."""
        return _value_at(self.employer_timeline, when)

    def city_at(self, when: dt.datetime) -> str | None:
        return _value_at(self.city_timeline, when)

    def project_status_at(self, when: dt.datetime) -> str | None:
        return _value_at(self.project_status_timeline, when)


def _value_at(spans: list[Span], when: dt.datetime) -> str | None:
    for span in spans:
        if span.valid_from <= when and (span.valid_to is None or when < span.valid_to):
            return span.value
    return None


def recall_signature(intent_label: str | None, entities: Iterable[str]) -> str:
    """The key recall failures are counted by (G2): intent plus the sorted entity ids."""
    return f"{intent_label or '-'}|{','.join(sorted(entities))}"


# =========================================================================== public API


class DemoHistory:
    """A planned demo history: ``truth`` is known at once, ``records()`` streams (re-iterable)."""

    def __init__(self, config: DemoConfig | None = None) -> None:
        self.config = config or DemoConfig()
        self._plan = _Plan(self.config)
        self.truth: GroundTruth = self._plan.truth

    def records(self) -> Iterator[Record]:
        """A fresh stream of all records in dependency order (referenced things first)."""
        return _Renderer(self._plan).records()


def generate(config: DemoConfig | None = None) -> tuple[Iterator[Record], GroundTruth]:
    """Plan a history and return its record stream and its ground truth."""
    history = DemoHistory(config)
    return history.records(), history.truth


def by_night(records: Iterable[Record]) -> Iterator[tuple[dt.date, list[Record]]]:
    """The stream cut into nights: (day, records of the sessions that started that day).

    The stream is in session order, each session followed by what it brought, so
    ingesting the nights one by one replays the history as it arrived, day by day.
    """
    day: dt.date | None = None
    batch: list[Record] = []
    for record in records:
        if isinstance(record, SessionRecord) and record.started_at.date() != day:
            if batch and day is not None:
                yield day, batch
                batch = []
            day = record.started_at.date()
        batch.append(record)
    if batch and day is not None:
        yield day, batch


def write_jsonl(records: Iterable[Record], path_or_file: str | os.PathLike[str] | IO[str]) -> int:
    """Write one JSON object per line (the interchange format); return how many."""
    if isinstance(path_or_file, str | os.PathLike):
        with open(path_or_file, "w", encoding="utf-8", newline="\n") as handle:
            return _write(records, handle)
    return _write(records, path_or_file)


def _write(records: Iterable[Record], handle: IO[str]) -> int:
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    count = 0
    for record in records:
        handle.write(dumps(record.to_json_dict()))
        handle.write("\n")
        count += 1
    return count


# =========================================================================== helpers

_MASK = (1 << 64) - 1


def _mix(seed: int, salt: int) -> int:
    """An RNG seed per purpose, so adding draws to one phase does not shift another."""
    return (seed * 0x9E3779B97F4A7C15 + salt * 0xBF58476D1CE4E5B9 + 0x94D049BB133111EB) & _MASK


def _resolve_end(end: dt.datetime | None) -> dt.datetime:
    now = utcnow()
    if end is None:
        return now.replace(minute=0, second=0, microsecond=0)
    end = to_utc_naive(end)
    if end > now + dt.timedelta(hours=23):
        raise ValueError(f"end {end.isoformat()} lies in the future; records would not validate")
    return end


def _midnight(value: dt.datetime) -> dt.datetime:
    return value.replace(hour=0, minute=0, second=0, microsecond=0)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in canonical_name(name)).strip("_")


def _layout(n_blocks: int, n_memory: int) -> tuple[str, ...]:
    """Block kinds of a session: turn pairs, each followed by a memory while any are left."""
    kinds: list[str] = []
    left = n_memory
    for i in range(n_blocks - n_memory):
        kinds.append("user_turn" if i % 2 == 0 else "assistant_turn")
        if i % 2 == 1 and left:
            kinds.append("memory")
            left -= 1
    kinds.extend("memory" for _ in range(left))
    return tuple(kinds)


@cache
def _memory_positions(n_blocks: int, n_memory: int) -> tuple[int, ...]:
    return tuple(i for i, kind in enumerate(_layout(n_blocks, n_memory)) if kind == "memory")


_FORMATTER = string.Formatter()


@cache
def _fields(template: str) -> tuple[str, ...]:
    """The slot names a template uses, in order, once each."""
    return tuple(dict.fromkeys(name for _, name, _, _ in _FORMATTER.parse(template) if name))


@cache
def _parse_fact(code: str) -> tuple[str, str, str]:
    predicate, rest = code.split(":")
    subject, obj = rest.split(">")
    return predicate, subject, obj


def _join(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _binomial(rng: random.Random, trials: int, p: float) -> int:
    return sum(rng.random() < p for _ in range(trials))


def _make_name(etype: str, rng: random.Random, used: set[str]) -> str:
    """A new name of an entity type, unique among ``used``; longer forms when short ones run out."""
    for attempt in range(200):
        if etype == "person":
            first, last = rng.choice(V.FIRST_NAMES), rng.choice(V.LAST_NAMES)
            name = f"{first} {last}"
            if attempt > 30:
                name = f"{first} {rng.choice(string.ascii_uppercase)}. {last}"
        elif etype == "organization":
            name = f"{rng.choice(V.ORG_ROOTS)}{rng.choice(V.ORG_STEMS)} {rng.choice(V.ORG_KINDS)}"
            if attempt > 20:
                name = f"{rng.choice(V.ORG_ROOTS)} {name}"
        elif etype == "project":
            name = f"{rng.choice(V.PROJECT_DOMAINS)}-{rng.choice(V.PROJECT_PARTS)}"
            if attempt > 10:
                name = f"{rng.choice(V.PROJECT_ADJECTIVES)}-{name}"
        elif etype == "concept":
            name = f"{rng.choice(V.CONCEPT_MODIFIERS)} {rng.choice(V.CONCEPT_NOUNS)}"
            if attempt > 10:
                name = f"{rng.choice(V.CONCEPT_DOMAINS)} {name}"
        elif etype == "tool":
            name = f"{rng.choice(V.TOOL_STEMS)}{rng.choice(V.TOOL_SUFFIXES)}"
            if attempt > 20:
                name = f"{rng.choice(V.PROJECT_DOMAINS)}-{name}"
        else:  # place
            name = f"{rng.choice(V.TOWN_HEADS)}{rng.choice(V.TOWN_TAILS)}"
            if attempt > 20:
                name = f"{rng.choice(V.TOWN_PREFIXES)} {name}"
        if attempt > 100:
            name = f"{name} {attempt}"  # only at absurd scales
        if canonical_name(name) not in used:
            return name
    raise RuntimeError(f"{etype} names exhausted")  # pragma: no cover


# =========================================================================== the plan


@dataclass(slots=True)
class _Entity:
    idx: int
    id: str
    name: str
    etype: str
    first: str = ""  # a person's first name, for "{person_first}"
    org: int | None = None  # person: employer; organization: -
    role: str | None = None
    city: int | None = None  # person: home; organization: headquarters
    status: str | None = None  # project
    purpose: str | None = None  # tool
    country: str | None = None  # place
    kind: str | None = None  # organization
    relation: str | None = None  # family
    aliases: tuple[str, ...] = ()


@dataclass(slots=True)
class _SessionPlan:
    index: int
    id: str
    start: dt.datetime
    end: dt.datetime
    task: str
    source: str
    n_blocks: int
    n_memory: int
    specials: dict[int, tuple[Any, ...]] = field(default_factory=dict)  # memory slot -> what
    skills: tuple[str, ...] = ()
    recalls: list[tuple[Any, ...]] = field(default_factory=list)
    feedback: list[tuple[str, float, str]] = field(default_factory=list)
    attitudes: list[tuple[str, int]] = field(default_factory=list)  # (category, version)
    fresh: list[int] = field(default_factory=list)  # curated entities introduced here

    def block_id(self, k: int) -> str:
        return f"blk_{self.id[4:]}_{k:02d}"

    def block_time(self, k: int) -> dt.datetime:
        seconds = (self.end - self.start).total_seconds() * (k + 1) / (self.n_blocks + 1)
        return self.start + dt.timedelta(seconds=int(seconds))

    def free_slot(self) -> int | None:
        for slot in range(self.n_memory):
            if slot not in self.specials:
                return slot
        return None

    def memory_block_id(self, slot: int) -> str:
        return self.block_id(_memory_positions(self.n_blocks, self.n_memory)[slot])


_TASK_WEIGHTS: dict[str, float] = {
    "debug": 0.22,
    "feature": 0.2,
    "refactor": 0.11,
    "review": 0.1,
    "docs": 0.07,
    "infra": 0.1,
    "data": 0.1,
    "learning": 0.05,
    "planning": 0.05,
}
_BLOCKS_WEIGHTS = (1, 1, 1, 1, 1, 2, 4, 7, 12, 18)  # 3..12 blocks; mean ≈ 10.3
_MEMORY_WEIGHTS = (1, 2, 4, 4)  # 1..4 memory items


class _Plan:
    """Everything decided before any text is written; builds the ground truth."""

    def __init__(self, config: DemoConfig) -> None:
        self.config = config
        self.seed = config.seed
        self.tag = f"d{config.seed}".replace("-", "m")
        self.end = _resolve_end(config.end)
        self.start = _midnight(self.end) - dt.timedelta(days=config.days)
        self.owner_first = config.owner.split()[0]
        rng = random.Random(_mix(config.seed, 1))
        self.sessions = self._plan_sessions(rng)
        self.used_names: set[str] = {canonical_name(config.owner)}
        self.entities: list[_Entity] = []
        self._plan_world(rng)
        self._plan_events(rng)
        self._plan_same_name(rng)
        self._plan_attitudes(rng)
        self._plan_skills(rng)
        self._plan_near_duplicates(rng)
        self._plan_bloat(rng)
        self._plan_reinforcement()
        self._plan_recalls(rng)
        self._plan_feedback(rng)
        self.truth = self._truth()

    # ------------------------------------------------------------------ sessions

    def _plan_sessions(self, rng: random.Random) -> list[_SessionPlan]:
        days, n = self.config.days, self.config.sessions
        gaps: set[int] = set()
        for _ in range(max(1, days // 70)):  # vacations
            vacation = rng.randint(6, 12)
            first = rng.randrange(days // 10, max(days // 10 + 1, days - days // 10 - vacation))
            gaps.update(range(first, first + vacation))
        for _ in range(days // 40):  # sick days
            gaps.add(rng.randrange(days))
        weights = []
        for d in range(days):
            weekday = (self.start + dt.timedelta(days=d)).weekday()
            base = 1.0 if weekday < 5 else (0.22 if weekday == 5 else 0.12)
            weights.append(0.0 if d in gaps else base * rng.uniform(0.55, 1.45))
        if sum(weights) == 0:
            weights = [1.0] * days
        total = sum(weights)
        expected = [n * w / total for w in weights]
        counts = [int(e) for e in expected]
        order = sorted(range(days), key=lambda d: (counts[d] - expected[d], d))
        for d in order[: n - sum(counts)]:
            counts[d] += 1
        tasks, task_w = list(_TASK_WEIGHTS), list(_TASK_WEIGHTS.values())
        plans: list[_SessionPlan] = []
        for d, k in enumerate(counts):
            if not k:
                continue
            day = self.start + dt.timedelta(days=d)
            slot = 870.0 / k  # minutes between 08:00 and 22:30
            for j in range(k):
                begin = 480.0 + j * slot + rng.uniform(0, 0.35 * slot)
                length = min(rng.uniform(10, 120), 0.6 * slot)
                start = day + dt.timedelta(seconds=int(begin * 60))
                end = start + dt.timedelta(seconds=max(60, int(length * 60)))
                n_blocks = rng.choices(range(3, 13), _BLOCKS_WEIGHTS)[0]
                n_memory = rng.choices(range(1, 5), _MEMORY_WEIGHTS)[0]
                n_memory = min(n_memory, n_blocks - 2)
                i = len(plans)
                plans.append(
                    _SessionPlan(
                        index=i,
                        id=f"ses_{self.tag}_{i:06d}",
                        start=start,
                        end=end,
                        task=rng.choices(tasks, task_w)[0],
                        source="claude-code" if rng.random() < 0.8 else "codex",
                        n_blocks=n_blocks,
                        n_memory=n_memory,
                    )
                )
        return plans

    def session_at(self, when: dt.datetime, after: int = -1) -> int:
        """Index of the first session starting at or after ``when`` (and after ``after``)."""
        for sp in self.sessions[after + 1 :]:
            if sp.start >= when:
                return sp.index
        return len(self.sessions) - 1

    def day(self, fraction: float) -> dt.datetime:
        return self.start + dt.timedelta(days=int(fraction * self.config.days))

    # ------------------------------------------------------------------ the world

    def new_entity(self, etype: str, name: str, key: str | None = None, **attrs: Any) -> _Entity:
        """A curated entity with a readable id."""
        self.used_names.add(canonical_name(name))
        ent = _Entity(
            idx=len(self.entities),
            id=f"ent_{self.tag}_{key or _slug(name)}",
            name=name,
            etype=etype,
            **attrs,
        )
        self.entities.append(ent)
        return ent

    def _plan_world(self, rng: random.Random) -> None:
        cfg = self.config
        self.owner = self.new_entity("person", cfg.owner, key="owner", first=self.owner_first)
        home, home_country, away, away_country = rng.choice(V.CITY_PAIRS)
        self.home = self.new_entity("place", home, country=home_country)
        self.away = self.new_entity("place", away, country=away_country)
        first, restated = rng.choice(V.FIRST_EMPLOYERS)
        self.restated_name = restated
        second, third = rng.sample(V.LATER_EMPLOYERS, 2)
        self.employers = [
            self.new_entity(
                "organization", first, city=self.home.idx, kind="Software",
                aliases=(first.split()[0],),
            ),
            self.new_entity("organization", second, city=self.home.idx, kind="Labs"),
            self.new_entity("organization", third, city=self.home.idx, kind="Systems"),
        ]  # fmt: skip
        for city, country in rng.sample(V.CITIES, 6):
            self.new_entity("place", city, country=country)
        places = [e.idx for e in self.entities if e.etype == "place"]
        for _ in range(6):
            name = _make_name("organization", rng, self.used_names)
            self.new_entity(
                "organization", name, kind=rng.choice(V.ORG_KINDS), city=rng.choice(places)
            )
        self.flagship = self.new_entity("project", rng.choice(V.FLAGSHIP_PROJECTS))
        self.work_projects: list[list[_Entity]] = []
        for _ in self.employers:
            self.work_projects.append(
                [
                    self.new_entity(
                        "project",
                        _make_name("project", rng, self.used_names),
                        status=rng.choice(("active", "active", "planning")),
                    )
                    for _ in range(5)
                ]
            )
        for tool, purpose in V.TOOLS:
            self.new_entity("tool", tool, purpose=purpose)
        for _ in range(60):
            self.new_entity("concept", _make_name("concept", rng, self.used_names))
        # People: per employer a manager and three colleagues, plus friends and family.
        self.colleagues: list[list[_Entity]] = []
        for employer in self.employers:
            people = []
            for j in range(4):
                name = _make_name("person", rng, self.used_names)
                role = "engineering manager" if j == 0 else rng.choice(V.ROLES_ENGINEERING[:12])
                people.append(
                    self.new_entity(
                        "person", name, first=name.split()[0], org=employer.idx, role=role
                    )
                )
            self.colleagues.append(people)
        self.friends = []
        for relation in (None, None, "sister"):
            name = _make_name("person", rng, self.used_names)
            lives = self.home if relation is None else self.entities[rng.choice(places[2:])]
            self.friends.append(
                self.new_entity(
                    "person", name, first=name.split()[0], role=rng.choice(V.ROLES_OTHER),
                    city=lives.idx, relation=relation,
                )
            )  # fmt: skip
        shared = rng.choice(V.SHARED_NAMES)
        self.sam_colleague = self.new_entity(
            "person", shared, key=f"{_slug(shared)}_colleague", first=shared.split()[0],
            org=self.employers[0].idx, role="data engineer",
        )  # fmt: skip
        self.sam_neighbour = self.new_entity(
            "person", shared, key=f"{_slug(shared)}_neighbour", first=shared.split()[0],
            city=self.home.idx, role=rng.choice(V.ROLES_OTHER),
        )  # fmt: skip
        self.curated_count = len(self.entities)

    # ------------------------------------------------------------------ the owner's timeline

    def _claim(self, index: int, special: tuple[Any, ...]) -> tuple[int, int]:
        """Put ``special`` into the first free memory slot at or after session ``index``."""
        for sp in self.sessions[index:]:
            slot = sp.free_slot()
            if slot is not None:
                sp.specials[slot] = special
                return sp.index, slot
        sp = self.sessions[-1]  # a tiny history: squeeze it in as an extra memory
        sp.n_memory += 1
        sp.n_blocks += 1
        sp.specials[sp.n_memory - 1] = special
        return sp.index, sp.n_memory - 1

    def _plan_events(self, rng: random.Random) -> None:
        """Place the changing facts: each event in its own session, in time order."""
        days = self.config.days
        late_gap = dt.timedelta(days=min(35, max(2, days // 5)))
        promoted = self.day(0.38)
        schedule = [
            ("intro", self.start),
            ("project_planning", self.day(0.08)),
            ("restated_employer", self.day(0.15)),
            ("project_active", self.day(0.22)),
            ("employer_2", self.day(0.30)),
            # The move away is told late, after the move back was: a dream in between has
            # merged the two statements of the home city, and the late one must split them.
            ("move_away", self.day(0.92)),
            ("project_paused", self.day(0.52)),
            ("role_late", promoted + late_gap),
            ("employer_3", self.day(0.70)),
            ("project_shipped", self.day(0.78)),
            ("move_back", self.day(0.85)),
        ]
        schedule.sort(key=lambda item: item[1])
        self.events: dict[str, tuple[int, int, dt.datetime]] = {}  # key -> session, slot, valid
        previous = -1
        for key, when in schedule:
            index = min(self.session_at(when, after=previous), len(self.sessions) - 1)
            index = max(index, min(previous + 1, len(self.sessions) - 1))
            index, slot = self._claim(index, ("event", key))
            previous = index
            valid = _midnight(self.sessions[index].start)
            if key == "role_late":
                valid = min(promoted, valid)
            if key == "move_away":
                valid = _midnight(self.sessions[self.session_at(self.day(0.45))].start)
            self.events[key] = (index, slot, valid)
        self.hired_at = self.start - dt.timedelta(days=730 + rng.randrange(300))
        self.moved_in_at = self.start - dt.timedelta(days=1460 + rng.randrange(700))
        # Curated colleagues are introduced in the sessions after the owner joins.
        joins = [0, self.events["employer_2"][0], self.events["employer_3"][0]]
        for join, people in zip(joins, self.colleagues, strict=True):
            for j, person in enumerate(people):
                target = min(join + 1 + 2 * j, len(self.sessions) - 1)
                self.sessions[target].fresh.append(person.idx)
        for person in self.friends:
            target = rng.randrange(max(1, len(self.sessions) * 3 // 10))
            self.sessions[target].fresh.append(person.idx)

    def event_triple_id(self, key: str, n: int = 0) -> str:
        index, slot, _ = self.events[key]
        return f"tri_{self.tag}_{index:06d}_e{slot}{n}"

    def _plan_same_name(self, rng: random.Random) -> None:
        n = len(self.sessions)
        self.same_name_blocks: dict[str, list[str]] = {"colleague": [], "neighbour": []}
        for which, fraction in (("colleague", 0.05), ("neighbour", 0.12)):
            index, slot = self._claim(
                self.session_at(self.day(fraction)), ("same_name", which, True)
            )
            self.same_name_blocks[which].append(self.sessions[index].memory_block_id(slot))
            notes = max(2, round(n * 0.012))
            for _ in range(notes):
                if index + 1 >= n:
                    break
                target = rng.randrange(index + 1, n)
                where = self._claim(target, ("same_name", which, False))
                self.same_name_blocks[which].append(
                    self.sessions[where[0]].memory_block_id(where[1])
                )

    # ------------------------------------------------------------------ attitudes and skills

    def _plan_attitudes(self, rng: random.Random) -> None:
        n = len(self.sessions)
        changing = set(rng.sample(ATTITUDE_CATEGORIES, 4))
        three = set(rng.sample(sorted(changing), 1))
        self.attitudes: dict[str, list[dict[str, Any]]] = {}
        for category in ATTITUDE_CATEGORIES:
            versions = 3 if category in three else (2 if category in changing else 1)
            statements = rng.sample(V.ATTITUDE_STATEMENTS[category], versions)
            bounds = [(0.0, 0.2), (0.35, 0.65), (0.75, 0.95)]
            chain: list[dict[str, Any]] = []
            last = -1
            for v in range(versions):
                lo, hi = bounds[v]
                index = max(last + 1, rng.randrange(int(lo * n), max(int(lo * n) + 1, int(hi * n))))
                index = min(index, n - 1)
                last = index
                sp = self.sessions[index]
                evidence = sorted({sp.index, *(rng.randrange(index + 1) for _ in range(2))})
                chain.append(
                    {
                        "id": f"att_{self.tag}_{category}_{v + 1}",
                        "statement": f"{self.owner_first} {statements[v]}",
                        "created_at": sp.end,
                        "session": index,
                        "evidence": [self.sessions[i].id for i in evidence],
                        "confidence": round(rng.uniform(0.6, 0.92), 2),
                    }
                )
                sp.attitudes.append((category, v))
                slot = sp.free_slot()
                if slot is not None:
                    sp.specials[slot] = ("attitude", category, v)
            for older, newer in pairwise(chain):
                older["superseded_at"] = newer["created_at"]
                newer["previous_id"] = older["id"]
            self.attitudes[category] = chain

    def _plan_skills(self, rng: random.Random) -> None:
        """Python constantly, Scala only early (stopped months ago), Rust exactly once."""
        e2 = self.events["employer_2"][2]
        e3 = self.events["employer_3"][2]
        stop_scala = self.day(0.18)
        n = len(self.sessions)
        rust_session = rng.randrange(int(n * 0.45), max(int(n * 0.45) + 1, int(n * 0.65)))
        rust_session = min(rust_session, n - 1)
        self.skill_counts: dict[str, int] = {}
        self.skill_last: dict[str, dt.datetime] = {}
        for sp in self.sessions:
            t = sp.start
            f = (t - self.start) / (self.end - self.start)
            chances = {
                "Python": 0.85,
                "SQL": 0.4,
                "Scala": 0.45 if t < stop_scala else 0.0,
                "Dagster": 0.4 if t >= e2 else 0.0,
                "TypeScript": 0.1,
                "Terraform": 0.07,
                "Go": 0.08 if t >= e3 else 0.0,
                "Docker": 0.15,
                "Kubernetes": 0.12 if t >= e3 else 0.0,
                "DuckDB": 0.05 + 0.25 * f,
                "Bash": 0.12,
            }
            used = [skill for skill, p in chances.items() if rng.random() < p]
            if sp.index == rust_session:
                used.append("Rust")
            sp.skills = tuple(used)
            for skill in used:
                self.skill_counts[skill] = self.skill_counts.get(skill, 0) + 1
                self.skill_last[skill] = sp.end

    # ------------------------------------------------------------------ duplicates and bloat

    def _memory_total(self) -> int:
        return sum(sp.n_memory for sp in self.sessions)

    def _plan_near_duplicates(self, rng: random.Random) -> None:
        n = len(self.sessions)
        members_wanted = round(NEAR_DUPLICATE_SHARE * self._memory_total())
        self.dup_groups: list[list[str]] = []
        members = 0
        attempts = 0
        while members < members_wanted and attempts < members_wanted * 4 and n > 1:
            attempts += 1
            size = rng.choices((2, 3, 4), (5, 3, 2))[0]
            index = rng.randrange(n - 1)
            chosen: list[int] = []
            for _ in range(size):
                if chosen:
                    index = chosen[-1] + rng.randint(1, max(2, min(40, n // 6)))
                while index < n and self.sessions[index].free_slot() is None:
                    index += 1
                if index >= n:
                    break
                chosen.append(index)
            if len(chosen) < 2:
                continue
            g = len(self.dup_groups)
            ids = []
            for m, index in enumerate(chosen):
                sp = self.sessions[index]
                slot = sp.free_slot()
                assert slot is not None
                sp.specials[slot] = ("dup", g, m, len(chosen))
                ids.append(sp.memory_block_id(slot))
            self.dup_groups.append(ids)
            members += len(chosen)

    def _plan_bloat(self, rng: random.Random) -> None:
        n = len(self.sessions)
        wanted = max(1, round(BLOAT_SHARE * self._memory_total()))
        self.bloated: list[str] = []
        self.long_bloated: list[str] = []
        for _ in range(wanted * 4):
            if len(self.bloated) >= wanted:
                break
            sp = self.sessions[rng.randrange(n)]
            slot = sp.free_slot()
            if slot is None:
                continue
            long = rng.random() < 0.35 or not self.long_bloated
            sp.specials[slot] = ("bloat", long)
            self.bloated.append(sp.memory_block_id(slot))
            if long:
                self.long_bloated.append(sp.memory_block_id(slot))

    # ------------------------------------------------------------------ recalls and feedback

    def _plan_reinforcement(self) -> None:
        """Two plain memories of the earliest session that has two: the first is returned by a
        recall of every session in the last ``REINFORCED_DAYS`` days, the second by none."""
        self.reinforced: str | None = None
        self.twin: str | None = None
        self.reinforce_from = self.end - dt.timedelta(days=REINFORCED_DAYS)
        for sp in self.sessions:
            if sp.start >= self.reinforce_from:
                return
            plain = [slot for slot in range(sp.n_memory) if slot not in sp.specials]
            if len(plain) >= 2:
                self.reinforced = sp.memory_block_id(plain[0])
                self.twin = sp.memory_block_id(plain[1])
                return

    def _plan_recalls(self, rng: random.Random) -> None:
        """Random recalls per session plus a few signatures that keep failing (gaps)."""
        n = len(self.sessions)
        for sp in self.sessions:
            sp.recalls = [("random",) for _ in range(_binomial(rng, 3, 0.4))]
        candidates: list[tuple[str, _Entity]] = [
            ("howto", self.flagship),
            ("person_lookup", self.sam_colleague),
            ("dependency_lookup", self.work_projects[0][0]),
        ]
        pool = [e for e in self.entities[: self.curated_count] if e.etype in ("project", "tool")]
        pool += [e for e in self.entities[: self.curated_count] if e.etype == "concept"]
        rng.shuffle(pool)
        intents = {"project": ("howto", "dependency_lookup"), "tool": ("tool_usage",)}
        for ent in pool:
            if ent.idx in (self.flagship.idx, self.work_projects[0][0].idx):
                continue
            intent = rng.choice(intents.get(ent.etype, ("concept_lookup",)))
            candidates.append((intent, ent))
        count = min(len(candidates), max(3, round(n / 60)))
        self.gaps: list[RecallGap] = []
        placed: list[tuple[str, _Entity, list[int]]] = []
        for intent, ent in candidates[:count]:
            fails = min(rng.choice((2, 2, 3, 3, 4)), max(2, n // 2))
            low = min(n // 10, max(0, n - fails))
            sessions = sorted(rng.sample(range(low, n), min(fails, n - low)))
            for index in sessions:
                sp = self.sessions[index]
                sp.recalls.insert(rng.randint(0, len(sp.recalls)), ("gap", intent, ent.idx))
            placed.append((intent, ent, sessions))
        for intent, ent, sessions in placed:  # times are known once every recall is placed
            last = dt.datetime.min
            for index in sessions:
                sp = self.sessions[index]
                for k, recall in enumerate(sp.recalls):
                    if recall[1:] == (intent, ent.idx):
                        last = max(last, self.recall_time(sp, k))
            self.gaps.append(
                RecallGap(
                    signature=recall_signature(intent, [ent.id]),
                    intent_label=intent,
                    entities=(ent.id,),
                    fail_count=len(sessions),
                    last_fail_at=last,
                )
            )

    @staticmethod
    def recall_time(sp: _SessionPlan, k: int) -> dt.datetime:
        seconds = (sp.end - sp.start).total_seconds() * (k + 1) / (len(sp.recalls) + 1)
        return sp.start + dt.timedelta(seconds=int(seconds) + 1)

    def _plan_feedback(self, rng: random.Random) -> None:
        n = len(self.sessions)
        wanted = max(4, round(n * 0.05))
        bloated = set(self.bloated)
        self.feedback_by_block: dict[str, float] = {}
        for _ in range(wanted):
            index = rng.randrange(n)
            sp = self.sessions[index]
            targets = [b for b in self.bloated if int(b.split("_")[2]) <= index]
            if targets and rng.random() < 0.3:
                target, value = rng.choice(targets), -1.0
            else:
                source = self.sessions[rng.randint(max(0, index - 5), index)]
                target = source.memory_block_id(rng.randrange(source.n_memory))
                value = 1.0 if rng.random() < 0.75 else -1.0
            if target in (self.reinforced, self.twin) or any(
                target == t for t, _, _ in sp.feedback
            ):
                continue
            if target in bloated and value < 0:
                note = "too long, split this"
            else:
                notes = V.FEEDBACK_NOTES_UP if value > 0 else V.FEEDBACK_NOTES_DOWN[1:]
                note = rng.choice(notes)
            sp.feedback.append((target, value, note))
            self.feedback_by_block[target] = self.feedback_by_block.get(target, 0.0) + value

    # ------------------------------------------------------------------ truth

    def _truth(self) -> GroundTruth:
        ev = self.events
        emp = self.employers
        acme_ids = (self.event_triple_id("intro", 0), self.event_triple_id("restated_employer"))
        employer_timeline = [
            Span(emp[0].name, self.hired_at, ev["employer_2"][2], emp[0].id, acme_ids),
            Span(emp[1].name, ev["employer_2"][2], ev["employer_3"][2], emp[1].id,
                 (self.event_triple_id("employer_2"),)),
            Span(emp[2].name, ev["employer_3"][2], None, emp[2].id,
                 (self.event_triple_id("employer_3"),)),
        ]  # fmt: skip
        city_timeline = [
            Span(self.home.name, self.moved_in_at, ev["move_away"][2], self.home.id,
                 (self.event_triple_id("intro", 2),)),
            Span(self.away.name, ev["move_away"][2], ev["move_back"][2], self.away.id,
                 (self.event_triple_id("move_away"),)),
            Span(self.home.name, ev["move_back"][2], None, self.home.id,
                 (self.event_triple_id("move_back"),)),
        ]  # fmt: skip
        roles = V.OWNER_ROLES
        role_timeline = [
            Span(roles[0], self.hired_at, ev["role_late"][2], None,
                 (self.event_triple_id("intro", 1),)),
            Span(roles[1], ev["role_late"][2], ev["employer_3"][2], None,
                 (self.event_triple_id("role_late"),)),
            Span(roles[2], ev["employer_3"][2], None, None, (self.event_triple_id("employer_3", 1),)),
        ]  # fmt: skip
        keys = ("project_planning", "project_active", "project_paused", "project_shipped")
        status_timeline = [
            Span(
                status,
                ev[key][2],
                ev[keys[i + 1]][2] if i + 1 < len(keys) else None,
                None,
                (self.event_triple_id(key),),
            )
            for i, (status, key) in enumerate(zip(PROJECT_STATUSES, keys, strict=True))
        ]
        late = LateFact(
            triple_id=self.event_triple_id("role_late"),
            predicate="has_role",
            value=roles[1],
            valid_at=ev["role_late"][2],
            created_at=self.event_time("role_late"),
        )
        restated = RestatedFact(
            original_id=acme_ids[0],
            restated_id=acme_ids[1],
            original_object=emp[0].name,
            restated_object=self.restated_name,
            entity_id=emp[0].id,
        )
        preference_versions = {
            category: [
                PreferenceVersion(
                    attitude_id=v["id"],
                    statement=v["statement"],
                    created_at=v["created_at"],
                    superseded_at=v.get("superseded_at"),
                    previous_id=v.get("previous_id"),
                )
                for v in chain
            ]
            for category, chain in self.attitudes.items()
        }
        return GroundTruth(
            config=self.config,
            start=self.start,
            end=self.end,
            owner_id=self.owner.id,
            owner_name=self.owner.name,
            sessions=len(self.sessions),
            blocks=sum(sp.n_blocks for sp in self.sessions),
            memory_blocks=self._memory_total(),
            session_ids=(self.sessions[0].id, self.sessions[-1].id),
            employer_timeline=employer_timeline,
            city_timeline=city_timeline,
            role_timeline=role_timeline,
            project_id=self.flagship.id,
            project_name=self.flagship.name,
            project_status_timeline=status_timeline,
            late_fact=late,
            late_move=LateFact(
                triple_id=self.event_triple_id("move_away"),
                predicate="lives_in",
                value=self.away.name,
                valid_at=ev["move_away"][2],
                created_at=self.event_time("move_away"),
            ),
            restated_fact=restated,
            near_duplicate_groups=[tuple(g) for g in self.dup_groups],
            bloated_blocks=list(self.bloated),
            long_bloated_blocks=list(self.long_bloated),
            preference_versions=preference_versions,
            skill_use_counts=dict(sorted(self.skill_counts.items())),
            skill_last_used=dict(sorted(self.skill_last.items())),
            recall_gaps=list(self.gaps),
            same_name_people=SameNamePeople(
                name=self.sam_colleague.name,
                colleague_id=self.sam_colleague.id,
                neighbour_id=self.sam_neighbour.id,
                colleague_blocks=tuple(self.same_name_blocks["colleague"]),
                neighbour_blocks=tuple(self.same_name_blocks["neighbour"]),
            ),
            feedback_by_block=self.feedback_by_block,
            reinforced_block=self.reinforced,
            untouched_twin=self.twin,
        )

    def event_time(self, key: str) -> dt.datetime:
        index, slot, _ = self.events[key]
        sp = self.sessions[index]
        return sp.block_time(_memory_positions(sp.n_blocks, sp.n_memory)[slot])

    def owner_state(self, when: dt.datetime) -> tuple[_Entity, _Entity]:
        """The owner's employer and city at ``when`` (valid time)."""
        ev = self.events
        if when >= ev["employer_3"][2]:
            employer = self.employers[2]
        elif when >= ev["employer_2"][2]:
            employer = self.employers[1]
        else:
            employer = self.employers[0]
        away = ev["move_away"][2] <= when < ev["move_back"][2]
        return employer, self.away if away else self.home


# =========================================================================== rendering

#: New entities per session by type (expected values); the pool grows with the history.
_GROWTH: dict[str, float] = {
    "person": 0.75,
    "concept": 1.0,
    "project": 0.22,
    "organization": 0.16,
    "tool": 0.1,
    "place": 0.07,
}
_RANDOM_FACTS: dict[str, float] = {
    "knows": 0.16,
    "uses_tool": 0.16,
    "depends_on": 0.16,
    "works_on": 0.14,
    "interested_in": 0.12,
    "related_to": 0.14,
    "located_in": 0.04,
    "restate_person": 0.08,
}
_ENTITY_SLOTS: dict[str, str] = {
    "person": "person",
    "person2": "person",
    "org": "organization",
    "project2": "project",
    "tool": "tool",
    "tool2": "tool",
    "concept": "concept",
    "concept2": "concept",
    "place": "place",
}
_INTENT_FOR_TYPE: dict[str, str] = {
    "person": "person_lookup",
    "project": "project_status",
    "tool": "tool_usage",
    "concept": "concept_lookup",
}

#: (subject, predicate, object text, object entity, valid time when not "as of the statement")
_Fact = tuple[_Entity, str, str, "_Entity | None", "dt.datetime | None"]


class _Draft:
    """One block being written: slot values, the entities it names and the facts it states."""

    __slots__ = ("ents", "facts", "mentions", "values")

    def __init__(self, values: dict[str, str] | None = None) -> None:
        self.values: dict[str, str] = values if values is not None else {}
        self.ents: dict[str, _Entity] = {}
        self.mentions: dict[int, _Entity] = {}
        self.facts: list[_Fact] = []

    def mention(self, ent: _Entity) -> None:
        self.mentions[ent.idx] = ent


class _Renderer:
    """Streams the records of a plan; all state lives here so each run starts fresh."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.rng = random.Random(_mix(plan.seed, 2))
        self.tag = plan.tag
        self.entities: list[_Entity] = list(plan.entities)
        self.used_names = set(plan.used_names)
        self.emitted = bytearray(len(self.entities))
        self.pools: dict[str, list[int]] = {t: [] for t in ENTITY_TYPES}
        self.colleagues_of: dict[int, list[int]] = {}
        # The owner and the same-name pair appear only where their context is written; the
        # side project only once it is planned.
        special = {
            plan.owner.idx,
            plan.sam_colleague.idx,
            plan.sam_neighbour.idx,
            plan.flagship.idx,
        }
        scheduled = {i for sp in plan.sessions for i in sp.fresh}
        for ent in self.entities:
            if ent.idx not in special and ent.idx not in scheduled:
                self._add_to_pool(ent)
        self.text_hashes: set[int] = set()
        self.recent_memories: deque[str] = deque(maxlen=64)
        self.blocks_of: dict[int, list[str]] = {}
        self.dup_props: dict[int, tuple[str, dict[str, Any]]] = {}
        self.dup_keys: set[tuple[Any, ...]] = set()
        self.counters = {t: 0 for t in ENTITY_TYPES}
        self.place_queue = [c for c in V.CITIES if canonical_name(c[0]) not in self.used_names]
        self._slot_fillers = self._literal_fillers()
        self.fresh: list[int] = []
        self.tool_index = {e.name: e.idx for e in self.entities if e.etype == "tool"}

    # ------------------------------------------------------------------ entity pool

    def _add_to_pool(self, ent: _Entity) -> None:
        self.pools[ent.etype].append(ent.idx)
        if ent.etype == "person" and ent.org is not None:
            self.colleagues_of.setdefault(ent.org, []).append(ent.idx)

    def _create(self, etype: str, sp: _SessionPlan) -> _Entity:
        """A synthesized entity with attributes that all later facts agree with."""
        rng = self.rng
        if etype == "place" and self.place_queue:  # real cities first, then made-up towns
            name = self.place_queue.pop(rng.randrange(len(self.place_queue)))[0]
        else:
            name = _make_name(etype, rng, self.used_names)
        self.used_names.add(canonical_name(name))
        self.counters[etype] += 1
        ent = _Entity(
            idx=len(self.entities),
            id=f"ent_{self.tag}_{etype}_{self.counters[etype]:06d}",
            name=name,
            etype=etype,
        )
        if etype == "person":
            ent.first = name.split()[0]
            if rng.random() < 0.12:
                ent.role = rng.choice(V.ROLES_OTHER)
                ent.city = self._pick_idx("place")
            else:
                ent.role = rng.choice(V.ROLES_ENGINEERING)
                employer, _ = self.plan.owner_state(sp.start)
                orgs = self.pools["organization"]
                ent.org = employer.idx if rng.random() < 0.35 or not orgs else rng.choice(orgs)
                if rng.random() < 0.3:
                    ent.city = self._pick_idx("place")
        elif etype == "organization":
            ent.kind = rng.choice(V.ORG_KINDS)
            ent.city = self._pick_idx("place")
        elif etype == "project":
            ent.status = rng.choices(PROJECT_STATUSES, (2, 6, 1, 1))[0]
        elif etype == "tool":
            ent.purpose = rng.choice(V.GENERIC_PURPOSES)
        elif etype == "place":
            ent.country = rng.choice(V.CITIES)[1]
        self.entities.append(ent)
        self.emitted.append(0)
        return ent

    def _pick_idx(self, etype: str, avoid: Container[int] = ()) -> int:
        """Popular early entities, recent ones, and a uniform tail: a realistic mix."""
        pool = self.pools[etype]
        rng = self.rng
        for _ in range(8):
            u = rng.random()
            if u < 0.35:
                idx = pool[rng.randrange(min(len(pool), 24))]
            elif u < 0.7:
                idx = pool[len(pool) - 1 - rng.randrange(min(len(pool), 150))]
            else:
                idx = pool[rng.randrange(len(pool))]
            if idx not in avoid:
                return idx
        return idx

    # ------------------------------------------------------------------ slots

    def _literal_fillers(self) -> dict[str, Callable[[_Draft], str]]:
        rng = self.rng

        def func(_: _Draft) -> str:
            return f"{rng.choice(V.FUNC_VERBS)}_{rng.choice(V.FUNC_NOUNS)}"

        def file(_: _Draft) -> str:
            stem = rng.choice(V.CODE_MODULES)
            if rng.random() < 0.4:
                stem = f"{stem}_{rng.choice(V.FUNC_NOUNS)}"
            return f"{rng.choice(V.CODE_DIRS)}/{stem}{rng.choice(V.CODE_EXTENSIONS)}"

        def n2(d: _Draft) -> str:
            return str(int(self._value("k", d)) + rng.randint(2, 10))

        return {
            "func": func,
            "file": file,
            "n2": n2,
            "test": lambda d: f"test_{func(d)}",
            "module": lambda _: rng.choice(V.CODE_MODULES),
            "table": lambda _: rng.choice(V.TABLES),
            "col": lambda _: rng.choice(V.COLUMNS),
            "endpoint": lambda _: rng.choice(V.ENDPOINTS),
            "cmd": lambda _: rng.choice(V.COMMANDS),
            "weekday": lambda _: rng.choice(V.WEEKDAYS),
            "meeting": lambda _: rng.choice(V.MEETINGS),
            "clock": lambda _: rng.choice(V.CLOCK_TIMES),
            "metric": lambda _: rng.choice(V.METRICS),
            "error_short": lambda _: rng.choice(V.ERROR_SHORT),
            "n": lambda _: str(rng.randint(2, 400)),
            "k": lambda _: str(rng.randint(2, 9)),
            "loc": lambda _: str(rng.randrange(400, 3000, 10)),
            "mib": lambda _: str(rng.choice((256, 512, 768, 1024, 1536, 2048, 4096))),
            "ms": lambda _: str(rng.randrange(20, 5000, 10)),
            "pct": lambda _: str(rng.randint(3, 95)),
            "batch": lambda _: str(rng.choice((100, 250, 500, 1000, 2000, 5000))),
            "rows": lambda _: f"{rng.randint(12, 990)}k",
            "version": lambda _: f"v{rng.randint(1, 4)}.{rng.randint(0, 24)}.{rng.randint(0, 9)}",
            "sha": lambda _: f"{rng.getrandbits(28):07x}",
            "branch": lambda _: f"{rng.choice(V.BRANCH_PREFIXES)}/{func(_).replace('_', '-')}",
            "flag": lambda _: f"enable_{rng.choice(V.FUNC_NOUNS)}_{rng.choice(V.FUNC_VERBS)}",
            "error": lambda d: self._fill(rng.choice(V.ERRORS), d),
            "met": lambda d: self._fill(rng.choice(V.MET_CONTEXTS), d),
            "purpose": lambda _: rng.choice(V.GENERIC_PURPOSES),
            "item": lambda _: rng.choice(V.NEIGHBOUR_ITEMS),
            "trade": lambda _: rng.choice(V.TRADES),
            "gathering": lambda _: rng.choice(V.GATHERINGS),
        }

    def _value(self, name: str, d: _Draft) -> str:
        value = d.values.get(name)
        if value is None:
            value = self._slot(name, d)
            d.values[name] = value
        return value

    def _entity_slot(self, name: str, d: _Draft) -> _Entity:
        ent = d.ents.get(name)
        if ent is None:
            self._value(name, d)
            ent = d.ents[name]
        return ent

    def _slot(self, name: str, d: _Draft) -> str:
        plan = self.plan
        if name in ("owner", "owner_first"):
            d.ents["owner"] = plan.owner
            d.mention(plan.owner)
            return plan.owner.name if name == "owner" else plan.owner_first
        if name.endswith("_first"):
            return self._entity_slot(name[: -len("_first")], d).first
        if name in ("project", "employer", "city"):  # what the session is about
            ent = {
                "project": self.session_project,
                "employer": self.session_employer,
                "city": self.session_city,
            }[name]
            d.ents[name] = ent
            d.mention(ent)
            return ent.name
        etype = _ENTITY_SLOTS.get(name)
        if etype is not None:
            ent = self._choose(etype, d)
            d.ents[name] = ent
            d.mention(ent)
            return ent.name
        if name.startswith("x_"):
            return self._attribute(name, d)
        filler = self._slot_fillers.get(name)
        if filler is None:
            raise KeyError(f"no filler for slot {name!r}")
        return filler(d)

    def _choose(self, etype: str, d: _Draft) -> _Entity:
        """Prefer this session's not-yet-introduced entities, then the pool."""
        for i, idx in enumerate(self.fresh):
            ent = self.entities[idx]
            if ent.etype == etype and idx not in d.mentions:
                del self.fresh[i]
                self._add_to_pool(ent)
                return ent
        avoid = d.mentions.keys()
        if etype == "person":
            employer, _ = self.plan.owner_state(self.session.start)
            mates = self.colleagues_of.get(employer.idx)
            if mates and self.rng.random() < 0.5:
                for _ in range(4):
                    idx = self.rng.choice(mates)
                    if idx not in avoid:
                        return self.entities[idx]
        if not self.pools[etype]:  # nobody of that kind known yet: meet someone
            ent = self._create(etype, self.session)
            self._add_to_pool(ent)
            return ent
        return self.entities[self._pick_idx(etype, avoid)]

    def _attribute(self, name: str, d: _Draft) -> str:
        ent = d.ents["x"]
        attr = name[2:]
        if attr in ("org", "city"):
            target = self.entities[getattr(ent, attr)]
            d.ents[name] = target
            d.mention(target)
            return target.name
        value = getattr(ent, attr)
        return str(value)

    def _fill(self, template: str, d: _Draft) -> str:
        for name in _fields(template):
            if name not in d.values:
                d.values[name] = self._slot(name, d)
        return template.format_map(d.values)

    def _facts(self, codes: Iterable[str], d: _Draft) -> None:
        for code in codes:
            predicate, subj, obj = _parse_fact(code)
            subject = d.ents[subj] if subj != "owner" else self.plan.owner
            target = d.ents.get(obj) if obj != "owner" else self.plan.owner
            text = target.name if target is not None else d.values[obj]
            d.facts.append((subject, predicate, text, target, None))

    # ------------------------------------------------------------------ random facts

    def _random_fact(self, d: _Draft) -> str:
        """A stable fact (often about several objects) as a sentence; records it in ``d``."""
        rng, plan = self.rng, self.plan
        kind = rng.choices(list(_RANDOM_FACTS), list(_RANDOM_FACTS.values()))[0]
        many = rng.choices((1, 2, 3), (2, 3, 3))[0]
        owner = plan.owner
        if kind == "restate_person":
            person = self._choose("person", d)
            options: list[tuple[str, str | None, _Entity | None]] = [
                ("has_role", person.role, None)
            ]
            if person.org is not None:
                org = self.entities[person.org]
                options.append(("works_at", org.name, org))
            if person.city is not None:
                city = self.entities[person.city]
                options.append(("lives_in", city.name, city))
            predicate, text, target = rng.choice(options)
            assert text is not None
            d.mention(person)
            if target is not None:
                d.mention(target)
            d.facts.append((person, predicate, text, target, None))
            return self._pick_template(V.FACT_TEMPLATES[predicate]).format(s=person.name, o=text)
        if kind == "located_in":
            org = self._choose("organization", d)
            if org.city is None:
                kind = "uses_tool"
            else:
                city = self.entities[org.city]
                d.mention(org)
                d.mention(city)
                d.facts.append((org, "located_in", city.name, city, None))
                sentence = self._pick_template(V.FACT_TEMPLATES["located_in"])
                return sentence.format(s=org.name, o=city.name)
        subject_type, object_type = {
            "knows": ("person", "person"),
            "uses_tool": ("person", "tool"),
            "depends_on": ("project", "tool"),
            "works_on": ("person", "project"),
            "interested_in": ("person", "concept"),
            "related_to": (rng.choice(("concept", "project")), "concept"),
        }[kind]
        if subject_type == "person" and rng.random() < 0.3:
            subject = owner
        else:
            subject = self._choose(subject_type, d)
        d.mention(subject)
        objects: list[_Entity] = []
        for _ in range(many):
            obj = self._choose(object_type, d)
            if kind == "depends_on" and obj.name in V.PERSONAL_TOOLS:
                continue  # nobody's service depends on an editor
            if obj.idx == subject.idx or any(o.idx == obj.idx for o in objects):
                continue
            objects.append(obj)
            d.mention(obj)
            d.facts.append((subject, kind, obj.name, obj, None))
        if not objects:
            return self._random_fact(d)
        sentence = self._pick_template(V.FACT_TEMPLATES[kind])
        sentence = sentence.format(s=subject.name, o=_join([o.name for o in objects]))
        return _cap(sentence) if subject.etype == "concept" else sentence

    # ------------------------------------------------------------------ blocks

    def _pick_template(self, options: tuple[str, ...]) -> str:
        """A random template, avoiding the ones this session already used (less repetition)."""
        rng, used = self.rng, self.used_templates
        for _ in range(4):
            template = options[rng.randrange(len(options))]
            if template not in used:
                break
        used.add(template)
        return template

    def _unique(self, text: str) -> bool:
        """Claim ``text``; False when an earlier block already said exactly this."""
        key = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
        if key in self.text_hashes:
            return False
        self.text_hashes.add(key)
        return True

    def _dated(self, text: str) -> str:
        """Make a text that keeps coming out the same unique by saying when it was noted."""
        when = self.session.start
        for suffix in (f"{when:%d %b}", f"{when:%d %b, %H:%M}", self.session.id):
            candidate = f"{text} (noted {suffix})"
            if self._unique(candidate):
                return candidate
        return candidate  # pragma: no cover - session ids are unique

    def _turn(self, kind: str, sp: _SessionPlan) -> _Draft:
        rng = self.rng
        table = V.USER_TURNS if kind == "user_turn" else V.ASSISTANT_TURNS
        for _ in range(6):
            d = _Draft()
            text = self._fill(self._pick_template(table[sp.task]), d)
            p_fact = 0.85 if kind == "user_turn" else 0.6
            if rng.random() < p_fact:
                leads = V.USER_FACT_LEADS if kind == "user_turn" else V.ASSISTANT_FACT_LEADS
                text = f"{text} {rng.choice(leads)}{self._random_fact(d)}."
                if rng.random() < 0.4:
                    text = f"{text} {self._random_fact(d)}."
            if self._unique(text):
                d.values["text"] = text
                return d
        d.values["text"] = self._dated(text)
        return d

    def _memory(self, sp: _SessionPlan, slot: int) -> tuple[_Draft, tuple[str, ...]]:
        special = sp.specials.get(slot)
        if special is not None:
            return self._special(special, sp)
        if self.fresh:
            ent = self.entities[self.fresh.pop(0)]
            self._add_to_pool(ent)
            return self._intro(ent), (ent.etype,)
        rng = self.rng
        for _ in range(6):
            d = _Draft()
            lead = rng.choice(V.MEMORY_LEADS)
            if rng.random() < 0.65:
                text = f"{lead}{self._random_fact(d)}."
                if rng.random() < 0.6:
                    text = f"{text} {self._random_fact(d)}."
                tags: tuple[str, ...] = ("fact",)
            else:
                note = self._fill(self._pick_template(V.MEMORY_NOTES), d)
                text = f"{lead}{note}" if lead not in ("Note: ", "") else note
                tags = ("note",)
            if self._unique(text):
                d.values["text"] = text
                return d, tags
        d.values["text"] = self._dated(text)
        return d, tags

    def _intro(self, ent: _Entity) -> _Draft:
        rng = self.rng
        group = "family" if ent.relation else ent.etype
        options = [
            (template, facts)
            for template, facts in V.INTRO_TEMPLATES[group]
            if all(
                getattr(ent, f[2:]) is not None
                for f in _fields(template)
                if f.startswith("x_") and f != "x_first"
            )
        ]
        template, facts = rng.choice(options)
        d = _Draft()
        d.ents["x"] = ent
        d.values["x"] = ent.name
        d.mention(ent)
        if ent.etype == "person":
            d.values["x_first"] = ent.first
        text = self._fill(template, d)
        self._facts(facts, d)
        d.values["text"] = text if self._unique(text) else self._dated(text)
        return d

    def _special(
        self, special: tuple[Any, ...], sp: _SessionPlan
    ) -> tuple[_Draft, tuple[str, ...]]:
        kind = special[0]
        if kind == "event":
            return self._event(special[1], sp), ("fact", "event")
        if kind == "same_name":
            return self._same_name(special[1], special[2]), ("person",)
        if kind == "attitude":
            return self._attitude_memory(special[1], special[2]), ("preference",)
        if kind == "dup":
            return self._duplicate(special[1], special[2], special[3]), ("note",)
        if kind == "bloat":
            return self._bloat(special[1]), ("note",)
        raise ValueError(f"unknown special {kind!r}")  # pragma: no cover

    def _event(self, key: str, sp: _SessionPlan) -> _Draft:
        plan = self.plan
        d = _Draft()
        owner = plan.owner
        emp = plan.employers
        _, _, valid = plan.events[key]
        values: dict[str, str] = {"flagship": plan.flagship.name}
        facts: list[tuple[str, str, _Entity | None, dt.datetime]] = []
        roles = V.OWNER_ROLES
        if key == "intro":
            values.update(role=roles[0], employer=emp[0].name, city=plan.home.name)
            facts += [
                ("works_at", emp[0].name, emp[0], plan.hired_at),
                ("has_role", roles[0], None, plan.hired_at),
                ("lives_in", plan.home.name, plan.home, plan.moved_in_at),
            ]
        elif key == "restated_employer":
            values["employer_alias"] = plan.restated_name
            facts.append(("works_at", plan.restated_name, emp[0], valid))
            d.mention(emp[0])
        elif key.startswith("project_"):
            status = key.removeprefix("project_")
            facts.append(("project_status", status, None, valid))
            if status == "planning":
                facts.append(("works_on", plan.flagship.name, plan.flagship, valid))
                self._add_to_pool(plan.flagship)
            d.mention(plan.flagship)
            if status == "planning":
                concept = self._entity_slot("concept", d)
                values["concept"] = concept.name
            if status == "paused":
                values["employer"] = self.session_employer.name
                d.mention(self.session_employer)
        elif key in ("employer_2", "employer_3"):
            new, old = (emp[1], emp[0]) if key == "employer_2" else (emp[2], emp[1])
            values.update(employer=new.name, old_employer=old.name, role=roles[2])
            facts.append(("works_at", new.name, new, valid))
            if key == "employer_3":
                facts.append(("has_role", roles[2], None, valid))
            d.mention(old)
        elif key == "role_late":
            values.update(role=roles[1], valid_date=f"{valid:%d %B}")
            facts.append(("has_role", roles[1], None, valid))
        elif key in ("move_away", "move_back"):
            new, old = (plan.away, plan.home) if key == "move_away" else (plan.home, plan.away)
            values.update(
                city=new.name,
                old_city=old.name,
                country=new.country or "",
                valid_date=f"{valid:%d %B}",
            )
            facts.append(("lives_in", new.name, new, valid))
            d.mention(old)
        d.values.update(values)
        text = self._fill(V.EVENT_TEMPLATES[key], d)
        d.mention(owner)
        for _, _, target, _ in facts:
            if target is not None:
                d.mention(target)
        d.values["text"] = text if self._unique(text) else self._dated(text)
        d.values["__event__"] = key
        d.facts = [
            (self.plan.flagship if p == "project_status" else owner, p, o, t, v)
            for p, o, t, v in facts
        ]
        return d

    def _same_name(self, which: str, intro: bool) -> _Draft:
        """The colleague or the neighbour, always with the context that tells them apart."""
        plan = self.plan
        sam = plan.sam_colleague if which == "colleague" else plan.sam_neighbour
        org = self.entities[sam.org] if sam.org is not None else None
        city = self.entities[sam.city] if sam.city is not None else None
        fixed = {"sam": sam.name, "sam_role": sam.role or ""}
        if org is not None:
            fixed["sam_org"] = org.name
        if city is not None:
            fixed["sam_city"] = city.name
        options = (V.SAME_NAME_INTROS[which],) if intro else V.SAME_NAME_NOTES[which]
        for _ in range(6):
            d = _Draft(dict(fixed))
            template = self.rng.choice(options)
            text = self._fill(template, d)
            if self._unique(text):
                break
        else:
            text = self._dated(text)
        d.mention(sam)
        for ent, slot in ((org, "{sam_org}"), (city, "{sam_city}")):
            if ent is not None and slot in template:
                d.mention(ent)
        if intro:
            d.facts.append((sam, "has_role", fixed["sam_role"], None, None))
            if org is not None:
                d.facts.append((sam, "works_at", org.name, org, None))
            if city is not None:
                d.facts.append((sam, "lives_in", city.name, city, None))
            d.facts.append((plan.owner, "knows", sam.name, sam, None))
        d.values["text"] = text
        return d

    def _attitude_memory(self, category: str, version: int) -> _Draft:
        plan = self.plan
        statement = plan.attitudes[category][version]["statement"]
        d = _Draft()
        d.values.update(category=category.replace("_", " "), statement=statement.split(" ", 1)[1])
        text = self._fill(self.rng.choice(V.ATTITUDE_MEMORY), d)
        d.facts.append((plan.owner, "prefers", d.values["statement"], None, None))
        d.values["text"] = text if self._unique(text) else self._dated(text)
        return d

    def _duplicate(self, group: int, member: int, size: int) -> _Draft:
        """One wording of a proposition that other sessions say in other words."""
        prop = self.dup_props.get(group)
        if prop is None:
            prop = self._proposition()
            self.dup_props[group] = prop
        kind, values = prop
        frames = V.PARAPHRASES[kind]
        order = values["__order__"]
        d = _Draft({k: v for k, v in values.items() if not k.startswith("__")})
        for ent in values["__mentions__"]:
            d.mention(ent)
        d.values.update(owner=self.plan.owner.name, owner_first=self.plan.owner_first)
        frame = frames[order[member]]
        if "{owner" in frame:
            d.mention(self.plan.owner)
        text = frame.format_map(d.values)
        if frame.startswith(("{setting}", "{meeting}")):
            text = _cap(text)
        d.values["text"] = text if self._unique(text) else self._dated(text)
        if member == size - 1:
            del self.dup_props[group]
        return d

    def _proposition(self) -> tuple[str, dict[str, Any]]:
        """Something worth saying more than once, never the same thing as another group."""
        rng = self.rng
        for _ in range(50):
            kind = rng.choice(list(V.PARAPHRASES))
            values: dict[str, Any] = {}
            mentions: list[_Entity] = []
            if kind == "tool_pref":
                a, b, purpose = rng.choice(V.TOOL_RIVALS)
                values.update(a=a, b=b, purpose=purpose)
                key: tuple[Any, ...] = (kind, a)
                for name in (a, b):
                    idx = self.tool_index.get(name)
                    if idx is not None:
                        mentions.append(self.entities[idx])
            elif kind == "runbook":
                project = self.entities[self._pick_idx("project")]
                action = rng.choice(V.RUNBOOK_ACTIONS)
                values.update(
                    project=project.name, action=action, cmd=rng.choice(V.COMMANDS),
                    when=rng.choice(V.RUNBOOK_WHEN),
                )  # fmt: skip
                key, mentions = (kind, project.idx, action), [project]
            elif kind == "expert":
                person = self.entities[self._pick_idx("person")]
                concept = self.entities[self._pick_idx("concept")]
                values.update(person=person.name, person_first=person.first, concept=concept.name)
                key, mentions = (kind, concept.idx), [person, concept]
            elif kind == "schedule":
                meeting = rng.choice(V.MEETINGS)
                values.update(
                    meeting=meeting, weekday=rng.choice(V.WEEKDAYS), clock=rng.choice(V.CLOCK_TIMES)
                )
                key = (kind, meeting)
            elif kind == "setting":
                project = self.entities[self._pick_idx("project")]
                setting, value, reason = rng.choice(V.SETTINGS)
                value = value.format(
                    n=rng.randint(2, 64),
                    batch=rng.choice((200, 500, 1000)),
                    ms=rng.randrange(500, 30000, 500),
                )
                values.update(project=project.name, setting=setting, value=value, reason=reason)
                key, mentions = (kind, project.idx, setting), [project]
            else:  # quiet_hours: there is only one such rule
                values["clock"] = rng.choice(V.CLOCK_TIMES[:5])
                key = (kind,)
            if key in self.dup_keys:
                continue
            self.dup_keys.add(key)
            order = list(range(len(V.PARAPHRASES[kind])))
            rng.shuffle(order)
            values["__order__"] = order
            values["__mentions__"] = mentions
            return kind, values
        raise RuntimeError("ran out of near-duplicate propositions")  # pragma: no cover

    def _bloat(self, long: bool) -> _Draft:
        """Several topics run together in one memory, well over the split threshold."""
        rng = self.rng
        d = _Draft()
        limit = BLOAT_LONG_CHARS if long else BLOAT_MIN_CHARS
        opening = f"Session notes ({self.session.start:%d %b}, {self.session_project.name}): "
        d.mention(self.session_project)
        parts = [opening + self._random_fact(d) + "."]
        sentences = list(V.BLOAT_SENTENCES)
        rng.shuffle(sentences)
        size = len(parts[0])
        i = 0
        while size <= limit + rng.randint(20, 400):
            if i < len(sentences):
                scratch = _Draft()
                scratch.mentions = d.mentions
                part = self._fill(sentences[i], scratch)
            else:
                part = self._random_fact(d) + "."
            i += 1
            parts.append(part)
            size += len(part) + 1
        text = " ".join(parts)
        d.values["text"] = text if self._unique(text) else self._dated(text)
        return d

    # ------------------------------------------------------------------ records

    def _ref(self, ent: _Entity, when: dt.datetime, out: list[Record]) -> None:
        if self.emitted[ent.idx]:
            return
        self.emitted[ent.idx] = 1
        out.append(
            EntityRecord(
                id=ent.id,
                name=ent.name,
                entity_type=ent.etype,
                aliases=list(ent.aliases),
                created_at=when,
            )
        )

    def records(self) -> Iterator[Record]:
        for sp in self.plan.sessions:
            yield from self._session(sp)

    def _session(self, sp: _SessionPlan) -> list[Record]:
        """All records of one session, referenced things first."""
        plan, rng = self.plan, self.rng
        self.session = sp
        self.used_templates: set[str] = set()
        self.fresh = list(sp.fresh)
        for etype, rate in _GROWTH.items():
            for _ in range(_binomial(rng, 3, rate / 3)):
                self.fresh.append(self._create(etype, sp).idx)
        new_here = list(self.fresh)
        self.session_employer, self.session_city = plan.owner_state(sp.start)
        self.session_project = self._session_project(sp, self.session_employer)
        entities: list[Record] = []
        blocks: list[Record] = []
        mentions: list[Record] = []
        triples: list[Record] = []
        self._ref(plan.owner, sp.start, entities)
        self._ref(self.session_project, sp.start, entities)
        memory_slot = 0
        triple_no = 0
        session_memories: list[tuple[str, list[int]]] = []
        for k, kind in enumerate(_layout(sp.n_blocks, sp.n_memory)):
            when = sp.block_time(k)
            block_id = sp.block_id(k)
            if kind == "memory":
                draft, tags = self._memory(sp, memory_slot)
                event_slot = memory_slot
                memory_slot += 1
                importance = round(rng.uniform(0.4, 0.9), 2)
                if "__event__" in draft.values:
                    importance = round(rng.uniform(0.8, 0.95), 2)
                access = int(rng.expovariate(0.35))
                last_access = when + (plan.end - when) * rng.random() ** 2 if access else None
                block = BlockRecord(
                    id=block_id,
                    session_id=sp.id,
                    kind="memory",
                    text=draft.values["text"],
                    importance=importance,
                    pinned=draft.values.get("__event__") == "intro",
                    tags=list(tags),
                    created_at=when,
                    last_accessed_at=last_access,
                    access_count=access,
                )
                session_memories.append((block_id, list(draft.mentions)))
            else:
                draft = self._turn(kind, sp)
                event_slot = -1
                block = BlockRecord(
                    id=block_id,
                    session_id=sp.id,
                    kind=kind,
                    role="user" if kind == "user_turn" else "assistant",
                    text=draft.values["text"],
                    importance=round(rng.uniform(0.15, 0.4), 2),
                    tags=[sp.task],
                    created_at=when,
                )
            blocks.append(block)
            for ent in draft.mentions.values():
                self._ref(ent, sp.start, entities)
                mentions.append(
                    MentionRecord(
                        entity=ent.id, block_id=block_id, session_id=sp.id, mentioned_at=when
                    )
                )
            for n, (subject, predicate, obj, target, valid) in enumerate(draft.facts):
                if valid is None:  # said now, true now
                    triple_id = f"tri_{self.tag}_{sp.index:06d}_{triple_no:03d}"
                    triple_no += 1
                    confidence = round(rng.uniform(0.7, 0.95), 2)
                else:  # the owner's timeline: ids the ground truth can name in advance
                    triple_id = f"tri_{self.tag}_{sp.index:06d}_e{event_slot}{n}"
                    confidence = 0.95
                triples.append(
                    TripleRecord(
                        id=triple_id,
                        subject=subject.id,
                        predicate=predicate,
                        object=obj,
                        object_id=target.id if target is not None else None,
                        valid_at=valid or when,
                        created_at=when,
                        source_session=sp.id,
                        source_block=block_id,
                        confidence=confidence,
                    )
                )
        # Whatever was planned for this session but not named stays known for later sessions.
        for idx in self.fresh:
            self._add_to_pool(self.entities[idx])
        self.fresh = []
        head = _Draft()
        title = self._fill(rng.choice(V.TASK_TITLES[sp.task]), head)
        session = SessionRecord(
            id=sp.id,
            source=sp.source,
            started_at=sp.start,
            ended_at=sp.end,
            title=title,
            project=self.session_project.name,
            metadata={"generator": "memvault_demo", "task": sp.task, "seed": plan.seed},
        )
        recalls = self._recalls(sp, new_here, entities)
        for block_id, idxs in session_memories:
            self.recent_memories.append(block_id)
            for idx in idxs:
                recent = self.blocks_of.setdefault(idx, [])
                recent.append(block_id)
                if len(recent) > 3:
                    del recent[0]
        feedback = [
            FeedbackRecord(
                target_id=target,
                kind="thumbs",
                value=value,
                session_id=sp.id,
                note=note,
                created_at=sp.end,
            )
            for target, value, note in sp.feedback
        ]
        attitudes = [self._attitude_record(category, v) for category, v in sp.attitudes]
        skills = [self._skill_record(skill, sp) for skill in sp.skills]
        return [session, *entities, *blocks, *mentions, *triples, *recalls, *feedback,
                *attitudes, *skills]  # fmt: skip

    def _session_project(self, sp: _SessionPlan, employer: _Entity) -> _Entity:
        plan, rng = self.plan, self.rng
        u = rng.random()
        flagship_live = (
            plan.events["project_planning"][0] < sp.index <= plan.events["project_shipped"][0]
        )
        if u < 0.15 and flagship_live:
            return plan.flagship
        if u < 0.6:
            which = plan.employers.index(employer)
            return rng.choice(plan.work_projects[which])
        for i, idx in enumerate(self.fresh):
            if self.entities[idx].etype == "project":
                del self.fresh[i]
                self._add_to_pool(self.entities[idx])
                return self.entities[idx]
        return self.entities[self._pick_idx("project")]

    def _recalls(
        self, sp: _SessionPlan, new_here: list[int], entities: list[Record]
    ) -> list[Record]:
        plan, rng = self.plan, self.rng
        out: list[Record] = []
        fresh_for_failure = [
            i for i in new_here if self.emitted[i] and self.entities[i].etype in _INTENT_FOR_TYPE
        ]
        for k, recall in enumerate(sp.recalls):
            when = plan.recall_time(sp, k)
            if recall[0] == "gap":
                _, intent, idx = recall
                ent = self.entities[idx]
                verdict: Verdict = "INCORRECT"
                results = list(self.recent_memories)[-2:]
            else:
                u = rng.random()
                if u < 0.06 and fresh_for_failure:
                    ent = self.entities[
                        fresh_for_failure.pop(rng.randrange(len(fresh_for_failure)))
                    ]
                    intent = _INTENT_FOR_TYPE[ent.etype]
                    verdict = "INCORRECT"
                    results = list(self.recent_memories)[-1:]
                else:
                    intent = rng.choice(list(V.RECALL_QUERIES))
                    verdict = "AMBIGUOUS" if u > 0.92 else "CORRECT"
                    for _ in range(4):  # people ask about what they have talked about
                        ent = self._recall_entity(intent)
                        results = list(self.blocks_of.get(ent.idx, ()))[-3:]
                        if results:
                            break
                    if not results:
                        results = list(self.recent_memories)[-2:]
                        verdict = "AMBIGUOUS"
            results = [r for r in results if r != plan.twin]
            if k == 0 and plan.reinforced and sp.start >= plan.reinforce_from:
                results = [plan.reinforced, *(r for r in results if r != plan.reinforced)]
            self._ref(ent, sp.start, entities)
            query = rng.choice(V.RECALL_QUERIES[intent]).format(
                e=ent.name,
                owner=plan.owner.name,
                owner_first=plan.owner_first,
                topic=rng.choice(V.PREFERENCE_TOPICS),
            )
            out.append(
                RecallRecord(
                    query=query,
                    intent_label=intent,
                    entities=[ent.id],
                    result_ids=results,
                    verdict=verdict,
                    session_id=sp.id,
                    created_at=when,
                )
            )
        return out

    def _recall_entity(self, intent: str) -> _Entity:
        plan = self.plan
        if intent in ("employer_lookup", "location_lookup", "preference_lookup"):
            return plan.owner
        etype = {
            "project_status": "project",
            "person_lookup": "person",
            "dependency_lookup": "project",
            "howto": "project",
            "tool_usage": "tool",
            "concept_lookup": "concept",
        }[intent]
        if etype == "project" and self.emitted[plan.flagship.idx] and self.rng.random() < 0.3:
            return plan.flagship
        return self.entities[self._pick_idx(etype)]

    def _attitude_record(self, category: str, version: int) -> AttitudeRecord:
        v = self.plan.attitudes[category][version]
        superseded = v.get("superseded_at")
        return AttitudeRecord(
            id=v["id"],
            category=category,
            statement=v["statement"],
            confidence=v["confidence"],
            weight=0.5 ** (len(self.plan.attitudes[category]) - 1 - version),
            evidence=v["evidence"],
            created_at=v["created_at"],
            superseded_at=superseded,
            previous_id=v.get("previous_id"),
        )

    def _skill_record(self, skill: str, sp: _SessionPlan) -> SkillUseRecord:
        plan, rng = self.plan, self.rng
        base, growth = V.SKILLS[skill]
        f = (sp.start - plan.start) / (plan.end - plan.start)
        proficiency = min(0.98, max(0.05, base + growth * f + rng.uniform(-0.05, 0.05)))
        d = _Draft()
        evidence = self._fill(rng.choice(V.SKILL_EVIDENCE[skill]), d)
        return SkillUseRecord(
            skill=skill,
            proficiency=round(proficiency, 2),
            session_id=sp.id,
            evidence=evidence,
            used_at=sp.end,
        )
