"""The impact score of a proposed change: how much of the memory it would move (0 to 1).

    impact = 0.30 · centrality + 0.20 · dependents + 0.30 · layer + 0.20 · retires_current

* ``centrality`` — the subject's personalized-PageRank percentile among active
  entities (0: peripheral, 1: the most central);
* ``dependents`` — facts resting on the subject (as subject or object),
  ``log(1 + n) / log(1 + 50)`` capped at 1;
* ``layer`` — 1 when the change touches the attitude or skill layer (how the
  owner wants things done), else 0;
* ``retires_current`` — 1 when the change ends or merges away a value that
  holds now, else 0.

A change with a high impact needs more than a confident judge before it is
applied (see :mod:`memvault.review.policy`).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from memvault.store import Store
from memvault.store.queries.graph import centrality_rank
from memvault.store.queries.review import subject_of_row
from memvault.store.queries.triples import dependent_fact_count

WEIGHTS = {"centrality": 0.30, "dependents": 0.20, "layer": 0.30, "retires_current": 0.20}
DEPENDENTS_SCALE = 50


class ImpactInputs(BaseModel):
    """What the impact score is computed from (kept with the queued item, so it is explained)."""

    centrality: float = Field(0.0, ge=0.0, le=1.0)
    dependents: int = Field(0, ge=0)
    layer: bool = False
    retires_current: bool = False


def impact_score(inputs: ImpactInputs) -> float:
    dependents = min(1.0, math.log1p(inputs.dependents) / math.log1p(DEPENDENTS_SCALE))
    score = (
        WEIGHTS["centrality"] * inputs.centrality
        + WEIGHTS["dependents"] * dependents
        + WEIGHTS["layer"] * float(inputs.layer)
        + WEIGHTS["retires_current"] * float(inputs.retires_current)
    )
    return round(min(1.0, max(0.0, score)), 4)


def subject_inputs(store: Store, subject_id: str) -> tuple[float, int]:
    """(centrality percentile, dependent facts) of an entity, read from the store."""
    rank = centrality_rank(store, subject_id)
    centrality = 0.0
    if rank is not None:
        below, total = rank
        centrality = float(below) / max(1, total - 1) if total else 0.0
    return min(1.0, centrality), dependent_fact_count(store, subject_id)


#: The table a proposal's target kind names (what it is about: :func:`subject_of_row`).
_TABLE_OF = {"entity": "entities", "item": "blocks", "block": "blocks", "triple": "triples"}


def target_inputs(
    store: Store, target_table: str, target_id: str, *, retires_current: bool, layer: bool = False
) -> ImpactInputs:
    """The impact inputs of a change to one row of ``store`` (a fact, a memory, an entity), so
    a proposal made without a subject in hand (the gardener's) is weighed like the others.
    A row the store does not hold (an item of an MCP memory server the gardener tends) adds
    no centrality and no dependents: only what the change does counts."""
    subject = subject_of_row(store, _TABLE_OF.get(target_table, target_table), target_id)
    centrality, dependents = subject_inputs(store, subject) if subject is not None else (0.0, 0)
    return ImpactInputs(
        centrality=centrality, dependents=dependents, layer=layer, retires_current=retires_current
    )
