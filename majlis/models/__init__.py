"""The model layer: hosted/self-hosted models, the offline responder, the turn loop.

The OpenAI-compatible client is not imported here: ``openai`` and
``langchain_openai`` are a third of a ``serve`` start-up's imports and the
embedded default (the offline responder) never uses them. Import
:class:`~majlis.models.openai_compat.OpenAICompatibleModel` from its module
where a model is configured (service.app does, only then).
"""

from majlis.models import support
from majlis.models.config import ModelConfig, Pricing
from majlis.models.offline import OfflineResponder
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
