"""A fast, deterministic feature-hashing embedder for large benchmarks and tests.

It has no model: each text becomes signed counts of hashed word unigrams,
word bigrams and character 3-grams (bytes of the lowercased UTF-8 text, which
are the characters for ASCII), L2-normalized. Texts that share words and
spellings get similar vectors; paraphrases with other words do not, which is
why MiniLM stays the default. Everything is vectorized over the whole batch
with uint64 arithmetic (it wraps, which the hashes rely on), so tens of
thousands of short texts take well under a second, the same on every run and
machine (no use of Python's salted ``hash``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from memvault.embed.base import normalize_rows

_P = 0x100000001B3  # FNV-64 prime: odd, so it has an inverse modulo 2**64
_P_INV = pow(_P, -1, 2**64)
# Texts per vectorized pass, and characters: keeps the working set in cache.
_CHUNK_TEXTS, _CHUNK_CHARS = 2048, 1 << 18
# (seed, weight) per feature kind.
_WORD, _BIGRAM, _CHAR3 = (
    (0x9E3779B97F4A7C15, 1.0),
    (0xC2B2AE3D27D4EB4F, 1.0),
    (0x165667B19E3779F9, 0.5),
)
# Word bytes: ASCII letters, digits, underscore, and every byte of a non-ASCII character.
_WORD_BYTE = np.zeros(256, dtype=bool)
for _chars in (b"abcdefghijklmnopqrstuvwxyz", b"0123456789_"):
    _WORD_BYTE[list(_chars)] = True
_WORD_BYTE[128:] = True


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads every input bit over the whole word."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@lru_cache(maxsize=4)
def _powers(size: int) -> tuple[np.ndarray, np.ndarray]:
    """P**j and P**-j modulo 2**64 for j < size (size a power of two, so few are cached)."""
    tables = []
    for base in (_P, _P_INV):
        table = np.ones(size, dtype=np.uint64)
        table[1:] = np.cumprod(np.full(size - 1, base, dtype=np.uint64))
        tables.append(table)
    return tables[0], tables[1]


class HashingEmbedder:
    """Signed feature hashing into ``dim`` buckets; model_name ``hashing-<dim>``."""

    def __init__(self, dim: int = 256) -> None:
        if not 1 <= dim < 2**31:
            raise ValueError("dim must be between 1 and 2**31 - 1")
        self.dim = dim
        self.model_name = f"hashing-{dim}"

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows; a text without features (empty or blank) is the zero vector."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        start = size = 0
        for end, text in enumerate(texts, start=1):
            size += len(text)
            if end - start == _CHUNK_TEXTS or size >= _CHUNK_CHARS or end == len(texts):
                out[start:end] = self._counts(texts[start:end])
                start, size = end, 0
        return normalize_rows(out)

    def _counts(self, texts: Sequence[str]) -> np.ndarray:
        """Weighted signed feature counts, shape (len(texts), dim)."""
        n = len(texts)
        # One space around each text (and whitespace runs collapsed) marks word edges.
        encoded = [f" {' '.join(text.lower().split())} ".encode() for text in texts]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
        raw = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
        data = raw.astype(np.uint64)
        counts = np.zeros(n * self.dim, dtype=np.float64)

        def add(kind: tuple[int, float], row: np.ndarray, value: np.ndarray) -> None:
            h = _mix(value ^ np.uint64(kind[0]))
            bucket = ((h >> np.uint64(32)) * np.uint64(self.dim)) >> np.uint64(32)
            sign = 1.0 - 2.0 * (h & np.uint64(1)).astype(np.float64)
            index = row * self.dim + bucket.astype(np.int64)
            counts[:] += kind[1] * np.bincount(index, weights=sign, minlength=n * self.dim)

        # Character 3-grams that lie inside one text.
        inside = owner[:-2] == owner[2:]
        char3 = (data[:-2] << np.uint64(16)) | (data[1:-1] << np.uint64(8)) | data[2:]
        add(_CHAR3, owner[:-2][inside], char3[inside])

        # Words: maximal runs of word bytes (the padding keeps each inside its text),
        # hashed as polynomials through prefix sums: h = (S[end] - S[start]) * P**-start.
        edges = np.diff(_WORD_BYTE[raw].astype(np.int8), prepend=0, append=0)
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        if len(starts):
            power, inverse = _powers(1 << len(data).bit_length())
            prefix = np.zeros(len(data) + 1, dtype=np.uint64)
            np.cumsum((data + np.uint64(1)) * power[: len(data)], out=prefix[1:])
            word = (prefix[ends] - prefix[starts]) * inverse[starts]
            word_owner = owner[starts]
            add(_WORD, word_owner, word)
            pair = word_owner[:-1] == word_owner[1:]
            add(
                _BIGRAM,
                word_owner[:-1][pair],
                _mix(word[:-1][pair]) * np.uint64(_P) + word[1:][pair],
            )
        return counts.reshape(n, self.dim)
