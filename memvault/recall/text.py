"""Tokens for entity matching: lower-case words and numbers (keyword search tokenizes with
bm25s and a stemmer, see :mod:`memvault.recall.keywords`).
"""

from __future__ import annotations

import re

TOKEN_PATTERN = r"[a-z0-9]+"
_TOKEN = re.compile(TOKEN_PATTERN)

#: Words too common to say anything about which memory answers a query.
STOPWORDS: frozenset[str] = frozenset((
    "a", "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "being",
    "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "how", "i",
    "in", "into", "is", "it", "its", "just", "me", "my", "no", "not", "of", "on", "or", "our",
    "should", "so", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "us", "was", "we", "were", "what", "when", "where", "which", "who",
    "why", "will", "with", "you", "your",
))  # fmt: skip


def words(text: str) -> list[str]:
    """Every token of ``text`` in order (stop words kept: names are matched on these)."""
    return _TOKEN.findall(text.lower())
