"""What the edge stage reads, integer-coded for the vectorized maths (see ``signals``).

Active entities are numbered in id order; blocks and sessions get dense codes;
entity vectors become unit rows; stored edges get the pair key of their ends
(null when an end is no longer active). ``build_graph`` turns the mentions into
the co-mention graph (pairs, shared-block counts, neighbour and session sets).

What only the recomputed pairs need is read after the refresh knows which pairs it
recomputes: the vectors of their ends (:func:`attach_vectors`) and the stored signal values
of their edges (:func:`stored_values`); the stored edges are first read as ids, ends and
status only. When the recomputed pairs' rows are more than ``FILTER_SHARE`` of a table,
the whole table is read instead: shipping the ids to the database costs more than the
column scan (at 3,000 sessions, 58,000 of 196,000 edges' values by id took 0.2–0.35 s CPU
against 0.04 s for all of them; 5,138 of 7,183 vectors as long as all).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import polars as pl

from memvault.embed.base import normalize_rows
from memvault.graph import signals as sg
from memvault.graph.config import SIGNALS, GraphConfig
from memvault.store import Store
from memvault.store.queries.audit import last_audit_id
from memvault.store.queries.entities import active_entities
from memvault.store.queries.graph import (
    counted_mentions,
    entities_without_vector,
    main_entity_model,
    newest_entity_vector_at,
    stored_edge_ends,
    stored_edge_values,
)
from memvault.vectors import load_vectors

#: Above this share of a table's rows, read the whole table rather than the rows by id.
FILTER_SHARE = 0.1


@dataclass
class Inputs:
    ids: list[str]
    type_code: np.ndarray
    type_matrix: np.ndarray
    entity: np.ndarray  # mention rows: entity code
    block: np.ndarray  # block code, -1 without a block
    session: np.ndarray  # session code, -1 without a session
    session_names: pl.Series  # session id of each code (sorted)
    vectors: np.ndarray  # unit rows of the entities whose vectors were read
    vector_row: np.ndarray  # per entity code: its row in ``vectors``, -1 without one
    model: str | None
    stored: pl.DataFrame  # stored edges with key (null when an end is not active)
    audit_hw: int
    vectors_at: dt.datetime | None

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def n_sessions(self) -> int:
        return self.session_names.len()

    def entity_codes(self, values: pl.Series) -> np.ndarray:
        return code(values, pl.Series(self.ids, dtype=pl.Utf8))

    def set_vectors(self, vectors: tuple[list[str], np.ndarray] | None) -> None:
        """Keep the unit rows of these vectors (ids of inactive entities and zero vectors are
        left out: their pairs get semantic_similarity 0)."""
        self.vector_row = np.full(self.n, -1, dtype=np.int64)
        self.vectors = np.zeros((0, 0), dtype=np.float64)
        if vectors is None or not vectors[0]:
            return
        rows = self.entity_codes(pl.Series(vectors[0], dtype=pl.Utf8))
        ok = rows >= 0
        unit = normalize_rows(vectors[1][ok], np.float64)
        nonzero = np.linalg.norm(unit, axis=1) > 0
        self.vectors = unit[nonzero]
        self.vector_row[rows[ok][nonzero]] = np.arange(int(nonzero.sum()), dtype=np.int64)


@dataclass
class Graph:
    u: np.ndarray
    v: np.ndarray
    count: np.ndarray
    keys: np.ndarray
    adj: sg.Incidence
    sessions: sg.Incidence

    @property
    def degree(self) -> np.ndarray:
        return self.adj.sizes


def resolve_model(store: Store, wanted: str | None) -> str | None:
    return wanted or main_entity_model(store)


def code(values: pl.Series, categories: pl.Series) -> np.ndarray:
    """Position of each value in ``categories`` (distinct, sorted); -1 for nulls and strangers."""
    enum = pl.Enum(categories)
    codes = values.cast(pl.Utf8).cast(enum, strict=False).to_physical().cast(pl.Int64)
    return codes.fill_null(-1).to_numpy()


def categories(values: pl.Series) -> pl.Series:
    return values.cast(pl.Utf8).drop_nulls().unique().sort()


def load(store: Store, config: GraphConfig) -> Inputs:
    """Everything an edge refresh reads; high-water marks first, so whatever lands later is
    seen again by the next run."""
    audit_hw = last_audit_id(store) or 0
    model = resolve_model(store, config.embedding_model)
    vectors_at = newest_entity_vector_at(store, model) if model else None
    inputs = inputs_from_frames(
        config,
        active_entities(store).select("id", "entity_type"),
        counted_mentions(store),
        None,
    )
    inputs.model = model
    inputs.stored = stored_with_keys(stored_edge_ends(store), pl.Series(inputs.ids))
    inputs.audit_hw, inputs.vectors_at = audit_hw, vectors_at
    return inputs


def inputs_from_frames(
    config: GraphConfig,
    entities: pl.DataFrame,
    mentions: pl.DataFrame,
    vectors: tuple[list[str], np.ndarray] | None,
) -> Inputs:
    """Integer-coded inputs from plain frames (see :func:`compute_edges`)."""
    if entities.is_empty():
        entities = pl.DataFrame(schema={"id": pl.Utf8, "entity_type": pl.Utf8})
    entities = entities.select("id", "entity_type").cast(pl.Utf8).sort("id")
    id_series = entities["id"]
    ids = id_series.to_list()
    types = categories(entities["entity_type"])
    type_matrix = np.array(
        [[config.affinity(a, b) for b in types.to_list()] for a in types.to_list()],
        dtype=np.float64,
    ).reshape(types.len(), types.len())
    if mentions.is_empty():
        mentions = pl.DataFrame(schema={"entity_id": pl.Utf8, "block_id": pl.Utf8,
                                        "session_id": pl.Utf8})  # fmt: skip
    entity = code(mentions["entity_id"], id_series)
    block = code(mentions["block_id"], categories(mentions["block_id"]))
    session_names = categories(mentions["session_id"])
    session = code(mentions["session_id"], session_names)
    keep = entity >= 0
    inputs = Inputs(
        ids=ids,
        type_code=code(entities["entity_type"], types),
        type_matrix=type_matrix,
        entity=entity[keep],
        block=block[keep],
        session=session[keep],
        session_names=session_names,
        vectors=np.zeros((0, 0), dtype=np.float64),
        vector_row=np.full(len(ids), -1, dtype=np.int64),
        model=None,
        stored=stored_with_keys(pl.DataFrame(), id_series),
        audit_hw=0,
        vectors_at=None,
    )
    inputs.set_vectors(vectors)
    return inputs


def attach_vectors(store: Store, inputs: Inputs, entities: np.ndarray | None) -> None:
    """Read the vectors of these entity codes (all entities when None, or when they are more
    than ``FILTER_SHARE`` of them) into ``inputs``."""
    if not inputs.model:
        return
    if entities is not None and len(entities) > FILTER_SHARE * inputs.n:
        entities = None
    ids = None if entities is None else [inputs.ids[k] for k in entities.tolist()]
    inputs.set_vectors(load_vectors(store, "entity", inputs.model, ids=ids))


def missing_vectors(store: Store, model: str | None) -> int:
    """How many active entities have no vector of ``model`` (all of them without a model)."""
    return entities_without_vector(store, model)


def stored_values(store: Store, ids: list[str] | None, edges: int) -> pl.DataFrame:
    """id and the stored signal values of these edges (of all ``edges`` edges when None, or
    when they are more than ``FILTER_SHARE`` of them: the caller joins what it needs)."""
    by_id = ids is not None and len(ids) <= FILTER_SHARE * edges
    schema = {"id": pl.Utf8, **{name: pl.Float64 for name in (*SIGNALS, "composite_weight")}}
    frame = stored_edge_values(store, ids if by_id else None)
    return frame.cast(schema) if frame.height else pl.DataFrame(schema=schema)  # type: ignore[arg-type]


def stored_with_keys(stored: pl.DataFrame, ids: pl.Series) -> pl.DataFrame:
    """Stored edges with the pair key of their entity codes (null when an end is not active)."""
    schema = {"id": pl.Utf8, "source_id": pl.Utf8, "target_id": pl.Utf8, "status": pl.Utf8}
    if stored.is_empty():
        stored = pl.DataFrame(schema=schema)
    stored = stored.select(*schema).cast(schema)  # type: ignore[arg-type]
    n = ids.len()
    a = pl.Series(code(stored["source_id"], ids)).replace(-1, None)
    b = pl.Series(code(stored["target_id"], ids)).replace(-1, None)
    return stored.with_columns(
        key=pl.min_horizontal(a, b) * n + pl.max_horizontal(a, b),
    )


def build_graph(inputs: Inputs) -> Graph:
    n = inputs.n
    in_block = inputs.block >= 0
    u, v, count = sg.co_mention_pairs(inputs.entity[in_block], inputs.block[in_block], n)
    in_session = inputs.session >= 0
    sessions = sg.Incidence.from_pairs(
        inputs.entity[in_session], inputs.session[in_session], n, max(inputs.n_sessions, 1)
    )
    return Graph(
        u=u, v=v, count=count, keys=u * n + v, adj=sg.adjacency(u, v, n), sessions=sessions
    )
