"""The entity graph (design.md): multi-signal edges, Leiden communities, personalized PageRank."""

from memvault.graph.centrality import (
    CentralityReport,
    compute_centrality,
    recent_seeds,
    top_central,
)
from memvault.graph.communities import CommunityReport, detect_communities
from memvault.graph.config import DEFAULT_TYPE_AFFINITY, GraphConfig, SignalWeights
from memvault.graph.edges import EdgeReport, refresh_edges

__all__ = [
    "DEFAULT_TYPE_AFFINITY",
    "CentralityReport",
    "CommunityReport",
    "EdgeReport",
    "GraphConfig",
    "SignalWeights",
    "compute_centrality",
    "detect_communities",
    "recent_seeds",
    "refresh_edges",
    "top_central",
]
