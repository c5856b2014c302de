"""Settings of the entity graph (design.md E1–E5): signal weights, threshold, priors, Leiden, PageRank.

Defaults are the E2 weights of docs/design.md. Everything is plain data, so the whole model
loads from a dict (Dagster run config, a YAML file, an environment variable
holding JSON) with ``GraphConfig.model_validate(...)``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SIGNALS: tuple[str, ...] = (
    "co_occurrence",
    "session_overlap",
    "adamic_adar",
    "type_affinity",
    "semantic_similarity",
)

ENTITY_TYPES: tuple[str, ...] = ("person", "organization", "place", "project", "tool", "concept")

#: How strongly a pair of entity types is expected to belong together, before any evidence.
#: Symmetric; the pairs reflect the relations people actually state about them (works_at,
#: works_on, depends_on, related_to, ...). person–place is a weaker prior than person–person:
#: living in a city says less about a person than knowing someone does.
DEFAULT_TYPE_AFFINITY: dict[str, float] = {
    "person|person": 0.6,
    "organization|person": 0.8,
    "person|place": 0.4,
    "person|project": 0.8,
    "person|tool": 0.5,
    "concept|person": 0.5,
    "organization|organization": 0.3,
    "organization|place": 0.7,
    "organization|project": 0.6,
    "organization|tool": 0.5,
    "concept|organization": 0.4,
    "place|place": 0.3,
    "place|project": 0.2,
    "place|tool": 0.1,
    "concept|place": 0.2,
    "project|project": 0.5,
    "project|tool": 0.8,
    "concept|project": 0.7,
    "tool|tool": 0.5,
    "concept|tool": 0.7,
    "concept|concept": 0.7,
}


def affinity_key(a: str, b: str) -> str:
    """The key of an unordered type pair: ``"a|b"`` with the names sorted."""
    return "|".join(sorted((a, b)))


class SignalWeights(BaseModel):
    """E2: the composite weight is the weighted sum of the five signals (weights sum to 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    co_occurrence: float = Field(default=0.25, ge=0, le=1)
    session_overlap: float = Field(default=0.20, ge=0, le=1)
    adamic_adar: float = Field(default=0.20, ge=0, le=1)
    type_affinity: float = Field(default=0.15, ge=0, le=1)
    semantic_similarity: float = Field(default=0.20, ge=0, le=1)

    @model_validator(mode="after")
    def _sum_to_one(self) -> SignalWeights:
        total = sum(self.as_dict().values())
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(f"signal weights must sum to 1, they sum to {total:.6g}")
        return self

    def as_dict(self) -> dict[str, float]:
        return {name: float(getattr(self, name)) for name in SIGNALS}


class DiscoveryConfig(BaseModel):
    """Thresholds of surprise discovery (docs/discovery.md): what counts as surprising enough
    to be put in the discovery inbox."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bridge_percentile: float = Field(
        default=0.9,
        ge=0,
        le=1,
        description=(
            "A new edge between two communities is a cross_community discovery only when its "
            "composite weight is at or above this quantile of the run's connected weights."
        ),
    )
    indirect_min_score: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description=(
            "indirect_strong: least cosine of two entities' weighted neighbourhoods (through "
            "non-hub neighbours) for a pair with no edge of its own."
        ),
    )
    indirect_min_common: int = Field(
        default=2, ge=1, description="indirect_strong: least number of shared neighbours."
    )
    indirect_max_middle_degree: int = Field(
        default=50,
        ge=2,
        description=(
            "indirect_strong: a neighbour with more connected edges than this (a hub such as "
            "the owner) links everything to everything and is not counted as a shared one."
        ),
    )
    indirect_top_k: int = Field(
        default=10, ge=0, description="indirect_strong: at most this many pairs per dream."
    )
    gap_min_peers: int = Field(
        default=4,
        ge=1,
        description=(
            "knowledge_gap: least number of other entities of the same type in the community "
            "for their facts to say what this one lacks."
        ),
    )
    gap_min_share: float = Field(
        default=0.75,
        gt=0,
        le=1,
        description=(
            "knowledge_gap: least share of those peers holding a current fact of a predicate "
            "for its absence to be a gap."
        ),
    )
    gap_top_k: int = Field(
        default=20, ge=0, description="knowledge_gap: at most this many gaps per dream."
    )


class GraphConfig(BaseModel):
    """Tunables of edges (E1/E2/E5), communities (E3) and centrality (E4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: SignalWeights = Field(default_factory=lambda: SignalWeights.model_validate({}))
    connect_threshold: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description=(
            "composite_weight at or above which an edge is connected, else pending. On the "
            "10k-session demo history a pair co-mentioned once scores 0.27 (median; 90th "
            "percentile 0.32) and a pair co-mentioned three or more times 0.40 (median): 0.35 "
            "keeps one-off co-mentions pending unless other signals back them."
        ),
    )
    co_occurrence_saturation: int = Field(
        default=32,
        ge=1,
        description=(
            "Shared blocks at which co_occurrence reaches 1: log1p(n)/log1p(this), capped. A fixed "
            "scale (not the store's busiest pair) keeps each edge's value its own, so one new "
            "mention of a hub does not rescale every edge in an incremental run."
        ),
    )
    adamic_adar_half: float = Field(
        default=2.0,
        gt=0,
        description=(
            "Raw Adamic–Adar score mapped to 0.5: normalized = raw / (raw + this). Local for the "
            "same reason as co_occurrence_saturation; 2.0 ≈ three shared neighbours of degree 20."
        ),
    )
    type_affinity: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_TYPE_AFFINITY),
        description="Prior per unordered entity-type pair, keys 'type|type' (either order).",
    )
    default_type_affinity: float = Field(
        default=0.3, ge=0, le=1, description="Prior for a type pair the matrix does not name."
    )
    embedding_model: str | None = Field(
        default=None,
        description=(
            "Model whose entity vectors give semantic_similarity; None: the model with the most "
            "entity vectors. Entities without a vector get semantic_similarity 0."
        ),
    )
    write_tolerance: float = Field(
        default=1.5e-3,
        ge=0,
        description=(
            "How far (weighted sum of absolute signal differences, the composite's scale) a "
            "stored edge may be from what a full recompute would give. Of it, drift_tolerance "
            "is what an incremental run may leave unapplied; a recomputed edge is rewritten "
            "only when its status changes or its signals moved by more than the rest."
        ),
    )
    drift_tolerance: float = Field(
        default=5e-4,
        ge=0,
        le=0.5,
        description=(
            "The part of write_tolerance (at most all of it) that the drift an incremental run "
            "leaves unapplied may use on an edge it does not recompute: the growth of its ends' "
            "session counts and of its common neighbours' degrees, bounded per pair "
            "(graph/drift.py); past it the edge is recomputed. 0 makes incremental runs exact."
        ),
    )
    resolution: float = Field(default=1.0, gt=0, description="Leiden resolution (RBConfiguration).")
    seed: int = Field(default=42, description="Leiden seed: same graph, same communities.")
    leiden_iterations: int = Field(
        default=-1, description="-1: iterate until the partition is stable."
    )
    damping: float = Field(default=0.85, gt=0, lt=1, description="PageRank damping.")
    recent_sessions: int = Field(
        default=10,
        ge=1,
        description=(
            "Default personalized-PageRank seeds: the entities mentioned in this many most recent "
            "sessions (what the owner is into now)."
        ),
    )

    discovery: DiscoveryConfig = Field(
        default_factory=lambda: DiscoveryConfig.model_validate({}),
        description="Thresholds of surprise discovery (cross_community, indirect_strong, "
        "knowledge_gap).",
    )

    @field_validator("type_affinity", mode="before")
    @classmethod
    def _symmetric(cls, value: Any) -> dict[str, float]:
        """Accept 'a|b' keys in either order or a nested mapping; reject asymmetric duplicates."""
        if not isinstance(value, Mapping):
            raise ValueError("type_affinity must be a mapping of 'type|type' to a number")
        flat: dict[str, float] = {}
        for key, item in value.items():
            if isinstance(item, Mapping):  # nested form {"person": {"place": 0.4}}
                pairs = [(str(key), str(k2), v2) for k2, v2 in item.items()]
            else:
                parts = str(key).split("|")
                if len(parts) != 2 or not all(p.strip() for p in parts):
                    raise ValueError(f"type_affinity key {key!r} is not 'type|type'")
                pairs = [(parts[0], parts[1], item)]
            for a, b, raw in pairs:
                prior = float(raw)
                if not 0 <= prior <= 1:
                    raise ValueError(f"type_affinity {a}|{b} = {prior} is outside 0..1")
                name = affinity_key(a.strip(), b.strip())
                if name in flat and not math.isclose(flat[name], prior):
                    raise ValueError(
                        f"type_affinity {name} is given twice with different values "
                        f"({flat[name]} and {prior}); the matrix is symmetric"
                    )
                flat[name] = prior
        return flat

    def affinity(self, a: str, b: str) -> float:
        return self.type_affinity.get(affinity_key(a, b), self.default_type_affinity)

    def drift_budget(self) -> float:
        """What unapplied drift may move an edge by (drift_tolerance, within write_tolerance)."""
        return min(self.drift_tolerance, self.write_tolerance)

    def rewrite_above(self) -> float:
        """A recomputed edge that moved by at most this keeps its stored values."""
        return self.write_tolerance - self.drift_budget()

    def edge_fingerprint(self) -> str:
        """Hash of what determines stored edge values: a change forces a full recompute."""
        relevant = self.model_dump(
            include={
                "weights",
                "connect_threshold",
                "co_occurrence_saturation",
                "adamic_adar_half",
                "type_affinity",
                "default_type_affinity",
            }
        )
        return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]
