"""Tiering with a real OpenAI-compatible server (llama.cpp, SmolLM2-135M).

The small model's digests are often poor or too long; this proves the path a
deployment takes — the tier_digest prompt and schema over the wire, a reply that
breaks the limits rejected for an extractive digest, nothing lost (the audit log
keeps every full text), and a re-run that asks nothing — not the digests' quality.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import memvault
from memvault.lifecycle.digest import DIGEST_MAX_CHARS
from memvault.lifecycle.tiering import digest_violations, run_tiering
from memvault.normalize import utcnow
from tests.integration.conftest import LlamaServer
from tests.lifecycle_support import LONG_TEXT, add_blocks, block

pytestmark = pytest.mark.integration


def test_blocks_going_cold_are_digested_over_the_wire_once(
    llm_server: LlamaServer, tmp_path: Path
) -> None:
    now = utcnow()
    with memvault.open(f"duckdb://{tmp_path / 'store.duckdb'}") as store:
        add_blocks(store, now, {"cold-1": 50, "cold-2": 60, "frozen": 150, "fresh": 1})
        judge = llm_server.judge(store)
        result = run_tiering(store, judge, now=now)
        stats = judge.stats.as_dict()
        summary = result.summary()
        assert stats["calls"] >= 1 and stats["prompt_tokens"] > 0
        tiers = {b: block(store, b)["tier"] for b in ("cold-1", "cold-2", "frozen", "fresh")}
        assert tiers == {"cold-1": "cold", "cold-2": "cold", "frozen": "frozen", "fresh": "hot"}
        for cold in ("cold-1", "cold-2"):
            row = block(store, cold)
            # The model's digest, or (a reply over the limit, empty or unreadable) an
            # extractive one, labelled as such; never the full text, never over 400.
            assert row["digest_kind"] in ("llm", "extractive")
            assert 0 < len(row["text"]) <= DIGEST_MAX_CHARS < len(LONG_TEXT)
        assert block(store, "frozen")["digest_kind"] == "headline"
        assert digest_violations(store).is_empty(), "every full text is in the audit log"
        calls = judge.stats.calls
        again = run_tiering(store, judge, now=now)
        assert again.summary()["demotions"] == 0 and judge.stats.calls == calls
        print(f"over the wire: {summary['digests']} rejected={summary['rejected_replies']} {stats}")
