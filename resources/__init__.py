"""Dagster resources: the seams through which assets reach the store, the judge and the embedder."""

from resources.collector import CollectorSourcesResource
from resources.dream import DreamResource
from resources.embedder import EmbedderResource
from resources.gardener import GardenerResource
from resources.layers import LayersResource
from resources.llm import JudgeResource
from resources.review import LintResource, ReviewResource
from resources.store import StoreResource
from resources.tiering import TieringResource

__all__ = [
    "CollectorSourcesResource",
    "DreamResource",
    "EmbedderResource",
    "GardenerResource",
    "JudgeResource",
    "LayersResource",
    "LintResource",
    "ReviewResource",
    "StoreResource",
    "TieringResource",
]
