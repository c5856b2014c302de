"""Tokens for entity matching: lower-case words and numbers (:mod:`memvault.text_tokens`;
keyword search tokenizes with
bm25s and a stemmer, see :mod:`memvault.recall.keywords`), and the text each block is
searched by: its original text, also when tiering made its text a digest
(:data:`SEARCH_TEXTS_SQL`, the data layer's :mod:`memvault.store.queries.recall`): tiers decide
what is shown, never what can be found.
"""

from __future__ import annotations

from memvault.store.queries.recall import ORIGINALS_JOIN as ORIGINALS_JOIN
from memvault.store.queries.recall import SEARCH_TEXT as SEARCH_TEXT
from memvault.store.queries.recall import SEARCH_TEXTS_SQL as SEARCH_TEXTS_SQL
from memvault.text_tokens import STOPWORDS as STOPWORDS
from memvault.text_tokens import words as words
