"""Tokens for entity matching: lower-case words and numbers (:mod:`memvault.text_tokens`;
keyword search tokenizes with
bm25s and a stemmer, see :mod:`memvault.recall.keywords`), and the text each block is
searched by: its original text, also when tiering made its text a digest
(:data:`SEARCH_TEXTS_SQL`): tiers decide what is shown, never what can be found.
"""

from __future__ import annotations

from memvault.text_tokens import STOPWORDS as STOPWORDS
from memvault.text_tokens import words as words

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
SEARCH_TEXTS_SQL = (
    f"(SELECT b.id, b.status, b.created_at, {SEARCH_TEXT} AS text FROM blocks b {ORIGINALS_JOIN})"
)
