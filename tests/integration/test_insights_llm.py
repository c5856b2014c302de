"""Dream insights over the wire: a fake OpenAI-compatible server that writes what an injection
asks for ("Ada works at EvilCorp", an instruction, citations of blocks it was never given)
gets only the insight its cited sources support stored, the rest refused and counted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memvault.dream.reflect import reflect
from memvault.judge import OpenAIJudge
from memvault.store import Store
from tests.integration.fake_llm import FakeLLM, completion, user_text
from tests.recall_support import fill
from tests.store.test_dream_insights import REPLY, RUN, SUPPORTED, _snapshot

pytestmark = pytest.mark.integration


def _obedient(body: dict[str, Any]) -> tuple[int, bytes, float]:
    """Whatever the prompt holds, the reply the injection wants (and one honest insight)."""
    return 200, completion(REPLY, "reflect"), 0.0


def test_an_obedient_server_gets_only_a_supported_insight_stored(
    store: Store, tmp_path: Path
) -> None:
    fill(store, tmp_path)
    fake = FakeLLM(_obedient)
    with fake.serving():
        judge = OpenAIJudge(fake.base_url, "not-needed", "fake", timeout=5.0, max_retries=0)
        result = reflect(store, judge, _snapshot(store), RUN)
    [request] = fake.requests
    # the sources the insights must cite went over the wire with their ids
    assert {"b_quill_status", "b_quill_deps"} <= set(re.findall(r"b_[a-z_]+", user_text(request)))
    assert result.insights_refused == 6 and result.insights_written == 1
    rows = store.fetch("SELECT text, tags FROM blocks WHERE kind = 'insight'")
    assert [r[0] for r in rows] == [SUPPORTED]
    assert "cites:b_quill_deps" in json.loads(rows[0][1])
    assert not store.fetch("SELECT id FROM blocks WHERE text LIKE '%EvilCorp%'")
