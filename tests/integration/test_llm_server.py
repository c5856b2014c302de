"""OpenAIJudge over the wire against a real llama.cpp server on loopback.

The 135M model's answers are often wrong; this proves the wire path (forced
tool call, schema-valid reply, token accounting, response cache), not the
quality of its judgment.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest

from memvault.judge import (
    EXTRACT_MEMORY,
    ExtractionReply,
    ExtractMemoryRequest,
    InMemoryJudgeCache,
    MemoryText,
    OpenAIJudge,
)
from tests.integration.conftest import LlamaServer

pytestmark = pytest.mark.integration


def test_openai_judge_against_llama_cpp(llm_server: LlamaServer) -> None:
    judge = OpenAIJudge(
        llm_server.base_url,
        "not-needed",
        llm_server.model,
        cache=InMemoryJudgeCache(),
        timeout=120,
        max_tokens=768,
    )
    request = ExtractMemoryRequest(
        memories=[
            MemoryText(
                id="blk_1",
                text="Alice moved to Berlin last week.",
                created_at=dt.datetime(2026, 5, 1, 12, 0),
            )
        ]
    )

    start = time.perf_counter()
    reply = judge.ask(EXTRACT_MEMORY, request)
    latency = time.perf_counter() - start
    print(f"llama.cpp round trip: {latency:.2f} s, {judge.stats.as_dict()}")

    assert isinstance(reply, ExtractionReply)
    stats = judge.stats.as_dict()
    assert stats["calls"] >= 1
    assert stats["prompt_tokens"] > 0
    assert stats["completion_tokens"] > 0
    assert stats["errors"] == 0

    again = judge.ask(EXTRACT_MEMORY, request)
    assert again == reply
    assert judge.stats.calls == stats["calls"]
    assert judge.stats.cache_hits == 1
