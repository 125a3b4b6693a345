"""One turn's agent loop: stream the model, run its tool calls, call it again.

Invariants:

* text reaches the client as ``TextDelta`` events in model order;
* a tool failure is a ``ToolResult(ok=False)`` the model answers about, never
  an exception; a tool needing approval is *not* run (``ApprovalRequired``);
* a turn never ends blank: an empty reply is re-prompted once, then replaced
  by a fixed Arabic fallback;
* a ``ModelError`` (the model failed after its own retries) is raised as
  :class:`~diwaniya.errors.ModelUnavailable`: the respond node decides between
  failing the turn (UNAVAILABLE, nothing saved) and the offline responder;
* ``DeadlineExceeded`` propagates: the service maps it to DEADLINE_EXCEEDED.

Example: «وين طلبي 4411؟» → ToolCall(order_status) → ToolResult → TextDelta…
→ Usage(model, tokens, cost_usd).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from diwaniya.errors import ModelError, ModelUnavailable
from majlis.events import (
    ApprovalRequired,
    Event,
    Handoff,
    MemoryCited,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from majlis.models.config import Pricing
from majlis.models.types import (
    ChatMessage,
    ChatModel,
    Citation,
    ModelRequest,
    TextChunk,
    ToolCallRequest,
    UsageReport,
)
from majlis.reply_text import stream_words
from majlis.tools.base import ToolContext, ToolOutcome
from majlis.tools.registry import ToolRegistry
from nlp import drop_overrides

__all__ = ["FALLBACK_REPLY", "REPROMPT", "TurnOutput", "run_model_turn"]

Emit = Callable[[Event], Awaitable[None] | None]

FALLBACK_REPLY = "عذرًا، لم أتمكن من إعداد ردّ الآن. هل تعيد صياغة سؤالك، أو أحوّلك إلى أحد زملائنا؟"
REPROMPT = "لم يصلني منك أي ردّ. أجب المستخدم الآن بالعربية، بجملة واحدة على الأقل."


@dataclass(frozen=True, slots=True)
class TurnOutput:
    text: str
    usage: Usage | None
    handoff: bool


async def _emit(emit: Emit, event: Event) -> None:
    result = emit(event)
    if inspect.isawaitable(result):
        await result


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass
class _Turn:
    """Mutable accounting for one turn (text so far, usage, handoff)."""

    emit: Emit
    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    usage_seen: bool = False
    handoff: bool = False

    async def say(self, chunk: str) -> None:
        # Rounds are streamed back to back; keep words from gluing together.
        if self.text and not self.text[-1].isspace() and not chunk[:1].isspace():
            chunk = f" {chunk}"
        self.text += chunk
        await _emit(self.emit, TextDelta(text=chunk))

    async def fallback(self) -> None:
        for word in stream_words(FALLBACK_REPLY):
            await self.say(word)


async def _run_tool(
    call: ToolCallRequest,
    registry: ToolRegistry,
    allowed: set[str],
    ctx: ToolContext,
    turn: _Turn,
) -> ChatMessage:
    """Run one call, emitting its events; returns the tool message for the model."""
    args_json = call.arguments if isinstance(call.arguments, str) else _json(call.arguments)
    await _emit(turn.emit, ToolCall(call_id=call.id, name=call.name, arguments_json=args_json))
    tool = registry.get(call.name) if call.name in allowed else None
    if tool is not None and tool.requires_approval and not isinstance(call.arguments, str):
        await _emit(
            turn.emit,
            ApprovalRequired(
                call_id=call.id,
                name=call.name,
                arguments_json=args_json,
                reason="this tool acts on the user's behalf and needs approval first",
            ),
        )
        content = _json({"status": "awaiting_approval", "tool": call.name})
        return ChatMessage("tool", content, tool_call_id=call.id, name=call.name)
    if tool is None:
        outcome = ToolOutcome(ok=False, error=f"no tool named {call.name!r} is available")
    elif isinstance(call.arguments, str):
        outcome = ToolOutcome(ok=False, error="the arguments were not a valid JSON object")
    else:
        try:
            outcome = await tool.run(call.arguments, ctx)
        except Exception as exc:  # the Tool contract says never raise; hold it anyway
            outcome = ToolOutcome(ok=False, error=f"{call.name} failed: {exc}")
    for event in outcome.events:
        turn.handoff = turn.handoff or isinstance(event, Handoff)
        await _emit(turn.emit, event)
    await _emit(
        turn.emit,
        ToolResult(
            call_id=call.id,
            name=call.name,
            ok=outcome.ok,
            content_json=_json(outcome.content),
            error=outcome.error or "",
        ),
    )
    payload: Mapping[str, Any] = {"ok": outcome.ok, "content": outcome.content}
    if not outcome.ok:
        payload = {"ok": False, "error": outcome.error}
    return ChatMessage("tool", _json(payload), tool_call_id=call.id, name=call.name)


async def run_model_turn(
    model: ChatModel,
    request: ModelRequest,
    registry: ToolRegistry,
    tool_ctx: ToolContext,
    emit: Emit,
    *,
    max_tool_rounds: int = 4,
    max_tools: int = 5,
    prices: Pricing | None = None,
) -> TurnOutput:
    """Run the model (and its tools) to a non-blank reply; see the module docstring.

    When ``request.tools`` is empty the registry picks the ``max_tools`` most
    relevant to ``request.context.user_text`` (built-ins always included).
    """
    if not request.tools:
        chosen = registry.select(request.context.user_text, k=max_tools)
        request = replace(request, tools=tuple(t.spec for t in chosen))
    allowed = {t.name for t in request.tools}
    turn = _Turn(emit)
    messages = list(request.messages)
    rounds = 0
    reprompted = False
    while True:
        round_text = ""
        calls: list[ToolCallRequest] = []
        try:
            async for output in model.stream(replace(request, messages=tuple(messages))):
                if isinstance(output, TextChunk):
                    # Spoofing from the model (an echoed document, a tool result):
                    # bidi overrides never reach the client or the stored reply.
                    text = drop_overrides(output.text)
                    if text:
                        round_text += text
                        await turn.say(text)
                elif isinstance(output, ToolCallRequest):
                    calls.append(output)
                elif isinstance(output, UsageReport):
                    turn.prompt_tokens += output.prompt_tokens
                    turn.completion_tokens += output.completion_tokens
                    turn.model = output.model
                    turn.usage_seen = True
                elif isinstance(output, Citation):
                    r = output.recalled
                    await _emit(
                        emit,
                        MemoryCited(
                            memory_id=r.id,
                            memory_kind=r.kind,
                            title=r.title,
                            snippet=output.snippet or r.snippet,
                            score=r.score,
                            quoted=True,
                        ),
                    )
        except ModelError as exc:
            # Never an apology stored as the answer: an outage is not a reply.
            if isinstance(exc, ModelUnavailable):
                raise
            raise ModelUnavailable(
                f"the language model is unavailable ({exc.message}); nothing was added to "
                "the thread — send the message again (the same request_id is safe)"
            ) from exc
        if calls and rounds < max_tool_rounds:
            rounds += 1
            messages.append(ChatMessage("assistant", round_text, tool_calls=tuple(calls)))
            for call in calls:
                messages.append(await _run_tool(call, registry, allowed, tool_ctx, turn))
            if rounds == max_tool_rounds:
                # Out of tool rounds: the next call gets no tools, so it must answer.
                request = replace(request, tools=())
            continue
        if turn.text.strip():
            break
        if not reprompted:
            reprompted = True
            messages.append(ChatMessage("user", REPROMPT))
            continue
        await turn.fallback()
        break
    usage = None
    if turn.usage_seen:
        cost = (prices or Pricing()).cost_usd(turn.prompt_tokens, turn.completion_tokens)
        usage = Usage(
            model=turn.model or model.name,
            prompt_tokens=turn.prompt_tokens,
            completion_tokens=turn.completion_tokens,
            cost_usd=cost,
        )
        await _emit(emit, usage)
    return TurnOutput(text=turn.text, usage=usage, handoff=turn.handoff)
