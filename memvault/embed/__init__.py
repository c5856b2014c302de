"""Embedders: texts to unit vectors, offline by default.

:func:`make_embedder` takes a spec, or reads ``MEMVAULT_EMBEDDER``:

``minilm`` (default)
    all-MiniLM-L6-v2 int8 on onnxruntime, 384-dim, fully offline.
``hashing`` or ``hashing:<dim>``
    feature hashing (default 256-dim): instant, lexical only; for benchmarks.
``openai:<model>``
    an OpenAI-compatible embeddings endpoint: base URL from
    ``MEMVAULT_EMBED_BASE_URL``, else ``MEMVAULT_LLM_BASE_URL``; key from
    ``MEMVAULT_EMBED_API_KEY``, else ``MEMVAULT_LLM_API_KEY``, else
    ``OPENAI_API_KEY``, else ``"not-needed"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memvault.embed.base import Embedder, normalize_rows
from memvault.embed.hashing import HashingEmbedder
from memvault.embed.minilm import MiniLMEmbedder
from memvault.errors import MemvaultError

if TYPE_CHECKING:
    from memvault.embed.openai_embed import OpenAIEmbedder

ACCEPTED_SPECS = "'minilm', 'hashing', 'hashing:<dim>' or 'openai:<model>'"


def make_embedder(spec: str | None = None, environ: Mapping[str, str] | None = None) -> Embedder:
    """The embedder ``spec`` names (default: ``MEMVAULT_EMBEDDER``, else ``minilm``)."""
    env = os.environ if environ is None else environ
    text = (spec or env.get("MEMVAULT_EMBEDDER") or "minilm").strip()
    kind, _, arg = text.partition(":")
    kind = kind.strip().lower()
    if kind == "minilm" and not arg:
        return MiniLMEmbedder()
    if kind == "hashing":
        if not arg:
            return HashingEmbedder()
        if arg.strip().isdigit() and 0 < int(arg) < 2**31:
            return HashingEmbedder(int(arg))
    if kind == "openai" and arg.strip():
        from memvault.embed.openai_embed import OpenAIEmbedder

        return OpenAIEmbedder(
            base_url=env.get("MEMVAULT_EMBED_BASE_URL") or env.get("MEMVAULT_LLM_BASE_URL") or None,
            api_key=env.get("MEMVAULT_EMBED_API_KEY")
            or env.get("MEMVAULT_LLM_API_KEY")
            or env.get("OPENAI_API_KEY")
            or "not-needed",
            model=arg.strip(),
        )
    raise MemvaultError(f"unknown embedder {text!r}: use {ACCEPTED_SPECS} (MEMVAULT_EMBEDDER)")


def __getattr__(name: str) -> Any:
    """``OpenAIEmbedder`` on first use (the openai package is slow to import)."""
    if name == "OpenAIEmbedder":
        from memvault.embed.openai_embed import OpenAIEmbedder

        return OpenAIEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ACCEPTED_SPECS",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "make_embedder",
    "normalize_rows",
]
