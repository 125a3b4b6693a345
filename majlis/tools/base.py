"""What a tool is: a spec the model sees, and an async ``run`` that never raises.

A tool's failure is *data* (``ToolOutcome(ok=False, error=...)``) that the model
or the offline responder answers about; it must never end the turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from majlis.events import Event
from majlis.models.types import ToolSpec

__all__ = ["Tool", "ToolContext", "ToolOutcome"]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """``content`` must be JSON-serialisable; ``events`` are emitted by the loop
    (e.g. the ``Handoff`` that ``handoff_to_human`` produces)."""

    ok: bool
    content: Any = None
    error: str | None = None
    events: tuple[Event, ...] = ()


@dataclass(slots=True)
class ToolContext:
    tenant: str
    user_id: str
    thread_id: str
    turn_id: str
    deadline: float | None = None  # absolute time.monotonic()


class Tool(Protocol):
    spec: ToolSpec
    requires_approval: bool

    @property
    def examples(self) -> Sequence[str]: ...

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome: ...
