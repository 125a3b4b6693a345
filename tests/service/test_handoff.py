"""Handoff to a person over gRPC, on both stores, with the offline responder.

``handoff_to_human`` marks the thread (GetThread shows it), posts the tenant's
webhook once, and until ``ReleaseHandoff`` every turn gets a short
acknowledgement in the customer's dialect — still recorded in the thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import grpc
import pytest

from majlis.models import PhraseBook
from tests.fakes import WebhookReply, WebhookServer
from tests.service._cli import run_cli
from tests.service.conftest import collect, kinds

HOLD_GULF = PhraseBook.load().say("handoff_hold", "gulf")


def _reply(events: list[Any]) -> str:
    return str(events[-1].turn_completed.text)


async def _hand_off(svc: Any, thread_id: str, **kw: Any) -> list[Any]:
    return await collect(svc.client.send("حولني لموظف لو سمحت", user_id="u1",
                                         thread_id=thread_id, country="KW", **kw))


async def test_handoff_marks_the_thread_posts_once_and_holds_until_released(
    run_service, webhook_server: WebhookServer
) -> None:
    url = webhook_server.route("/helpdesk", WebhookReply(json_body={"ticket": "T-7"}))
    async with run_service(handoff_webhook_url=url) as svc:
        first = await collect(svc.client.send("طلبي رقم 48213 ما وصل", user_id="u1",
                                              country="KW"))
        thread_id = first[-1].thread_id
        handoff = await _hand_off(svc, thread_id, request_id="r-handoff")
        replayed = await _hand_off(svc, thread_id, request_id="r-handoff")
        # الحين: a Gulf marker, so the thread is Gulf enough to mirror (an
        # unmarked «وين صار طلبي؟» is Kuwaiti and Iraqi alike: neutral voice).
        held = await collect(svc.client.send("وين صار طلبي الحين؟", user_id="u1",
                                             thread_id=thread_id, country="KW"))
        during = await svc.client.get_thread(thread_id, user_id="u1")
        posts_before_release = len(webhook_server.requests)
        released = await svc.client.release_handoff(thread_id, user_id="u1")
        after = await collect(svc.client.send("شكرا، وين صار طلبي؟", user_id="u1",
                                              thread_id=thread_id, country="KW"))
        final = await svc.client.get_thread(thread_id, user_id="u1")

    # The handoff turn: the tool ran, its event carries the Arabic summary.
    assert "handoff" in kinds(handoff)
    event = next(e.handoff for e in handoff if e.HasField("handoff"))
    assert "الطلب المفتوح" in event.summary_ar and event.reason
    result = next(e.tool_result for e in handoff if e.HasField("tool_result"))
    assert result.name == "handoff_to_human" and json.loads(result.content_json)["notified"]
    # The webhook was called once: not again on replay, nor by the held turn.
    assert replayed[-1].turn_completed.replayed
    assert posts_before_release == 1
    body = json.loads(webhook_server.requests[0].body)
    assert body["thread_id"] == thread_id and body["event"] == "handoff"
    assert body["summary_ar"] == event.summary_ar and body["reason"] == event.reason
    # While handed off: an acknowledgement, no knowledge base, no tools.
    assert _reply(held) == HOLD_GULF
    assert not {"memory_cited", "tool_call", "handoff"} & set(kinds(held))
    assert during.handed_off and during.handoff_reason == event.reason
    assert during.handoff_summary_ar == event.summary_ar
    assert during.HasField("handed_off_at")
    assert [m.text for m in during.messages][-2:] == ["وين صار طلبي الحين؟", HOLD_GULF]
    # Released: the bot answers again.
    assert not released.handed_off and released.handoff_reason == ""
    assert _reply(after) != HOLD_GULF
    assert not final.handed_off
    assert len(webhook_server.requests) == 1


async def test_another_users_thread_cannot_be_released(
    run_service, webhook_server: WebhookServer
) -> None:
    url = webhook_server.route("/helpdesk", WebhookReply(json_body={}))
    async with run_service(handoff_webhook_url=url) as svc:
        first = await collect(svc.client.send("ابي اكلم موظف", user_id="u1", country="KW"))
        thread_id = first[-1].thread_id
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await svc.client.release_handoff(thread_id, user_id="intruder")
        missing = None
        try:
            await svc.client.release_handoff("0" * 32, user_id="u1")
        except grpc.aio.AioRpcError as exc:
            missing = exc.code()
        still = await svc.client.get_thread(thread_id, user_id="u1")
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert missing == grpc.StatusCode.NOT_FOUND
    assert still.handed_off  # the intruder changed nothing


async def test_failing_webhook_is_logged_and_reported_and_the_handoff_holds(
    run_service, webhook_server: WebhookServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="diwaniya")
    url = webhook_server.route("/helpdesk", WebhookReply(status=503, json_body={"e": "down"}))
    async with run_service(handoff_webhook_url=url) as svc:
        events = await collect(svc.client.send("حولني لموظف", user_id="u1", country="EG"))
        thread_id = events[-1].thread_id
        thread = await svc.client.get_thread(thread_id, user_id="u1")
    result = json.loads(next(e.tool_result for e in events if e.HasField("tool_result"))
                        .content_json)
    assert result["handed_off"] and result["notified"] is False
    assert "503" in result["notify_error"]
    assert thread.handed_off
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(thread_id in w and "503" in w for w in warnings)
    assert len(webhook_server.requests) == 1


async def test_handoff_without_a_webhook_still_marks_the_thread(run_service) -> None:
    async with run_service() as svc:
        events = await collect(svc.client.send("ابغى اكلم موظف حقيقي", user_id="u1",
                                               country="SA"))
        thread_id = events[-1].thread_id
        held = await collect(svc.client.send("طيب متى؟", user_id="u1", thread_id=thread_id,
                                             country="SA"))
        thread = await svc.client.get_thread(thread_id, user_id="u1")
    assert "handoff" in kinds(events)
    assert thread.handed_off and _reply(held) == HOLD_GULF


async def test_cli_thread_release(run_service, tmp_path, monkeypatch, capsys) -> None:
    env = {"DIWANIYA_DATA_DIR": str(tmp_path / "cli")}
    async with run_service() as svc:
        events = await collect(svc.client.send("حولني لموظف", user_id="u1", country="KW"))
        thread_id = events[-1].thread_id
        # In-process (service.cli.main runs its own event loop: in a thread).
        done = await asyncio.to_thread(
            run_cli, monkeypatch, capsys, env, "thread", "release", "--thread", thread_id,
            "--user", "u1", "--target", svc.target)
        other = await asyncio.to_thread(
            run_cli, monkeypatch, capsys, env, "thread", "release", "--thread", thread_id,
            "--user", "someone-else", "--target", svc.target)
        thread = await svc.client.get_thread(thread_id, user_id="u1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"thread_id": thread_id, "handed_off": False,
                                       "messages": 2}
    assert other.returncode == 2 and "NOT_FOUND (THREAD_NOT_FOUND)" in other.stderr
    assert not thread.handed_off


async def test_model_handoff_holds_later_turns_without_calling_the_model(
    run_service, webhook_server: WebhookServer
) -> None:
    from tests.fakes import ScriptedOpenAIServer, ScriptedReply

    model = ScriptedOpenAIServer()
    try:
        model.push(ScriptedReply.tool_call("handoff_to_human", {"reason": "العميل يطلب موظفًا"}))
        model.push(ScriptedReply.text("أبشر، حوّلتك لزميل يتابع معك."))
        url = webhook_server.route("/helpdesk", WebhookReply(json_body={}))
        async with run_service(model_base_url=model.base_url, handoff_webhook_url=url) as svc:
            first = await collect(svc.client.send("ابي احد من الموظفين يكلمني", user_id="u1",
                                                  country="KW"))
            thread_id = first[-1].thread_id
            held = await collect(svc.client.send("متى بيكلموني؟", user_id="u1",
                                                 thread_id=thread_id, country="KW"))
            thread = await svc.client.get_thread(thread_id, user_id="u1")
        calls = len(model.requests)
    finally:
        model.close()
    assert "handoff" in kinds(first)
    assert thread.handed_off and thread.handoff_reason == "العميل يطلب موظفًا"
    assert _reply(held) == HOLD_GULF
    assert "usage" not in kinds(held)
    assert calls == 2  # the tool round and its answer; the held turn made no model call
    assert len(webhook_server.requests) == 1


async def test_a_slow_webhook_is_cut_off_and_the_handoff_holds(
    run_service, webhook_server: WebhookServer
) -> None:
    url = webhook_server.route("/helpdesk", WebhookReply(json_body={}, delay_s=3.0))
    async with run_service(handoff_webhook_url=url, handoff_webhook_timeout_s=0.5) as svc:
        events = await collect(svc.client.send("حولني لموظف", user_id="u1", country="KW"))
        thread = await svc.client.get_thread(events[-1].thread_id, user_id="u1")
    result = json.loads(next(e.tool_result for e in events if e.HasField("tool_result"))
                        .content_json)
    assert result["notified"] is False and "did not answer" in result["notify_error"]
    assert thread.handed_off


async def test_release_during_a_running_turn_is_aborted(run_service) -> None:
    from tests.fakes import ScriptedOpenAIServer, ScriptedReply

    model = ScriptedOpenAIServer()
    try:
        model.push(ScriptedReply.text("أهلين"))
        model.push(ScriptedReply.text(" ".join(["كلمة"] * 30), event_delay_s=0.2))
        async with run_service(model_base_url=model.base_url) as svc:
            first = await collect(svc.client.send("هلا", user_id="u1"))
            thread_id = first[-1].thread_id
            call = svc.client.send("اشرح لي سياسة الاسترجاع", user_id="u1",
                                   thread_id=thread_id)
            seen = []
            async for event in call:
                seen.append(event)
                if event.HasField("text_delta"):  # the turn holds the lock now
                    break
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await svc.client.release_handoff(thread_id, user_id="u1")
            call.cancel()
    finally:
        model.close()
    assert err.value.code() == grpc.StatusCode.ABORTED


async def test_each_tenant_has_its_own_handoff_webhook(
    run_service, webhook_server: WebhookServer
) -> None:
    from service import DiwaniyaClient

    shop_url = webhook_server.route("/shop", WebhookReply(json_body={}))
    async with run_service(api_keys={"k-shop": "shop", "k-bank": "bank"},
                           tenants={"shop": {"handoff_webhook_url": shop_url}}) as svc:
        async with DiwaniyaClient(svc.target, api_key="k-shop") as shop, \
                DiwaniyaClient(svc.target, api_key="k-bank") as bank:
            shop_events = await collect(shop.send("حولني لموظف", user_id="u1", country="KW"))
            bank_events = await collect(bank.send("حولني لموظف", user_id="u1", country="KW"))
            bank_thread = await bank.get_thread(bank_events[-1].thread_id, user_id="u1")
    assert "handoff" in kinds(shop_events) and "handoff" in kinds(bank_events)
    assert [r.path for r in webhook_server.requests] == ["/shop"]
    headers = {k.lower(): v for k, v in webhook_server.requests[0].headers.items()}
    assert headers["x-diwaniya-tenant"] == "shop"
    assert webhook_server.requests[0].json()["tenant"] == "shop"
    assert bank_thread.handed_off  # no webhook configured: the handoff still holds
