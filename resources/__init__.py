"""Dagster resources: the seams through which assets reach the store, the judge and the embedder."""

from resources.collector import CollectorSourcesResource
from resources.dream import DreamResource
from resources.embedder import EmbedderResource
from resources.gardener import GardenerResource
from resources.layers import LayersResource
from resources.lifecycle import LifecycleResource
from resources.lint import LintResource
from resources.llm import JudgeResource
from resources.review import ReviewResource
from resources.store import StoreResource

__all__ = [
    "CollectorSourcesResource",
    "DreamResource",
    "EmbedderResource",
    "GardenerResource",
    "JudgeResource",
    "LayersResource",
    "LifecycleResource",
    "LintResource",
    "ReviewResource",
    "StoreResource",
]
