"""Surprise discovery (docs/discovery.md): what the dream's graph shows that nobody asked about.

Run in the dream's signal stage after Leiden and PageRank, on what those two
computed (so a dry run sees the same graph), three kinds of discovery:

* ``cross_community`` — an edge that became connected in this dream and is the
  only connected edge between its two communities, strong enough to beat a
  threshold drawn from this run's own weights (a quantile of the connected
  composite weights, ``bridge_percentile``). Needs an earlier graph: on the
  first dream every edge is new and nothing is a surprise.
* ``indirect_strong`` — two entities never mentioned together (no edge at all)
  whose weighted neighbourhoods overlap strongly: the cosine of their edge-weight
  vectors over shared neighbours that are not hubs (a hub neighbours everything),
  each shared neighbour down-weighted by 1/ln(2 + its degree); computed as one
  sparse matrix product.
* ``knowledge_gap`` — a fact the structure says should exist is missing: most
  of the other entities of the same type in the community (at least
  ``gap_min_share`` of at least ``gap_min_peers``) hold a current fact of some
  predicate, this one holds none ("no current employer on record for X").

Discoveries go to ``discovery_inbox`` (status ``new``) through the audited
path (phase ``dream_signal``), keyed by a signature (kind and sorted entity
ids; a knowledge gap's kind names its predicate) so a later dream never
writes the same discovery again, whatever its status. They are never pushed
anywhere: ``take_inbox`` (``memvault inbox``) hands them out when asked.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import sparse

from memvault.graph.centrality import CentralityReport
from memvault.graph.communities import CommunityReport
from memvault.graph.config import DiscoveryConfig, GraphConfig
from memvault.graph.edges import EdgeReport
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.entities import active_entities
from memvault.store.queries.graph import connected_edges, edges_audited_by, unarchived_edge_ends
from memvault.store.queries.inbox import known_signatures
from memvault.store.queries.runs import other_standing_run_with
from memvault.store.queries.triples import current_predicates

PHASE = "dream_signal"
INBOX_PHASE = "inbox"
#: The kinds of discovery, as stored in ``discovery_inbox.kind``. ``knowledge_gap`` there is
#: a missing fact (:func:`_missing_facts`), not a row of the table ``knowledge_gap``.
KINDS: tuple[str, ...] = ("cross_community", "indirect_strong", "knowledge_gap")


@dataclass
class Discovery:
    kind: str
    entity_ids: list[str]
    score: float
    explanation: str
    detail: dict[str, Any]
    qualifier: str = ""  # a knowledge gap's predicate: part of its signature

    @property
    def signature(self) -> str:
        kind = f"{self.kind}:{self.qualifier}" if self.qualifier else self.kind
        return f"{kind}|{','.join(sorted(self.entity_ids))}"

    @property
    def id(self) -> str:
        return "disc_" + hashlib.sha256(self.signature.encode()).hexdigest()[:20]


@dataclass
class DiscoveryReport:
    run_id: str
    dry_run: bool
    found: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    written: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    already_known: int = 0
    bridge_threshold: float | None = None
    new_connected_edges: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    discoveries: list[Discovery] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("discoveries")
        data["examples"] = [d.explanation for d in self.discoveries[:5]]
        return data

    def metadata(self, shown: int = 25) -> dict[str, Any]:
        """What an orchestrator shows of this search: counts by kind, the discoveries found
        (up to ``shown``) and timings as tables."""
        return {
            **{f"discoveries_{kind}": n for kind, n in self.written.items()},
            "discoveries_already_known": self.already_known,
            "bridge_threshold": self.bridge_threshold
            if self.bridge_threshold is not None
            else -1.0,
            "new_connected_edges": self.new_connected_edges,
            "skipped": dict(self.skipped),
            "timings_s": dict(self.seconds),
            "discoveries": [
                {"kind": d.kind, "score": d.score, "explanation": d.explanation}
                for d in self.discoveries[:shown]
            ],
        }


# -- the three detectors ---------------------------------------------------------------------


def _earlier_graph(store: Store, run_id: str) -> bool:
    """Whether a run other than this one left an edge graph (a baseline to be new against)."""
    return other_standing_run_with(store, "graph_edges", run_id)


def _promoted(store: Store, run_id: str, edges: EdgeReport) -> set[str]:
    """Edges made connected by this dream: this attempt's report plus the audit log (a dream
    re-executed from failure finds its first attempt's edges already written)."""
    ids = set(edges.newly_connected)
    audit = edges_audited_by(store, run_id)
    if audit.height:
        status = audit.with_columns(
            # cast: a column of NULLs only (every edge new) comes back untyped on PostgreSQL
            before=pl.col("before_image").cast(pl.Utf8).str.json_path_match("$.status"),
            after=pl.col("after_image").cast(pl.Utf8).str.json_path_match("$.status"),
        ).filter((pl.col("after") == "connected") & (pl.col("before").fill_null("") != "connected"))
        ids |= set(status["target_id"].to_list())
    return ids


