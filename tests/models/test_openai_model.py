"""OpenAICompatibleModel against a scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import time
from typing import Any

import pytest

from diwaniya.errors import DeadlineExceeded, ModelError
from majlis.models import (
    ChatMessage,
    ModelConfig,
    ModelRequest,
    ResponderContext,
    TextChunk,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from majlis.models.openai_compat import OpenAICompatibleModel
from tests.fakes import ScriptedOpenAIServer, ScriptedReply

ORDER_TOOL = ToolSpec(
    name="order_status",
    description="حالة الطلب / order status",
    parameters={
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
)


class RecordingSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_model(
    server: ScriptedOpenAIServer, sleep: RecordingSleep, **overrides: Any
) -> OpenAICompatibleModel:
    config = ModelConfig(base_url=server.base_url, model="fake-model", timeout_s=5, **overrides)
    return OpenAICompatibleModel(config, sleep=sleep, rng=lambda: 0.5)


def make_request(
    text: str = "السلام عليكم", *, tools: tuple[ToolSpec, ...] = (), deadline: float | None = None
) -> ModelRequest:
    return ModelRequest(
        messages=(ChatMessage("system", "أنت مساعد."), ChatMessage("user", text)),
        tools=tools,
        context=ResponderContext(user_text=text),
        deadline=deadline,
    )


async def collect(model: OpenAICompatibleModel, request: ModelRequest) -> list[object]:
    return [out async for out in model.stream(request)]


async def test_streams_text_in_order_then_usage(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(ScriptedReply.text("وعليكم السلام ورحمة الله", usage=(31, 7)))
    outputs = await collect(make_model(openai_server, RecordingSleep()), make_request())
    texts = [o.text for o in outputs if isinstance(o, TextChunk)]
    assert texts == ["وعليكم ", "السلام ", "ورحمة ", "الله"]
    assert outputs[-1] == UsageReport(model="fake-model", prompt_tokens=31, completion_tokens=7)
    body = openai_server.bodies[0]
    assert body["stream"] is True
    assert body["messages"][-1] == {"role": "user", "content": "السلام عليكم"}
    assert "tools" not in body


async def test_tool_call_arguments_are_reassembled(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(ScriptedReply.tool_call("order_status", {"order_id": "٤٤١١"}, call_id="c9"))
    outputs = await collect(
        make_model(openai_server, RecordingSleep()), make_request("وين طلبي؟", tools=(ORDER_TOOL,))
    )
    calls = [o for o in outputs if isinstance(o, ToolCallRequest)]
    assert calls == [ToolCallRequest(id="c9", name="order_status", arguments={"order_id": "٤٤١١"})]
    assert openai_server.bodies[0]["tools"][0]["function"]["name"] == "order_status"


async def test_invalid_tool_json_is_kept_as_string(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(ScriptedReply.tool_call("order_status", '{"order_id": 44', call_id="c1"))
    outputs = await collect(
        make_model(openai_server, RecordingSleep()), make_request(tools=(ORDER_TOOL,))
    )
    calls = [o for o in outputs if isinstance(o, ToolCallRequest)]
    assert calls[0].arguments == '{"order_id": 44'


async def test_429_honours_retry_after_then_succeeds(openai_server: ScriptedOpenAIServer) -> None:
    sleep = RecordingSleep()
    openai_server.push(
        ScriptedReply.error(429, "slow down", headers={"Retry-After": "2"}),
        ScriptedReply.text("أهلين"),
    )
    outputs = await collect(
        make_model(openai_server, sleep), make_request(deadline=time.monotonic() + 30)
    )
    assert sleep.waits == [2.0]
    assert [o.text for o in outputs if isinstance(o, TextChunk)] == ["أهلين"]
    assert len(openai_server.requests) == 2


async def test_500_backs_off_then_succeeds(openai_server: ScriptedOpenAIServer) -> None:
    sleep = RecordingSleep()
    openai_server.push(ScriptedReply.error(500, "boom"), ScriptedReply.text("تمام"))
    outputs = await collect(make_model(openai_server, sleep, backoff_base_s=0.4), make_request())
    # equal jitter with rng()=0.5: 0.4/2 + 0.4/2*0.5
    assert sleep.waits == [pytest.approx(0.3)]
    assert any(isinstance(o, TextChunk) for o in outputs)


async def test_retries_are_bounded(openai_server: ScriptedOpenAIServer) -> None:
    sleep = RecordingSleep()
    openai_server.push(*[ScriptedReply.error(503, "down") for _ in range(3)])
    with pytest.raises(ModelError, match="3 attempts"):
        await collect(make_model(openai_server, sleep, max_retries=2), make_request())
    assert len(sleep.waits) == 2


async def test_retry_after_past_deadline_raises_deadline_exceeded(
    openai_server: ScriptedOpenAIServer,
) -> None:
    sleep = RecordingSleep()
    openai_server.push(ScriptedReply.error(429, headers={"Retry-After": "20"}))
    with pytest.raises(DeadlineExceeded):
        await collect(make_model(openai_server, sleep), make_request(deadline=time.monotonic() + 1))
    assert sleep.waits == []  # we did not wait for a retry that could not finish in time


async def test_slow_model_beyond_deadline_raises_deadline_exceeded(
    openai_server: ScriptedOpenAIServer,
) -> None:
    # The reply is due long after the deadline (it was 1.5 s, bounded at 1.4 s:
    # a starved CPU took 3.4 s, and then the bound could not tell the two apart).
    openai_server.push(ScriptedReply(events=[], delay_s=10))
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        await collect(
            make_model(openai_server, RecordingSleep()), make_request(deadline=started + 0.3)
        )
    assert time.monotonic() - started < 8  # gave up at the deadline, not after the reply


async def test_tool_rejection_retries_once_without_tools(
    openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.push(
        ScriptedReply.error(400, '"auto" tool choice requires --enable-auto-tool-choice'),
        ScriptedReply.text("بدون أدوات"),
    )
    outputs = await collect(
        make_model(openai_server, RecordingSleep()), make_request(tools=(ORDER_TOOL,))
    )
    assert [o.text for o in outputs if isinstance(o, TextChunk)] == ["بدون ", "أدوات"]
    first, second = openai_server.bodies
    assert "tools" in first
    assert "tools" not in second


async def test_plain_400_is_not_retried(openai_server: ScriptedOpenAIServer) -> None:
    sleep = RecordingSleep()
    openai_server.push(ScriptedReply.error(400, "messages must not be empty"))
    with pytest.raises(ModelError, match="400"):
        await collect(make_model(openai_server, sleep), make_request(tools=(ORDER_TOOL,)))
    assert len(openai_server.requests) == 1
    assert sleep.waits == []


async def test_malformed_chunk_raises_model_error(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(ScriptedReply.malformed(before="جزء "))
    seen: list[object] = []
    with pytest.raises(ModelError, match="malformed"):
        async for out in make_model(openai_server, RecordingSleep()).stream(make_request()):
            seen.append(out)
    assert seen == [TextChunk("جزء ")]
    assert len(openai_server.requests) == 1  # never retried after text was streamed
