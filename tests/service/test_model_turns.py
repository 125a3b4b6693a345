"""A configured OpenAI-compatible model over gRPC: streaming, tools, usage, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes import ScriptedOpenAIServer, ScriptedReply, WebhookReply, WebhookServer
from tests.service.conftest import collect, kinds


async def test_model_tokens_stream_as_ordered_deltas_and_usage_is_kept(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(ScriptedReply.text("هلا والله، حياك الله. كيف أقدر أخدمك اليوم؟",
                                          usage=(120, 14)))
    openai_server.push(ScriptedReply.text("أبشر، عطني رقم الطلب.", usage=(150, 9)))
    async with run_service(model_base_url=openai_server.base_url,
                           model_price_prompt_per_1k=0.5,
                           model_price_completion_per_1k=1.5) as svc:
        first = await collect(svc.client.send("هلا", user_id="u1"))
        second = await collect(svc.client.send("ابي اعرف وين طلبي", user_id="u1",
                                               thread_id=first[-1].thread_id))
        thread = await svc.client.get_thread(first[-1].thread_id, user_id="u1")
    deltas = [e.text_delta.text for e in first if e.HasField("text_delta")]
    assert "".join(deltas) == "هلا والله، حياك الله. كيف أقدر أخدمك اليوم؟"
    assert len(deltas) > 3
    usage = next(e.usage for e in first if e.HasField("usage"))
    assert (usage.prompt_tokens, usage.completion_tokens) == (120, 14)
    assert usage.cost_usd == pytest.approx(120 / 1000 * 0.5 + 14 / 1000 * 1.5)
    assert (thread.prompt_tokens, thread.completion_tokens) == (270, 23)
    assert thread.cost_usd == pytest.approx((270 * 0.5 + 23 * 1.5) / 1000)
    # The model saw the Majlis tone and the date in both calendars in its system prompt.
    system = openai_server.bodies[1]["messages"][0]["content"]
    assert openai_server.bodies[1]["messages"][0]["role"] == "system"
    assert "1448" in system or "1447" in system
    assert second[-1].turn_completed.text == "أبشر، عطني رقم الطلب."


async def test_webhook_tool_round_trip(
    run_service, openai_server: ScriptedOpenAIServer, webhook_server: WebhookServer,
    tmp_path: Path
) -> None:
    url = webhook_server.route("/orders/status", WebhookReply(
        json_body={"order_id": "4411", "status": "خرج للتوصيل", "eta": "اليوم ٨ مساءً"}))
    tools = [{
        "name": "order_status", "description_ar": "حالة الطلب ومتى يوصل",
        "description_en": "order status and delivery time",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]},
        "url": url, "examples": ["وين طلبي", "متى يوصل الطلب"],
    }]
    (tmp_path / "tools.json").write_text(json.dumps(tools, ensure_ascii=False), encoding="utf-8")
    openai_server.push(ScriptedReply.tool_call("order_status", {"order_id": "4411"}))
    openai_server.push(ScriptedReply.text("طلبك رقم 4411 خرج للتوصيل ويوصلك اليوم الساعة ٨ مساءً."))
    async with run_service(model_base_url=openai_server.base_url,
                           tools_file=tmp_path / "tools.json") as svc:
        events = await collect(svc.client.send("وين طلبي رقم 4411؟", user_id="u1"))
    order = kinds(events)
    assert order.index("tool_call") < order.index("tool_result") < order.index("turn_completed")
    call = next(e.tool_call for e in events if e.HasField("tool_call"))
    result = next(e.tool_result for e in events if e.HasField("tool_result"))
    assert call.name == "order_status" and json.loads(call.arguments_json) == {"order_id": "4411"}
    assert result.ok and json.loads(result.content_json)["status"] == "خرج للتوصيل"
    assert len(webhook_server.requests) == 1
    assert json.loads(webhook_server.requests[0].body) == {"order_id": "4411"}
    # The second model call carried the tool's answer back.
    assert any(m["role"] == "tool" for m in openai_server.bodies[1]["messages"])
    assert "4411" in events[-1].turn_completed.text


async def test_offline_responder_calls_only_the_tenants_own_webhook(
    run_service, webhook_server: WebhookServer, tmp_path: Path
) -> None:
    url = webhook_server.route("/orders", WebhookReply(
        json_body={"order_id": "4411", "status": "قيد التوصيل"}))
    tools = [{
        "name": "order_status", "description_ar": "حالة الطلب",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]},
        "url": url, "examples": ["وين طلبي", "حالة الطلب"],
        "parameter_patterns": {"order_id": r"\d{4,}"},
    }]
    shop_tools = tmp_path / "shop-tools.json"
    shop_tools.write_text(json.dumps(tools, ensure_ascii=False), encoding="utf-8")
    async with run_service(api_keys={"k-shop": "shop", "k-bank": "bank"},
                           tenants={"shop": {"tools_file": str(shop_tools)}}) as svc:
        from diwaniya.client import AsyncClient

        async with AsyncClient(svc.target, api_key="k-shop") as shop, \
                AsyncClient(svc.target, api_key="k-bank") as bank:
            shop_events = await collect(shop.send("وين طلبي رقم 4411", user_id="u1"))
            bank_events = await collect(bank.send("وين طلبي رقم 4411", user_id="u1"))
    assert "tool_call" in kinds(shop_events) and "tool_result" in kinds(shop_events)
    result = next(e.tool_result for e in shop_events if e.HasField("tool_result"))
    assert result.ok and "قيد التوصيل" in result.content_json
    assert "tool_call" not in kinds(bank_events)  # the bank has no such backend
    assert len(webhook_server.requests) == 1
