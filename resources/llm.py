"""The judge (LLM) as a Dagster resource; no endpoint configured means the offline heuristic judge."""

from __future__ import annotations

import dagster as dg
from pydantic import Field, SecretStr

from memvault.judge import Judge, JudgeCache, JudgeSettings, make_judge


class JudgeResource(dg.ConfigurableResource):
    """Fields left empty fall back to the MEMVAULT_LLM_* environment variables."""

    base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint (MEMVAULT_LLM_BASE_URL)"
    )
    model: str | None = Field(default=None, description="Primary model (MEMVAULT_LLM_MODEL)")
    escalation_model: str | None = Field(default=None, description="Escalation model")
    api_key: str | None = Field(default=None, description="API key; prefer dg.EnvVar")

    def settings(self) -> JudgeSettings:
        settings = JudgeSettings.from_env()
        overrides = {
            k: v
            for k, v in {
                "base_url": self.base_url,
                "model": self.model,
                "escalation_model": self.escalation_model,
                "api_key": SecretStr(self.api_key) if self.api_key else None,
            }.items()
            if v
        }
        return settings.model_copy(update=overrides)

    def build(self, cache: JudgeCache | None = None) -> Judge:
        return make_judge(self.settings(), cache=cache)
