"""Grounding definitions (design.md L2): what each canonical predicate means, and the triples that break them.

Conflict resolution reads the definitions to settle the obvious cases by rule
(T6: a functional, volatile predicate has one object at a time, the later
``valid_at`` wins); the lint reads :func:`grounding_violations` to report
triples whose predicate is unknown or whose subject, object or value does not
fit the definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, cast

import polars as pl
import yaml

from memvault.errors import MemvaultError
from memvault.store import Store
from memvault.store.queries.triples import believed_triples_with_types

Cardinality = Literal["functional", "multi"]
Volatility = Literal["volatile", "stable"]
ValueType = Literal["entity", "text", "enum", "date", "number"]

DEFAULT_PATH = Path(__file__).with_name("predicates.yaml")
LITERAL = "literal"
_VALUE_TYPES = ("entity", "text", "enum", "date", "number")
_FIELDS = {
    "description",
    "domain",
    "range",
    "value_type",
    "cardinality",
    "volatility",
    "preference",
    "allowed",
    "acyclic",
    "evidence",
}
_NUMBER = r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$"
_DATE = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$"


class GroundingError(MemvaultError):
    """The grounding definitions file is malformed."""


@dataclass(frozen=True)
class PredicateDef:
    """One canonical predicate: what it may connect and how it behaves over time."""

    name: str
    description: str
    domain: tuple[str, ...]
    range: tuple[str, ...]  # entity types, or ("literal",)
    value_type: ValueType
    cardinality: Cardinality
    volatility: Volatility
    preference: bool = False
    allowed: tuple[str, ...] | None = None
    acyclic: bool = False  # the lint reports a cycle (a reports_to b reports_to a)
    #: Words a text that states the predicate uses ("joined", "job" for works_at): an
    #: extracted fact's block must hold one of them, or a word of the predicate's name.
    evidence: tuple[str, ...] = ()

    @property
    def is_functional(self) -> bool:
        return self.cardinality == "functional"

    @property
    def is_volatile(self) -> bool:
        return self.volatility == "volatile"

    @property
    def object_is_literal(self) -> bool:
        return self.range == (LITERAL,)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (the judge sees it as the predicate's definition, T1)."""
        return {
            "name": self.name,
            "description": self.description,
            "domain": list(self.domain),
            "range": list(self.range),
            "value_type": self.value_type,
            "cardinality": self.cardinality,
            "volatility": self.volatility,
            "preference": self.preference,
            "allowed": list(self.allowed) if self.allowed is not None else None,
        }