def _cross_community(
    connected: pl.DataFrame,
    membership: pl.DataFrame,
    promoted: set[str],
    config: DiscoveryConfig,
    names: dict[str, str],
    report: DiscoveryReport,
) -> list[Discovery]:
    weights = connected["composite_weight"].to_numpy()
    threshold = float(np.quantile(weights, config.bridge_percentile))
    report.bridge_threshold = round(threshold, 4)
    community = membership.select("entity_id", "community", "size")
    ends = connected.join(
        community.rename({"entity_id": "source_id", "community": "ca", "size": "sa"}),
        on="source_id",
    ).join(
        community.rename({"entity_id": "target_id", "community": "cb", "size": "sb"}),
        on="target_id",
    )
    between = ends.filter(pl.col("ca") != pl.col("cb")).with_columns(
        lo=pl.min_horizontal("ca", "cb"), hi=pl.max_horizontal("ca", "cb")
    )
    counts = between.group_by("lo", "hi").agg(between_edges=pl.len())
    bridges = (
        between.filter(pl.col("id").is_in(pl.Series(sorted(promoted), dtype=pl.Utf8).implode()))
        .join(counts, on=["lo", "hi"])
        .filter((pl.col("between_edges") == 1) & (pl.col("composite_weight") >= threshold))
        .sort("composite_weight", "id", descending=[True, False])
    )
    ordered = np.sort(weights)
    out = []
    for row in bridges.iter_rows(named=True):
        below = float(np.searchsorted(ordered, row["composite_weight"], side="left"))
        rank = below / max(len(ordered) - 1, 1)  # share of the other connections it beats
        a, b = row["source_id"], row["target_id"]
        out.append(
            Discovery(
                kind="cross_community",
                entity_ids=[a, b],
                score=round(rank, 4),
                explanation=(
                    f"{names.get(a, a)} and {names.get(b, b)} are newly connected, and theirs is "
                    f"the only link between their two groups (of {row['sa']} and {row['sb']} "
                    f"entities); the link is stronger than {rank:.0%} of the other connections."
                ),
                detail={
                    "edge_id": row["id"],
                    "composite_weight": round(float(row["composite_weight"]), 4),
                    "threshold": round(threshold, 4),
                    "percentile": round(rank, 4),
                    "communities": [int(row["ca"]), int(row["cb"])],
                    "community_sizes": [int(row["sa"]), int(row["sb"])],
                },
            )
        )
    return out


