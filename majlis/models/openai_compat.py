"""Any OpenAI-compatible chat endpoint as a :class:`ChatModel`.

Hosted APIs, vLLM, Ollama and llama.cpp all speak the same protocol; we talk to
them through langchain-openai's ``ChatOpenAI`` (streaming, tool calling,
``stream_usage``) and own only the failure policy:

* the client's own retries are off (``max_retries=0``) so that *we* decide,
  bounded by the turn's deadline;
* 429 / 408 / 5xx / connection errors are retried with backoff and jitter,
  honouring ``Retry-After``;
* a 400/404/422 that names tools or functions is retried once without tools;
* a malformed stream chunk is a :class:`~diwaniya.errors.ModelError`;
* nothing is retried once text has been streamed, which would repeat it.

Example: a request whose last message is «السلام عليكم» streams
``TextChunk("وعليكم ")``, ``TextChunk("السلام")``…, then ``UsageReport``.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import openai
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from diwaniya.errors import DeadlineExceeded, ModelError
from majlis.models.config import ModelConfig
from majlis.models.retry import (
    MAX_RETRY_AFTER_S,
    backoff_delay,
    is_retryable_status,
    rejects_tools,
    retry_after_s,
)
from majlis.models.types import (
    ChatMessage,
    ModelOutput,
    ModelRequest,
    TextChunk,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from majlis.tracing import DeferredTracer

__all__ = ["OpenAICompatibleModel", "to_langchain_messages", "to_openai_tools"]

Sleep = Callable[[float], Awaitable[None]]
_tracer = DeferredTracer("diwaniya.majlis.models")


class _Retry(Exception):
    """Internal: this attempt failed before streaming anything; try again."""

    def __init__(self, reason: str, wait_s: float | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait_s = wait_s


class _DropTools(Exception):
    """Internal: the provider refused our tool definitions."""


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Our :class:`ToolSpec` → the OpenAI ``tools`` array (examples stay local)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]


def _to_langchain_message(message: ChatMessage) -> BaseMessage:
    if message.role == "system":
        return SystemMessage(content=message.content)
    if message.role == "user":
        return HumanMessage(content=message.content)
    if message.role == "tool":
        return ToolMessage(content=message.content, tool_call_id=message.tool_call_id or "")
    valid = [
        {"id": c.id, "name": c.name, "args": dict(c.arguments), "type": "tool_call"}
        for c in message.tool_calls
        if not isinstance(c.arguments, str)
    ]
    # Invalid JSON from the model is sent back verbatim so it can see its mistake.
    invalid = [
        {
            "id": c.id,
            "name": c.name,
            "args": c.arguments,
            "error": None,
            "type": "invalid_tool_call",
        }
        for c in message.tool_calls
        if isinstance(c.arguments, str)
    ]
    return AIMessage(content=message.content, tool_calls=valid, invalid_tool_calls=invalid)


def to_langchain_messages(messages: Sequence[ChatMessage]) -> list[BaseMessage]:
    return [_to_langchain_message(m) for m in messages]


def _parse_arguments(raw: str) -> Mapping[str, Any] | str:
    """JSON object → mapping; anything else is kept as the raw string."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def _text_of(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else p.get("text", "") for p in content]
    return "".join(p for p in parts if isinstance(p, str))


