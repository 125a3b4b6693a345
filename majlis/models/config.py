"""Per-tenant model configuration and prices.

The service builds one :class:`ModelConfig` per tenant from its own settings
(this module never reads the environment) and hands it to
:class:`~majlis.models.openai_compat.OpenAICompatibleModel`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, SecretStr

__all__ = ["ModelConfig", "Pricing"]


@dataclass(frozen=True, slots=True)
class Pricing:
    """USD per 1,000 tokens; ``cost_usd`` is what the usage event reports."""

    prompt_per_1k: float = 0.0
    completion_per_1k: float = 0.0

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round(
            prompt_tokens / 1000 * self.prompt_per_1k
            + completion_tokens / 1000 * self.completion_per_1k,
            8,
        )


class ModelConfig(BaseModel):
    """One OpenAI-compatible endpoint: hosted API, vLLM, Ollama, llama.cpp…"""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str
    api_key: SecretStr = SecretStr("not-needed")  # local servers accept any key
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=1024, gt=0)
    # Per attempt; the turn deadline bounds the total.
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=8.0, ge=0)
    price_prompt_per_1k: float = Field(default=0.0, ge=0)
    price_completion_per_1k: float = Field(default=0.0, ge=0)

    def pricing(self) -> Pricing:
        return Pricing(self.price_prompt_per_1k, self.price_completion_per_1k)