def _indirect_strong(
    connected: pl.DataFrame,
    live_pairs: pl.DataFrame,
    config: DiscoveryConfig,
    names: dict[str, str],
) -> list[Discovery]:
    ids = pl.concat([connected["source_id"], connected["target_id"]]).unique().sort()
    n = len(ids)
    if n < 3 or config.indirect_top_k == 0:
        return []
    index = pl.DataFrame({"entity_id": ids, "i": np.arange(n, dtype=np.int64)})
    coded = connected.join(index.rename({"entity_id": "source_id", "i": "u"}), on="source_id").join(
        index.rename({"entity_id": "target_id", "i": "v"}), on="target_id"
    )
    u, v = coded["u"].to_numpy(), coded["v"].to_numpy()
    w = coded["composite_weight"].to_numpy().astype(np.float64)
    rows, cols, vals = np.concatenate([u, v]), np.concatenate([v, u]), np.concatenate([w, w])
    adjacency = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))
    degree = np.diff(adjacency.indptr)
    middle = np.flatnonzero(degree <= config.indirect_max_middle_degree)
    if middle.size == 0:
        return []
    through = adjacency[:, middle]  # n × middle: the edge weights to non-hub neighbours
    damp = sparse.diags(1.0 / np.log(2.0 + degree[middle]))
    # Only the upper triangle is kept: each pair once, no entity paired with itself.
    strength = sparse.triu(through @ damp @ through.T, k=1).tocsr()
    linked = (through > 0).astype(np.int32)
    common = sparse.triu(linked @ linked.T, k=1).tocsr()
    strength.sort_indices()
    common.sort_indices()
    if strength.nnz == 0:
        return []
    self_strength = np.asarray(
        through.multiply(through) @ (1.0 / np.log(2.0 + degree[middle]))
    ).ravel()
    coo = strength.tocoo()
    i, j, s = coo.row, coo.col, coo.data
    # Same sparsity pattern (weights are positive), so the data arrays line up pair by pair.
    assert np.array_equal(strength.indptr, common.indptr) and np.array_equal(
        strength.indices, common.indices
    ), "two-hop patterns differ"
    shared = common.data
    score = s / np.sqrt(self_strength[i] * self_strength[j])
    good = (shared >= config.indirect_min_common) & (score >= config.indirect_min_score)
    if not good.any():
        return []
    id_list = ids.to_list()
    pairs = pl.DataFrame(
        {
            "a": [id_list[k] for k in i[good]],
            "b": [id_list[k] for k in j[good]],
            "ia": i[good],
            "ib": j[good],
            "strength": s[good],
            "score": score[good],
            "shared": shared[good],
        }
    )
    pairs = (
        pairs.join(live_pairs, on=["a", "b"], how="anti")
        .sort(["score", "strength", "a", "b"], descending=[True, True, False, False])
        .head(config.indirect_top_k)
    )
    out = []
    for row in pairs.iter_rows(named=True):
        a_row = through.getrow(row["ia"])
        b_row = through.getrow(row["ib"])
        both = a_row.multiply(b_row).tocoo()
        order = np.argsort(-both.data)[:3]
        via = [id_list[int(middle[both.col[k]])] for k in order]
        a, b = row["a"], row["b"]
        out.append(
            Discovery(
                kind="indirect_strong",
                entity_ids=[a, b],
                score=round(float(row["score"]), 4),
                explanation=(
                    f"{names.get(a, a)} and {names.get(b, b)} were never mentioned together, "
                    f"yet they share {row['shared']} close connections "
                    f"({', '.join(names.get(x, x) for x in via)}): they may be related."
                ),
                detail={
                    "two_hop_strength": round(float(row["strength"]), 4),
                    "neighbourhood_cosine": round(float(row["score"]), 4),
                    "shared_neighbours": int(row["shared"]),
                    "via": via,
                },
            )
        )
    return out


#: What a missing fact of a predicate is called in an explanation ("no employer on record").
_MISSING = {
    "works_at": "employer",
    "depends_on": "dependency",
    "works_on": "project",
    "uses_tool": "tool in use",
    "reports_to": "manager",
    "part_of": "parent project or organization",
    "knows": "acquaintance",
    "interested_in": "interest",
    "related_to": "related concept",
    "prefers": "stated preference",
}


def _phrase(predicate: str, descriptions: dict[str, str]) -> str:
    if predicate in _MISSING:
        return _MISSING[predicate]
    text = descriptions.get(predicate, "")
    for prefix in ("the subject's ", "the project's ", "the organization's "):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return f"'{predicate}' fact"


def _missing_facts(
    members: pl.DataFrame,
    facts: pl.DataFrame,
    config: DiscoveryConfig,
    descriptions: dict[str, str],
) -> list[Discovery]:
    """Discoveries of kind ``knowledge_gap``: a fact most of an entity's peers hold and it
    does not. (Not the table ``knowledge_gap``, the questions the memory could not answer,
    which the profile keeps: :mod:`memvault.profile.gaps`; the kind's name is stored in the
    inbox, so it stays.)"""
    if config.gap_top_k == 0 or members.is_empty() or facts.is_empty():
        return []
    group = ["community", "entity_type"]
    sizes = members.group_by(group).agg(n=pl.len())
    held = (
        members.join(facts, left_on="entity_id", right_on="subject_id")
        .group_by([*group, "predicate"])
        .agg(have=pl.len(), holders=pl.col("name").sort().head(2))
        .join(sizes, on=group)
        .filter(
            (pl.col("n") - 1 >= config.gap_min_peers)
            & (pl.col("have") < pl.col("n"))
            & (pl.col("have") / (pl.col("n") - 1) >= config.gap_min_share)
        )
    )
    if held.is_empty():
        return []
    missing = (
        members.join(held, on=group)
        .join(facts.rename({"subject_id": "entity_id"}), on=["entity_id", "predicate"], how="anti")
        .with_columns(share=pl.col("have") / (pl.col("n") - 1))
        .sort(["share", "n", "entity_id", "predicate"], descending=[True, True, False, False])
        .head(config.gap_top_k)
    )
    out = []
    for row in missing.iter_rows(named=True):
        peers = row["n"] - 1
        kind = row["entity_type"]
        out.append(
            Discovery(
                kind="knowledge_gap",
                qualifier=row["predicate"],
                entity_ids=[row["entity_id"]],
                score=round(float(row["share"]), 4),
                explanation=(
                    f"No {_phrase(row['predicate'], descriptions)} on record for {row['name']}: "
                    f"{row['have']} of the {peers} other {kind}s in its group have one "
                    f"(e.g. {', '.join(row['holders'])})."
                ),
                detail={
                    "predicate": row["predicate"],
                    "entity_type": kind,
                    "community": int(row["community"]),
                    "peers": int(peers),
                    "peers_with_fact": int(row["have"]),
                    "share": round(float(row["share"]), 4),
                },
            )
        )
    return out


