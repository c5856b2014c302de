"""Tokens for keyword search and entity matching: lower-case words and numbers.

One tokenizer serves the query and the blocks (in bulk, with polars), so a word
counts the same on both sides. Stop words carry no evidence for keyword search.
A block is searched by its original text, also when tiering made its text a digest
(:data:`SEARCH_TEXTS_SQL`): tiers decide what is shown, never what can be found.
"""

from __future__ import annotations

import re

import polars as pl

TOKEN_PATTERN = r"[a-z0-9]+"

#: What recall searches each block by (keywords and vectors): the original text a digest
#: stands in for (``block_originals``), else the block's text; an expression over blocks ``b``
#: joined by :data:`ORIGINALS_JOIN`, and the derived table :data:`SEARCH_TEXTS_SQL` (id,
#: status, text). An original row of a block whose full text came back (an undone tiering
#: run of a store tiered before originals were kept) is ignored.
SEARCH_TEXT = (
    "CASE WHEN b.digest_kind IS NOT NULL AND o.text IS NOT NULL THEN o.text ELSE b.text END"
)
#: The join :data:`SEARCH_TEXT` needs (blocks are ``b``).
ORIGINALS_JOIN = "LEFT JOIN block_originals o ON o.id = b.id"
SEARCH_TEXTS_SQL = f"(SELECT b.id, b.status, {SEARCH_TEXT} AS text FROM blocks b {ORIGINALS_JOIN})"

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


def terms(text: str) -> list[str]:
    """The tokens keyword search scores: stop words and one-letter tokens dropped."""
    return [t for t in words(text) if len(t) > 1 and t not in STOPWORDS]


def term_frame(ids: pl.Series, texts: pl.Series) -> pl.DataFrame:
    """(doc, term, tf) for many texts at once; ``doc`` is the position in ``ids``."""
    frame = pl.DataFrame({"doc": pl.arange(0, len(ids), eager=True, dtype=pl.Int64), "text": texts})
    return (
        frame.select(
            "doc",
            term=pl.col("text").fill_null("").str.to_lowercase().str.extract_all(TOKEN_PATTERN),
        )
        .explode("term")
        .drop_nulls("term")
        .filter((pl.col("term").str.len_chars() > 1) & ~pl.col("term").is_in(list(STOPWORDS)))
        .group_by("doc", "term")
        .agg(tf=pl.len())
    )
