"""The model layer: hosted/self-hosted models, the offline responder, the turn loop."""

from majlis.models import support
from majlis.models.config import ModelConfig, Pricing
from majlis.models.offline import OfflineResponder
from majlis.models.openai_compat import OpenAICompatibleModel
from majlis.models.phrases import PhraseBook
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
    "OfflineResponder",
    "OpenAICompatibleModel",
    "PhraseBook",
    "Pricing",
    "Recalled",
    "ResponderContext",
    "TextChunk",
    "ToolCallRequest",
    "ToolSpec",
    "UsageReport",
    "support",
]