class OpenAICompatibleModel:
    """A tenant's configured model endpoint."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        sleep: Sleep = asyncio.sleep,
        rng: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = config.model
        self._config = config
        self._sleep = sleep
        self._rng = rng
        self._clock = clock
        self._llm = ChatOpenAI(
            model=config.model,
            base_url=config.base_url,
            api_key=config.api_key,
            temperature=config.temperature,
            max_completion_tokens=config.max_tokens,
            timeout=config.timeout_s,
            max_retries=0,  # we retry, bounded by the turn deadline
            streaming=True,
            stream_usage=True,
            use_responses_api=False,  # compatible servers implement chat completions only
        )

    def _remaining(self, deadline: float | None) -> float | None:
        if deadline is None:
            return None
        remaining = deadline - self._clock()
        if remaining <= 0:
            raise DeadlineExceeded(f"model {self.name!r}: the turn deadline passed")
        return remaining

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelOutput]:
        """The call in one ``chat <model>`` span: model, token counts, attempts — no text.

        Not made current: it lives across yields to the caller (the tool loop).
        """
        url = urlsplit(self._config.base_url)
        span = _tracer.start_span(f"chat {self.name}", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
            "gen_ai.request.model": self.name, "server.address": url.hostname or "",
            "gen_ai.request.max_tokens": self._config.max_tokens,
            "diwaniya.model.tools": len(request.tools)})
        try:
            async for output in self._stream(request, span):
                if isinstance(output, UsageReport):
                    span.set_attributes({
                        "gen_ai.response.model": output.model,
                        "gen_ai.usage.input_tokens": output.prompt_tokens,
                        "gen_ai.usage.output_tokens": output.completion_tokens})
                yield output
        except BaseException as exc:
            # The type only: a provider's message may quote the request.
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            span.end()

    async def _stream(self, request: ModelRequest, span: trace.Span
                      ) -> AsyncIterator[ModelOutput]:
        tools = request.tools
        failures = 0
        while True:
            self._remaining(request.deadline)
            try:
                async for output in self._attempt(request, tools):
                    yield output
                return
            except _DropTools:
                tools = ()  # once: with no tools there is nothing left to refuse
                continue
            except _Retry as retry:
                failures += 1
                span.add_event("retry", {"reason": retry.reason.split(":", 1)[0][:40],
                                         "attempt": failures})
                if failures > self._config.max_retries:
                    raise ModelError(
                        f"model {self.name!r} failed after {failures} attempts: {retry.reason}"
                    ) from None
                wait = retry.wait_s
                if wait is None:
                    wait = backoff_delay(
                        failures - 1,
                        base_s=self._config.backoff_base_s,
                        max_s=self._config.backoff_max_s,
                        rng=self._rng,
                    )
                wait = min(wait, MAX_RETRY_AFTER_S)
                remaining = self._remaining(request.deadline)
                if remaining is not None and wait >= remaining:
                    raise DeadlineExceeded(
                        f"model {self.name!r}: {retry.reason}; "
                        f"retrying in {wait:.1f}s would pass the turn deadline"
                    ) from None
                await self._sleep(wait)

    async def _attempt(
        self, request: ModelRequest, tools: tuple[ToolSpec, ...]
    ) -> AsyncIterator[ModelOutput]:
        llm: Any = self._llm.bind_tools(to_openai_tools(tools)) if tools else self._llm
        chunks = llm.astream(to_langchain_messages(request.messages)).__aiter__()
        calls: dict[int, dict[str, str]] = {}
        usage: UsageReport | None = None
        streamed = False
        try:
            while True:
                remaining = self._remaining(request.deadline)
                try:
                    async with asyncio.timeout(remaining):
                        chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise DeadlineExceeded(
                        f"model {self.name!r} did not answer before the turn deadline"
                    ) from None
                except openai.APIStatusError as exc:
                    self._classify_status(exc, tools, streamed)
                except openai.APIConnectionError as exc:  # includes APITimeoutError
                    if streamed:
                        raise ModelError(f"model {self.name!r} stream broke: {exc}") from exc
                    raise _Retry(f"connection failed: {exc}", None) from exc
                except openai.APIError as exc:  # an error event inside the stream
                    raise ModelError(f"model {self.name!r} reported: {exc.message}") from exc
                except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
                    raise ModelError(
                        f"model {self.name!r} sent a malformed stream chunk: {exc}"
                    ) from exc
                text = _text_of(chunk.content)
                if text:
                    streamed = True
                    yield TextChunk(text)
                for part in chunk.tool_call_chunks or ():
                    index = part.get("index") or 0
                    slot = calls.setdefault(index, {"id": "", "name": "", "args": ""})
                    slot["id"] = slot["id"] or (part.get("id") or "")
                    slot["name"] += part.get("name") or ""
                    slot["args"] += part.get("args") or ""
                if chunk.usage_metadata:
                    meta = chunk.response_metadata or {}
                    usage = UsageReport(
                        model=str(meta.get("model_name") or self.name),
                        prompt_tokens=int(chunk.usage_metadata.get("input_tokens", 0)),
                        completion_tokens=int(chunk.usage_metadata.get("output_tokens", 0)),
                    )
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        for index in sorted(calls):
            slot = calls[index]
            if not slot["name"]:
                raise ModelError(f"model {self.name!r} streamed a tool call without a name")
            yield ToolCallRequest(
                id=slot["id"] or f"call_{index}",
                name=slot["name"],
                arguments=_parse_arguments(slot["args"]),
            )
        if usage is not None:
            yield usage

    def _classify_status(
        self, exc: openai.APIStatusError, tools: tuple[ToolSpec, ...], streamed: bool
    ) -> None:
        status = exc.status_code
        detail = f"HTTP {status}: {exc.message}"
        if not streamed and tools and rejects_tools(status, f"{exc.message} {exc.body}"):
            raise _DropTools(detail) from exc
        if not streamed and is_retryable_status(status):
            raise _Retry(detail, retry_after_s(exc.response.headers)) from exc
        raise ModelError(f"model {self.name!r} refused the request ({detail})") from exc
