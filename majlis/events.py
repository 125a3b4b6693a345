"""Typed turn events: what a turn produces, independent of the wire format.

The graph and the model layer emit these; ``service.convert`` is the only code
that turns them into ``diwaniya.v1.TurnEvent`` messages. Every event is a small
frozen dataclass so that a completed turn can be stored in the checkpoint (as
plain dicts, via :func:`event_to_dict`) and replayed byte-for-byte on a repeated
``request_id``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

Phase = Literal["greeting", "social", "transaction", "farewell"]


@dataclass(frozen=True, slots=True)
class TurnStarted:
    kind: Literal["turn_started"] = "turn_started"
    user_text: str = ""
    request_id: str = ""


@dataclass(frozen=True, slots=True)
class PhaseChanged:
    previous: str = ""
    current: str = ""
    new_cycle: bool = False
    kind: Literal["phase_changed"] = "phase_changed"


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str = ""
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ToolCall:
    call_id: str = ""
    name: str = ""
    arguments_json: str = "{}"
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str = ""
    name: str = ""
    ok: bool = True
    content_json: str = "null"
    error: str = ""
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ApprovalRequired:
    call_id: str = ""
    name: str = ""
    arguments_json: str = "{}"
    reason: str = ""
    kind: Literal["approval_required"] = "approval_required"


@dataclass(frozen=True, slots=True)
class MemoryCited:
    memory_id: str = ""
    memory_kind: str = ""
    title: str = ""
    snippet: str = ""
    score: float = 0.0
    quoted: bool = False  # the reply quotes it (False: it was given to the reply as context)
    kind: Literal["memory_cited"] = "memory_cited"


@dataclass(frozen=True, slots=True)
class Usage:
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class Handoff:
    """The conversation is handed to a human; ``summary_ar`` is for the agent."""

    summary_ar: str = ""
    reason: str = ""
    kind: Literal["handoff"] = "handoff"


@dataclass(frozen=True, slots=True)
class TurnCompleted:
    text: str = ""
    phase: str = ""
    dialect: str = ""
    dialect_confidence: float = 0.0
    script: str = ""
    checkpoint_id: str = ""
    replayed: bool = False
    message_dialect: str = ""
    message_dialect_confidence: float = 0.0
    reply_register: str = ""  # "msa" | "dialect" | "neutral"
    # Space-separated safety codes (a str, like every event field), e.g.
    # "injection_suspected"; the API sends them as repeated string safety_flags.
    safety_flags: str = ""
    kind: Literal["turn_completed"] = "turn_completed"


@dataclass(frozen=True, slots=True)
class Queued:
    """The turn waits for capacity: ``thread_busy`` (another turn runs on the
    thread), ``lock_pool`` (no lock connection is free: all hold running turns,
    or the pool is still opening one) or ``starting`` (``position`` turns that
    arrived before it in this process have not sent their first event yet:
    said on arrival, before the turn's own database round trips,
    majlis.queueing.Starting). Said at once when the wait is certain, else
    once the wait has lasted ``majlis.threads.QUEUED_AFTER_S``; at most once per
    reason. Sent before ``turn_started``, with ``seq`` 0 and no ``turn_id`` yet."""

    reason: str = ""
    position: int = 0
    kind: Literal["queued"] = "queued"


@dataclass(frozen=True, slots=True)
class TurnError:
    code: str = ""
    message: str = ""
    retryable: bool = False
    kind: Literal["error"] = "error"


Event = (
    TurnStarted
    | PhaseChanged
    | TextDelta
    | ToolCall
    | ToolResult
    | ApprovalRequired
    | MemoryCited
    | Usage
    | Handoff
    | TurnCompleted
    | TurnError
    | Queued
)

_BY_KIND: dict[str, type[Any]] = {
    str(cls.__dataclass_fields__["kind"].default): cls
    for cls in (
        TurnStarted,
        PhaseChanged,
        TextDelta,
        ToolCall,
        ToolResult,
        ApprovalRequired,
        MemoryCited,
        Usage,
        Handoff,
        TurnCompleted,
        TurnError,
        Queued,
    )
}


# Field names per event class, in declaration order (what asdict would give).
_FIELDS: dict[type[Any], tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in _BY_KIND.values()}


def event_to_dict(event: Event) -> dict[str, Any]:
    """Plain-dict form stored in the checkpoint for replay.

    Every field is a str/int/float/bool, so a shallow copy equals
    ``dataclasses.asdict`` — without its recursive deep copy, which was the
    largest pure-Python cost of streaming a reply word by word.

    >>> event_to_dict(TextDelta(text="هلا"))
    {'text': 'هلا', 'kind': 'text_delta'}
    """
    return {name: getattr(event, name) for name in _FIELDS[type(event)]}


def event_from_dict(data: dict[str, Any]) -> Event:
    """Inverse of :func:`event_to_dict`; unknown keys are ignored."""
    cls = _BY_KIND[data["kind"]]
    names = {f for f in cls.__dataclass_fields__}
    event: Event = cls(**{k: v for k, v in data.items() if k in names})
    return event


@dataclass(frozen=True, slots=True)
class Envelope:
    """An event as the client sees it: addressed and numbered."""

    thread_id: str
    turn_id: str
    seq: int
    event: Event
    extra: dict[str, Any] = field(default_factory=dict)
