"""A synthetic but realistic memory history with known answers, for tests, benchmarks and demos.

``generate(DemoConfig())`` returns a record stream (the JSONL interchange
records of :mod:`memvault.records`) and the :class:`GroundTruth` a correct
pipeline should reach on it. It lives beside the core package, not inside it: ``memvault``
never imports it; ``memvault demo``, the tests and the benchmarks do.
"""

from __future__ import annotations

from memvault_demo.generator import (
    ENTITY_TYPES,
    PREDICATES,
    PROJECT_STATUSES,
    DemoConfig,
    DemoHistory,
    GroundTruth,
    LateFact,
    PredicateSpec,
    PreferenceVersion,
    RecallGap,
    RestatedFact,
    SameNamePeople,
    Span,
    generate,
    recall_signature,
    write_jsonl,
)

__all__ = [
    "ENTITY_TYPES",
    "PREDICATES",
    "PROJECT_STATUSES",
    "DemoConfig",
    "DemoHistory",
    "GroundTruth",
    "LateFact",
    "PredicateSpec",
    "PreferenceVersion",
    "RecallGap",
    "RestatedFact",
    "SameNamePeople",
    "Span",
    "generate",
    "recall_signature",
    "write_jsonl",
]
