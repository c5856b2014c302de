"""Stable ids: the same content gives the same id, so a re-run writes no second row."""

from __future__ import annotations

import hashlib


def stable_id(prefix: str, *parts: str) -> str:
    return f"{prefix}:" + hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:16]
