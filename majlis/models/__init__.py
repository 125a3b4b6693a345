"""The model layer: hosted/self-hosted models, the offline responder, the turn loop."""

from majlis.models.config import ModelConfig, Pricing
from majlis.models.openai_compat import OpenAICompatibleModel
from majlis.models.types import (
    ChatMessage,
    ChatModel,
    Citation,
    ModelOutput,
    ModelRequest,
    Recalled,
    ResponderContext,
    TextChunk,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)

__all__ = [
    "ChatMessage",
    "ChatModel",
    "Citation",
    "ModelConfig",
    "ModelOutput",
    "ModelRequest",
    "OpenAICompatibleModel",
    "Pricing",
    "Recalled",
    "ResponderContext",
    "TextChunk",
    "ToolCallRequest",
    "ToolSpec",
    "UsageReport",
]
