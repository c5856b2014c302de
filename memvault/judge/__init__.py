"""Judgment: typed LLM tasks behind one protocol, with an offline default.

Stages ask a :class:`Judge` typed questions (:class:`JudgeTask`); which judge
answers is configuration, so the pipeline runs the same against OpenAI, a
local llama.cpp/vLLM/Ollama server, the offline heuristics or a test script.

:func:`make_judge` reads :class:`JudgeSettings`, by default from these
environment variables (an empty value counts as unset):

``MEMVAULT_LLM_BASE_URL``
    OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:8765/v1`` or
    ``https://api.openai.com/v1``. Unset: the offline :class:`HeuristicJudge`.
``MEMVAULT_LLM_API_KEY``
    API key; falls back to ``OPENAI_API_KEY``, then ``"not-needed"`` (local servers).
``MEMVAULT_LLM_MODEL``
    Primary model (default ``gpt-4o-mini``).
``MEMVAULT_LLM_ESCALATION_MODEL``
    Stronger model for escalated questions (default: the primary model).
``MEMVAULT_LLM_CONCURRENCY``
    Requests in flight at once in ``ask_many`` (default 4).
``MEMVAULT_LLM_TIMEOUT``
    Seconds per HTTP request (default 60).
``MEMVAULT_LLM_MAX_RETRIES``
    Retries on connection errors, timeouts, 429 and 5xx (default 4).
``MEMVAULT_LLM_MAX_TOKENS``
    Cap on the tokens of one reply (default: the server's); useful with small local models.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from memvault.errors import JudgeError, MemvaultError
from memvault.judge.base import (
    InMemoryJudgeCache,
    Judge,
    JudgeCache,
    JudgeStats,
    cache_key,
)
from memvault.judge.heuristic import HeuristicJudge
from memvault.judge.scripted import ScriptedJudge, ScriptExhaustedError

if TYPE_CHECKING:
    from memvault.judge.openai_judge import OpenAIJudge
from memvault.judge.tasks import (
    EXTRACT_MEMORY,
    TASKS,
    ExtractedEntityItem,
    ExtractedFactItem,
    ExtractionReply,
    ExtractMemoryRequest,
    JudgeTask,
    MemoryText,
    fence_data,
)

_ENV = {
    "base_url": "MEMVAULT_LLM_BASE_URL",
    "model": "MEMVAULT_LLM_MODEL",
    "escalation_model": "MEMVAULT_LLM_ESCALATION_MODEL",
    "concurrency": "MEMVAULT_LLM_CONCURRENCY",
    "timeout": "MEMVAULT_LLM_TIMEOUT",
    "max_retries": "MEMVAULT_LLM_MAX_RETRIES",
    "max_tokens": "MEMVAULT_LLM_MAX_TOKENS",
}


class JudgeSettings(BaseModel):
    """Which judge to use and how; the CLI and the Dagster resource pass their flags here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; None: heuristic")
    api_key: SecretStr = Field(SecretStr("not-needed"), description="API key of the endpoint")
    model: str = Field("gpt-4o-mini", min_length=1, description="Primary model")
    escalation_model: str | None = Field(None, description="Model for escalated questions")
    concurrency: int = Field(4, ge=1, le=256, description="Requests in flight in ask_many")
    timeout: float = Field(60.0, gt=0, description="Seconds per HTTP request")
    max_retries: int = Field(4, ge=0, le=20, description="Retries on transient failures")
    max_tokens: int | None = Field(
        None, ge=16, description="Cap on reply tokens (small local models)"
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> JudgeSettings:
        """Settings from ``MEMVAULT_LLM_*`` variables (see the module docstring)."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {
            field: env[var] for field, var in _ENV.items() if env.get(var, "").strip()
        }
        api_key = env.get("MEMVAULT_LLM_API_KEY") or env.get("OPENAI_API_KEY")
        if api_key:
            values["api_key"] = api_key
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            field = str(err["loc"][0])
            shown = f"{_ENV[field]}={values[field]!r}" if field in _ENV else field
            raise MemvaultError(f"{shown} is not valid: {err['msg']}; fix or unset it") from exc


def make_judge(settings: JudgeSettings | None = None, *, cache: JudgeCache | None = None) -> Judge:
    """The judge ``settings`` (default: from the environment) describe."""
    settings = settings or JudgeSettings.from_env()
    if not settings.base_url:
        return HeuristicJudge()
    from memvault.judge.openai_judge import OpenAIJudge

    return OpenAIJudge(
        base_url=settings.base_url,
        api_key=settings.api_key.get_secret_value(),
        model=settings.model,
        escalation_model=settings.escalation_model,
        max_concurrency=settings.concurrency,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        max_tokens=settings.max_tokens,
        cache=cache,
    )


def __getattr__(name: str) -> Any:
    """``OpenAIJudge`` on first use: the openai package takes a second or more to import, and
    every process that loads the code location (each step of a launched job) would pay it."""
    if name == "OpenAIJudge":
        from memvault.judge.openai_judge import OpenAIJudge

        return OpenAIJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EXTRACT_MEMORY",
    "TASKS",
    "ExtractMemoryRequest",
    "ExtractedEntityItem",
    "ExtractedFactItem",
    "ExtractionReply",
    "HeuristicJudge",
    "InMemoryJudgeCache",
    "Judge",
    "JudgeCache",
    "JudgeError",
    "JudgeSettings",
    "JudgeStats",
    "JudgeTask",
    "MemoryText",
    "OpenAIJudge",
    "ScriptExhaustedError",
    "ScriptedJudge",
    "cache_key",
    "fence_data",
    "make_judge",
]