# -- running them ----------------------------------------------------------------------------


def discover(
    store: Store,
    config: GraphConfig,
    run_id: str,
    edges: EdgeReport,
    communities: CommunityReport,
    centrality: CentralityReport,
    *,
    dry_run: bool = False,
    now: dt.datetime | None = None,
) -> DiscoveryReport:
    """Find the three kinds of discovery on this dream's graph and queue the new ones."""
    from memvault.temporal.grounding import Grounding

    settings = config.discovery
    now = now or utcnow()
    report = DiscoveryReport(run_id=run_id, dry_run=dry_run, settings=settings.model_dump())
    started = time.perf_counter()
    connected = connected_edges(store, with_ids=True)
    membership = communities.membership
    if connected.is_empty() or membership.is_empty():
        report.skipped = dict.fromkeys(KINDS, "no connected graph")
        return report
    connected = connected.cast(
        {"id": pl.Utf8, "source_id": pl.Utf8, "target_id": pl.Utf8, "composite_weight": pl.Float64}
    )
    entities = active_entities(store).rename({"id": "entity_id"})
    names = dict(zip(entities["entity_id"].to_list(), entities["name"].to_list(), strict=True))
    report.seconds["load"] = round(time.perf_counter() - started, 4)

    started = time.perf_counter()
    found: list[Discovery] = []
    if _earlier_graph(store, run_id):
        promoted = _promoted(store, run_id, edges)
        report.new_connected_edges = len(promoted)
        found += _cross_community(connected, membership, promoted, settings, names, report)
    else:
        report.skipped["cross_community"] = "first graph: no earlier edges to be new against"
    report.seconds["cross_community"] = round(time.perf_counter() - started, 4)

    started = time.perf_counter()
    live = unarchived_edge_ends(store)
    live = pl.concat([live, live.select(pl.col("b").alias("a"), pl.col("a").alias("b"))]).cast(
        pl.Utf8
    )
    found += _indirect_strong(connected, live, settings, names)
    report.seconds["indirect_strong"] = round(time.perf_counter() - started, 4)

    started = time.perf_counter()
    members = membership.select("entity_id", "community").join(entities, on="entity_id")
    facts = current_predicates(store).cast(pl.Utf8)
    descriptions = {p.name: p.description for p in Grounding.load().predicates.values()}
    found += _missing_facts(members, facts, settings, descriptions)
    report.seconds["knowledge_gap"] = round(time.perf_counter() - started, 4)

    for d in found:
        report.found[d.kind] += 1
    started = time.perf_counter()
    fresh = _unknown(store, found)
    report.already_known = len(found) - len(fresh)
    report.discoveries = fresh
    for d in fresh:
        report.written[d.kind] += 1
    if fresh and not dry_run:
        with store.mutation(run_id, PHASE) as m:
            m.insert("discovery_inbox", _rows(fresh, run_id, now), action="discover",
                     reason="surprise discovery")  # fmt: skip
    report.seconds["write"] = round(time.perf_counter() - started, 4)
    return report


def _unknown(store: Store, found: list[Discovery]) -> list[Discovery]:
    """The discoveries whose signature the inbox does not hold yet (in any status)."""
    if not found:
        return []
    signatures = sorted({d.signature for d in found})
    known = known_signatures(store, signatures)
    seen: set[str] = set()
    out = []
    for d in found:
        if d.signature not in known and d.signature not in seen:
            seen.add(d.signature)
            out.append(d)
    return out


def _rows(found: list[Discovery], run_id: str, now: dt.datetime) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [d.id for d in found],
            "kind": [d.kind for d in found],
            "entity_ids": [json.dumps(sorted(d.entity_ids)) for d in found],
            "score": [float(d.score) for d in found],
            "explanation": [d.explanation for d in found],
            "status": ["new"] * len(found),
            "run_id": [run_id] * len(found),
            "created_at": [now] * len(found),
            "signature": [d.signature for d in found],
            "detail": [json.dumps(d.detail, sort_keys=True) for d in found],
        },
        schema_overrides={"created_at": pl.Datetime("us")},
    )