def _as_tuple(value: Any, where: str, field: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise GroundingError(f"{where}: `{field}` must be a name or a non-empty list of names")
    return tuple(i.strip().lower() for i in items)


def _parse(name: str, spec: Any, source: str) -> PredicateDef:
    where = f"{source}: predicate {name!r}"
    if not isinstance(spec, dict):
        raise GroundingError(f"{where}: expected a mapping of fields")
    unknown = set(spec) - _FIELDS
    missing = {"domain", "range", "cardinality", "volatility"} - set(spec)
    if unknown:
        raise GroundingError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    if missing:
        raise GroundingError(f"{where}: missing field(s) {', '.join(sorted(missing))}")
    if spec["cardinality"] not in ("functional", "multi"):
        raise GroundingError(f"{where}: cardinality must be functional or multi")
    if spec["volatility"] not in ("volatile", "stable"):
        raise GroundingError(f"{where}: volatility must be volatile or stable")
    range_ = _as_tuple(spec["range"], where, "range")
    if LITERAL in range_ and len(range_) > 1:
        raise GroundingError(f"{where}: range is either `literal` or entity types, not both")
    value_type = spec.get("value_type") or ("text" if range_ == (LITERAL,) else "entity")
    if value_type not in _VALUE_TYPES:
        raise GroundingError(f"{where}: value_type must be one of {', '.join(_VALUE_TYPES)}")
    if (value_type == "entity") != (range_ != (LITERAL,)):
        raise GroundingError(f"{where}: value_type entity goes with an entity range only")
    allowed = spec.get("allowed")
    if allowed is not None:
        allowed = _as_tuple(
            [str(a) for a in allowed] if isinstance(allowed, list) else allowed, where, "allowed"
        )
    return PredicateDef(
        name=name,
        description=str(spec.get("description") or name.replace("_", " ")),
        domain=_as_tuple(spec["domain"], where, "domain"),
        range=range_,
        value_type=cast(ValueType, value_type),
        cardinality=spec["cardinality"],
        volatility=spec["volatility"],
        preference=bool(spec.get("preference", False)),
        allowed=allowed,
        acyclic=bool(spec.get("acyclic", False)),
        evidence=tuple(str(spec.get("evidence") or "").split()),
    )


@dataclass(frozen=True)
class Grounding:
    """The loaded definitions, by predicate name."""

    predicates: dict[str, PredicateDef]
    source: str = str(DEFAULT_PATH)

    @classmethod
    def load(cls, path: Path | None = None) -> Grounding:
        """The definitions in ``path`` (default: the packaged ``predicates.yaml``)."""
        return _load(path.resolve() if path is not None else DEFAULT_PATH)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> Grounding:
        predicates = data.get("predicates") if isinstance(data, dict) else None
        if not isinstance(predicates, dict) or not predicates:
            raise GroundingError(f"{source}: expected a top-level `predicates:` mapping")
        return cls({n: _parse(n, s, source) for n, s in predicates.items()}, source)

    def __contains__(self, name: object) -> bool:
        return name in self.predicates

    def __len__(self) -> int:
        return len(self.predicates)

    def get(self, name: str) -> PredicateDef | None:
        return self.predicates.get(name)

    def is_functional(self, name: str) -> bool:
        """True for a known functional predicate; unknown predicates are never treated as functional."""
        found = self.predicates.get(name)
        return found is not None and found.is_functional

    def frame(self) -> pl.DataFrame:
        """One row per predicate, for joins in vectorized checks."""
        schema: dict[str, pl.DataType] = {
            "predicate": pl.Utf8(),
            "domain": pl.List(pl.Utf8),
            "range": pl.List(pl.Utf8),
            "value_type": pl.Utf8(),
            "functional": pl.Boolean(),
            "volatile": pl.Boolean(),
            "preference": pl.Boolean(),
            "allowed": pl.List(pl.Utf8),
        }
        rows = [
            {
                "predicate": p.name,
                "domain": list(p.domain),
                "range": list(p.range),
                "value_type": p.value_type,
                "functional": p.is_functional,
                "volatile": p.is_volatile,
                "preference": p.preference,
                "allowed": list(p.allowed) if p.allowed is not None else None,
            }
            for p in self.predicates.values()
        ]
        return pl.DataFrame(rows, schema=schema)


@lru_cache(maxsize=8)
def _load(path: Path) -> Grounding:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GroundingError(f"cannot read grounding definitions {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise GroundingError(f"{path} is not valid YAML: {exc}") from exc
    return Grounding.from_dict(data, str(path))


# -- the lint's L2 check -------------------------------------------------------------------

_VIOLATION_SCHEMA = {"triple_id": pl.Utf8, "predicate": pl.Utf8, "problem": pl.Utf8}


def _joined(names: pl.Expr) -> pl.Expr:
    return names.list.join(", ")


def grounding_violations(
    store: Store, grounding: Grounding | None = None, triple_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Triples that break the grounding definitions: one row per problem (empty = pass).

    Checked for every triple that is not merged away, held for review or invalidated by a
    person (the store does not believe those): the predicate is defined;
    the subject is an entity of a type in the domain; the object is an entity of
    a type in the range, or a literal where the range is ``literal``; a literal
    has the value type and one of the allowed values.

    ``triple_ids``: only those triples (an incremental night's changed facts).
    """
    grounding = grounding or Grounding.load()
    if triple_ids is None:
        triples = believed_triples_with_types(store)
    elif triple_ids:
        triples = believed_triples_with_types(store, sorted(set(triple_ids)))
    else:
        triples = pl.DataFrame()
    if triples.is_empty():
        return pl.DataFrame(schema=_VIOLATION_SCHEMA)
    triples = triples.cast(
        {c: pl.Utf8 for c in triples.columns}  # an all-NULL column arrives untyped
    ).join(grounding.frame(), on="predicate", how="left")
    known = pl.col("value_type").is_not_null()
    literal_range = pl.col("range").list.first() == LITERAL
    is_literal = pl.col("object_id").is_null()
    value = (
        pl.col("object").str.normalize("NFKC").str.to_lowercase().str.strip_chars(" \t\n.,;:!?\"'")
    )
    checks: list[tuple[pl.Expr, pl.Expr]] = [
        (
            ~known,
            pl.format("unknown predicate '{}' (not in the grounding definitions)", "predicate"),
        ),
        (
            known & pl.col("subject_type").is_null(),
            pl.format("subject {} is not a known entity", "subject_id"),
        ),
        (
            known
            & pl.col("subject_type").is_not_null()
            & ~pl.col("domain").list.contains(pl.col("subject_type")),
            pl.format(
                "subject type '{}' not in domain ({})", "subject_type", _joined(pl.col("domain"))
            ),
        ),
        (
            known & ~literal_range & is_literal,
            pl.format(
                "literal '{}' where an entity of type {} is required",
                "object",
                _joined(pl.col("range")),
            ),
        ),
        (
            known & ~literal_range & ~is_literal & pl.col("object_type").is_null(),
            pl.format("object {} is not a known entity", "object_id"),
        ),
        (
            known
            & ~literal_range
            & pl.col("object_type").is_not_null()
            & ~pl.col("range").list.contains(pl.col("object_type")),
            pl.format(
                "object type '{}' not in range ({})", "object_type", _joined(pl.col("range"))
            ),
        ),
        (
            known & literal_range & ~is_literal,
            pl.format("object is the entity {} where a literal value is expected", "object_id"),
        ),
        (
            known
            & literal_range
            & (pl.col("value_type") == "number")
            & ~value.str.contains(_NUMBER),
            pl.format("value '{}' is not a number", "object"),
        ),
        (
            known & literal_range & (pl.col("value_type") == "date") & ~value.str.contains(_DATE),
            pl.format("value '{}' is not a date (YYYY-MM-DD)", "object"),
        ),
        (
            known
            & literal_range
            & pl.col("allowed").is_not_null()
            & ~pl.col("allowed").list.contains(value),
            pl.format("value '{}' not allowed ({})", "object", _joined(pl.col("allowed"))),
        ),
    ]
    found = [
        triples.filter(condition.fill_null(False)).select(
            "triple_id", "predicate", message.alias("problem")
        )
        for condition, message in checks
    ]
    return pl.concat(found).sort("triple_id", "problem")
