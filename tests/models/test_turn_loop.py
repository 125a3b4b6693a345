"""run_model_turn end to end: scripted OpenAI-compatible server + real tools."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
import pytest

from diwaniya.errors import DeadlineExceeded, ModelUnavailable
from majlis.events import (
    ApprovalRequired,
    Event,
    Handoff,
    TextDelta,
    ToolCall,
    ToolResult,
    TurnError,
    Usage,
)
from majlis.models import (
    ChatMessage,
    ModelConfig,
    ModelRequest,
    Pricing,
    ResponderContext,
    ToolSpec,
)
from majlis.models.openai_compat import OpenAICompatibleModel
from majlis.tools import (
    FALLBACK_REPLY,
    Tool,
    ToolContext,
    ToolOutcome,
    ToolRegistry,
    WebhookTool,
    WebhookToolConfig,
    handoff_tool,
    run_model_turn,
)
from tests.fakes import ScriptedOpenAIServer, ScriptedReply, WebhookReply, WebhookServer

CTX = ToolContext(tenant="t1", user_id="u1", thread_id="th1", turn_id="tu1")
ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
}


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.of(TextDelta))


async def no_sleep(seconds: float) -> None:
    return None


def model_for(server: ScriptedOpenAIServer) -> OpenAICompatibleModel:
    config = ModelConfig(base_url=server.base_url, model="fake-model", timeout_s=5)
    return OpenAICompatibleModel(config, sleep=no_sleep, rng=lambda: 0.0)


def request(text: str, deadline: float | None = None) -> ModelRequest:
    return ModelRequest(
        messages=(ChatMessage("system", "أنت مساعد."), ChatMessage("user", text)),
        tools=(),
        context=ResponderContext(user_text=text, is_request=True),
        deadline=deadline,
    )


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def order_tool(url: str, client: httpx.AsyncClient, *, approval: bool = False) -> WebhookTool:
    return WebhookTool(
        WebhookToolConfig(
            name="order_status",
            description_ar="استعلام عن حالة الطلب",
            parameters=ORDER_SCHEMA,
            url=url,
            # No test here is about the webhook's timeout: far above a local
            # reply on a starved CPU (a 0.5 s one timed out a local 404 once).
            timeout_s=10,
            requires_approval=approval,
        ),
        client,
    )


async def test_text_streams_as_ordered_deltas_with_priced_usage(
    openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.push(ScriptedReply.text("هلا والله، كيف أقدر أخدمك اليوم؟", usage=(1000, 500)))
    rec = Recorder()
    out = await run_model_turn(
        model_for(openai_server),
        request("هلا"),
        ToolRegistry([]),
        CTX,
        rec,
        prices=Pricing(prompt_per_1k=0.002, completion_per_1k=0.004),
    )
    assert [e.text for e in rec.of(TextDelta)] == [
        "هلا ",
        "والله، ",
        "كيف ",
        "أقدر ",
        "أخدمك ",
        "اليوم؟",
    ]
    assert out.text == rec.text == "هلا والله، كيف أقدر أخدمك اليوم؟"
    usage = rec.events[-1]
    assert isinstance(usage, Usage)
    assert (usage.model, usage.prompt_tokens, usage.completion_tokens) == ("fake-model", 1000, 500)
    assert usage.cost_usd == pytest.approx(0.002 + 0.002)
    assert out.usage == rec.events[-1]


async def test_tool_call_round_trip(
    openai_server: ScriptedOpenAIServer, webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/orders", WebhookReply(json_body={"status": "في الطريق"}))
    openai_server.push(
        ScriptedReply.tool_call("order_status", {"order_id": "4411"}, call_id="c1", usage=(50, 10)),
        ScriptedReply.text("طلبك رقم 4411 في الطريق.", usage=(80, 9)),
    )
    rec = Recorder()
    out = await run_model_turn(
        model_for(openai_server),
        request("وين طلبي رقم 4411؟"),
        ToolRegistry([order_tool(url, client)]),
        CTX,
        rec,
    )
    kinds = [type(e).__name__ for e in rec.events]
    assert kinds[:2] == ["ToolCall", "ToolResult"] and kinds[-1] == "Usage"
    assert rec.of(ToolCall)[0] == ToolCall("c1", "order_status", '{"order_id": "4411"}')
    result = rec.of(ToolResult)[0]
    assert result.ok and json.loads(result.content_json) == {"status": "في الطريق"}
    assert out.text == "طلبك رقم 4411 في الطريق."
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (130, 19)  # type: ignore[union-attr]
    # The model saw the tool result in the second request.
    second = openai_server.bodies[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "order_status"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "c1"
    assert json.loads(second[-1]["content"])["content"] == {"status": "في الطريق"}


async def test_failing_webhook_is_reported_to_the_model(
    openai_server: ScriptedOpenAIServer, webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/orders", WebhookReply(status=503, json_body={"e": "down"}))
    openai_server.push(
        ScriptedReply.tool_call("order_status", {"order_id": "1"}, call_id="c1"),
        ScriptedReply.text("النظام متعطل حاليًا."),
    )
    rec = Recorder()
    out = await run_model_turn(
        model_for(openai_server),
        request("وين طلبي؟"),
        ToolRegistry([order_tool(url, client)]),
        CTX,
        rec,
    )
    assert not rec.of(ToolResult)[0].ok and "HTTP 503" in rec.of(ToolResult)[0].error
    assert json.loads(openai_server.bodies[1]["messages"][-1]["content"])["ok"] is False
    assert out.text == "النظام متعطل حاليًا."


async def test_schema_invalid_arguments_from_the_model(
    openai_server: ScriptedOpenAIServer, webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/orders", WebhookReply(json_body={}))
    openai_server.push(
        ScriptedReply.tool_call("order_status", {"order_id": 4411}, call_id="c1"),
        ScriptedReply.text("عذرًا، أعطني رقم الطلب."),
    )
    rec = Recorder()
    await run_model_turn(
        model_for(openai_server),
        request("طلبي"),
        ToolRegistry([order_tool(url, client)]),
        CTX,
        rec,
    )
    result = rec.of(ToolResult)[0]
    assert not result.ok and result.error.startswith("invalid arguments at order_id")
    assert webhook_server.requests == []


async def test_approval_required_tool_is_not_run(
    openai_server: ScriptedOpenAIServer, webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/orders", WebhookReply(json_body={}))
    openai_server.push(
        ScriptedReply.tool_call("order_status", {"order_id": "9"}, call_id="c1"),
        ScriptedReply.text("بانتظار الموافقة."),
    )
    rec = Recorder()
    await run_model_turn(
        model_for(openai_server),
        request("ألغِ طلبي"),
        ToolRegistry([order_tool(url, client, approval=True)]),
        CTX,
        rec,
    )
    assert rec.of(ApprovalRequired)[0].call_id == "c1"
    assert rec.of(ToolResult) == [] and webhook_server.requests == []
    told = json.loads(openai_server.bodies[1]["messages"][-1]["content"])
    assert told["status"] == "awaiting_approval"


async def test_handoff_tool_emits_handoff(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(
        ScriptedReply.tool_call("handoff_to_human", {"reason": "يصر"}, call_id="h1"),
        ScriptedReply.text("حوّلتك لزميلي."),
    )
    rec = Recorder()
    out = await run_model_turn(
        model_for(openai_server),
        request("أبي أكلم موظف"),
        ToolRegistry([handoff_tool(lambda: "اللهجة: gulf")]),
        CTX,
        rec,
    )
    assert rec.of(Handoff) == [Handoff(summary_ar="اللهجة: gulf", reason="يصر")]
    assert out.handoff


async def test_unknown_tool_and_bad_json_are_tool_errors(
    openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.push(
        ScriptedReply.tool_call("delete_everything", {}, call_id="x1"),
        ScriptedReply.tool_call("handoff_to_human", '{"reason": ', call_id="x2"),
        ScriptedReply.text("تمام."),
    )
    rec = Recorder()
    await run_model_turn(
        model_for(openai_server),
        request("سو شي"),
        ToolRegistry([handoff_tool(lambda: "")]),
        CTX,
        rec,
    )
    first, second = rec.of(ToolResult)
    assert "no tool named 'delete_everything'" in first.error
    assert "not a valid JSON object" in second.error
    assert rec.of(Handoff) == []


async def test_tool_rounds_are_bounded(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(
        *[ScriptedReply.tool_call("kb_x", {}, call_id=f"c{i}") for i in range(2)],
        ScriptedReply.text("هذا ما وجدته."),
    )
    rec = Recorder()
    out = await run_model_turn(
        model_for(openai_server),
        request("سؤال"),
        ToolRegistry([handoff_tool(lambda: "")]),
        CTX,
        rec,
        max_tool_rounds=2,
    )
    assert len(rec.of(ToolCall)) == 2
    assert out.text == "هذا ما وجدته."
    bodies = openai_server.bodies
    assert "tools" in bodies[0] and "tools" in bodies[1]
    assert "tools" not in bodies[2]  # out of rounds: must answer, cannot call again


async def test_empty_reply_is_reprompted_once(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(ScriptedReply.empty(), ScriptedReply.text("أهلًا بك."))
    rec = Recorder()
    out = await run_model_turn(model_for(openai_server), request("هلا"), ToolRegistry([]), CTX, rec)
    assert out.text == "أهلًا بك."
    reprompt = openai_server.bodies[1]["messages"][-1]
    assert reprompt["role"] == "user" and "لم يصلني منك أي ردّ" in reprompt["content"]


async def test_empty_twice_serves_arabic_fallback(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(ScriptedReply.empty(), ScriptedReply.empty())
    rec = Recorder()
    out = await run_model_turn(model_for(openai_server), request("هلا"), ToolRegistry([]), CTX, rec)
    assert out.text == rec.text == FALLBACK_REPLY
    assert len(openai_server.requests) == 2
    assert rec.of(TurnError) == []


async def test_malformed_chunk_raises_model_unavailable_not_an_apology(
    openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.push(ScriptedReply.malformed())
    rec = Recorder()
    with pytest.raises(ModelUnavailable, match="malformed"):
        await run_model_turn(model_for(openai_server), request("هلا"), ToolRegistry([]), CTX,
                             rec)
    assert rec.text == "" and rec.of(TurnError) == []  # no apology streamed as the answer


async def test_malformed_after_text_still_fails_the_turn(
    openai_server: ScriptedOpenAIServer,
) -> None:
    # Half an answer is not an answer: the caller retries the whole turn.
    openai_server.push(ScriptedReply.malformed(before="جواب جزئي"))
    rec = Recorder()
    with pytest.raises(ModelUnavailable):
        await run_model_turn(model_for(openai_server), request("هلا"), ToolRegistry([]), CTX,
                             rec)


async def test_unreachable_endpoint_retries_then_model_unavailable() -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    config = ModelConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=1, max_retries=2)
    model = OpenAICompatibleModel(config, sleep=sleep, rng=lambda: 0.0)
    rec = Recorder()
    with pytest.raises(ModelUnavailable, match="connection failed"):
        await run_model_turn(model, request("هلا"), ToolRegistry([]), CTX, rec)
    assert len(sleeps) == 2  # two retries with backoff, then give up


async def test_deadline_exceeded_propagates(openai_server: ScriptedOpenAIServer) -> None:
    import time

    openai_server.push(ScriptedReply(events=[], delay_s=1.0))
    with pytest.raises(DeadlineExceeded):
        await run_model_turn(
            model_for(openai_server),
            request("هلا", deadline=time.monotonic() + 0.2),
            ToolRegistry([]),
            CTX,
            Recorder(),
        )


class _Static:
    def __init__(self, name: str, description: str, examples: Sequence[str]) -> None:
        self.spec = ToolSpec(name, description, {"type": "object"}, examples=tuple(examples))
        self.requires_approval = False
        self.examples = examples

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome(ok=True)


def test_registry_binds_the_relevant_few() -> None:
    tools: list[Tool] = [
        _Static("order_status", "حالة الطلب والشحن", ["وين طلبي", "متى يوصل الطلب"]),
        _Static("book_table", "حجز طاولة في المطعم", ["ابي احجز طاولة"]),
        _Static("reset_password", "إعادة تعيين كلمة المرور", ["نسيت كلمة السر"]),
        _Static("loyalty_points", "رصيد نقاط الولاء", ["كم نقاطي"]),
        handoff_tool(lambda: ""),
    ]
    registry = ToolRegistry(tools)
    picked = [t.spec.name for t in registry.select("ودي أحجز طاولة لشخصين الليلة", k=1)]
    assert picked == ["handoff_to_human", "book_table"]
    picked = [t.spec.name for t in registry.select("وين وصل الطلب حقي؟", k=1)]
    assert picked == ["handoff_to_human", "order_status"]
    assert len(registry.select("أي شي", k=10)) == 5  # few tools: bind them all
