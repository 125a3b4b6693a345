"""The vocabulary of the model layer: messages in, streamed outputs out.

Everything here is a small frozen dataclass so a turn's inputs can be logged,
compared in tests and replayed. Nothing here knows about HTTP, gRPC or a
particular provider; :class:`ChatModel` is the seam every model implements.

Example::

    >>> ChatMessage(role="user", content="وش أوقات الدوام؟").content
    'وش أوقات الدوام؟'
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = [
    "ChatMessage",
    "ChatModel",
    "Citation",
    "ModelOutput",
    "ModelRequest",
    "Recalled",
    "ResponderContext",
    "TextChunk",
    "ToolCallRequest",
    "ToolSpec",
    "UsageReport",
]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call the model asked for.

    ``arguments`` is a mapping when the model produced valid JSON and the raw
    string otherwise, so the loop can report the bad JSON back instead of
    guessing what was meant.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] | str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Role
    content: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a model is told about a tool.

    ``examples`` and ``parameter_patterns`` are not sent to hosted models; the
    offline responder uses them to decide, without a language model, that
    «وين طلبي رقم 4411؟» means ``order_status(order_id="4411")``.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON Schema of the arguments object
    examples: tuple[str, ...] = ()
    parameter_patterns: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Recalled:
    """A memory or knowledge-base chunk recalled for this turn (plain data)."""

    id: str
    kind: str
    title: str
    text: str
    snippet: str
    score: float


@dataclass(frozen=True, slots=True)
class ResponderContext:
    """What the offline responder needs; computed by the respond node.

    The hosted model ignores most of it: it receives the same facts through the
    system prompt instead.
    """

    user_text: str
    region: str = "msa"
    phase: str = "transaction"
    opening: str = ""  # Majlis reciprocal greeting, may be ""
    closing: str = ""  # reply to thanks / farewell, may be ""
    is_request: bool = False
    complaint: bool = False  # the user reports a problem (subset of is_request)
    frustrated: bool = False
    insists: bool = False
    recalled: tuple[Recalled, ...] = ()
    # Support (majlis.models.support): what the thread knows, as typed (order_number,
    # name…); the tenant persona's name ("" = none, the bot claims no name); whether
    # this is an order matter; the request a bare «48213» answers ("" otherwise).
    known: Mapping[str, str] = field(default_factory=dict)
    persona: str = ""
    order_intent: bool = False
    pending_request: str = ""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...]
    context: ResponderContext
    deadline: float | None = None  # absolute time.monotonic() deadline


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str


@dataclass(frozen=True, slots=True)
class UsageReport:
    model: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class Citation:
    """The model grounded its answer in this recalled item (→ ``MemoryCited``)."""

    recalled: Recalled
    snippet: str = ""  # the part actually used, when narrower than the chunk


ModelOutput = TextChunk | ToolCallRequest | UsageReport | Citation


class ChatModel(Protocol):
    """Anything that turns a :class:`ModelRequest` into a stream of outputs.

    Implementations raise only ``diwaniya.errors`` types: ``ModelError`` for a
    broken provider, ``DeadlineExceeded`` when ``request.deadline`` passes.
    """

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelOutput]: ...
