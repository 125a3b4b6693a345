"""A model that fails after its retries, over gRPC on both stores.

Default: ``SendMessage`` ends UNAVAILABLE, ``Converse`` gets a retryable
``error`` event and stays open, and nothing is added to the thread. With
``on_model_failure = "offline"`` the offline responder answers instead
(``usage.model == "offline"``). Either way one WARNING names the thread, the
turn and the failure.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from diwaniya.v1 import conversations_pb2 as pb
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect, kinds

# The PostgreSQL database is shared by the whole session and request ids are
# per user: a user of this module alone keeps "r-1" from meeting another test's.
USER = f"outage-{uuid.uuid4().hex[:8]}"
# Every attempt (the first and its 3 retries) answers 500.
ATTEMPTS = 4


def _fail_every_attempt(server: ScriptedOpenAIServer) -> None:
    server.push(*(ScriptedReply.error(500, "upstream exploded") for _ in range(ATTEMPTS)))


async def _events_until_status(call: Any) -> tuple[list[Any], grpc.aio.AioRpcError]:
    seen: list[Any] = []
    with pytest.raises(grpc.aio.AioRpcError) as err:
        async for event in call:
            seen.append(event)
    return seen, err.value


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


async def test_send_message_is_unavailable_and_the_thread_is_untouched(
    run_service, openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="diwaniya")
    openai_server.push(ScriptedReply.text("هلا والله، كيف أقدر أخدمك؟"))
    _fail_every_attempt(openai_server)
    async with run_service(model_base_url=openai_server.base_url) as svc:
        first = await collect(svc.client.send("هلا", user_id=USER, country="KW"))
        thread_id = first[-1].thread_id
        seen, status = await _events_until_status(svc.client.send(
            "ابي ارجع الطلب رقم 48213", user_id=USER, thread_id=thread_id, request_id="r-2"))
        thread = await svc.client.get_thread(thread_id, user_id=USER)
    assert status.code() == grpc.StatusCode.UNAVAILABLE
    assert "500" in status.details()
    assert "turn_completed" not in kinds(seen)
    assert len(openai_server.requests) == 1 + ATTEMPTS  # retried, then gave up
    # Nothing of the failed turn is in the thread: no apology stored as the answer.
    assert [m.text for m in thread.messages] == ["هلا", "هلا والله، كيف أقدر أخدمك؟"]
    turn_id = seen[0].turn_id
    lines = [w for w in _warnings(caplog) if thread_id in w and turn_id in w]
    assert len(lines) == 1 and "500" in lines[0] and "UNAVAILABLE" in lines[0]


async def test_same_request_id_after_the_outage_runs_the_turn(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    _fail_every_attempt(openai_server)
    openai_server.push(ScriptedReply.text("أبشر، طلبك رقم 48213 في الطريق."))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        seen, status = await _events_until_status(
            svc.client.send("وين طلبي رقم 48213؟", user_id=USER, request_id="r-1"))
        thread_id = seen[0].thread_id
        again = await collect(svc.client.send("وين طلبي رقم 48213؟", user_id=USER,
                                              thread_id=thread_id, request_id="r-1"))
        thread = await svc.client.get_thread(thread_id, user_id=USER)
    assert status.code() == grpc.StatusCode.UNAVAILABLE
    # The failed attempt left no replay record: the retry really runs.
    assert not again[-1].turn_completed.replayed
    assert again[-1].turn_completed.text == "أبشر، طلبك رقم 48213 في الطريق."
    assert len(thread.messages) == 2


async def _messages(*texts: str, thread_id: str) -> AsyncIterator[pb.ClientMessage]:
    for text in texts:
        yield pb.ClientMessage(message=pb.SendMessageRequest(
            text=text, user_id=USER, thread_id=thread_id))


async def test_converse_gets_a_retryable_error_event_and_stays_open(
    run_service, openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="diwaniya")
    openai_server.push(ScriptedReply.text("أهلين، تفضّل."))
    _fail_every_attempt(openai_server)
    openai_server.push(ScriptedReply.text("رجع النظام، تفضّل بسؤالك."))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        first = await collect(svc.client.send("مرحبا", user_id=USER))
        thread_id = first[-1].thread_id
        events = await collect(svc.client.converse(_messages(
            "وين صار طلبي؟", "طيب هلق؟", thread_id=thread_id)))
        thread = await svc.client.get_thread(thread_id, user_id=USER)
    errors = [e.error for e in events if e.HasField("error")]
    assert len(errors) == 1
    assert errors[0].code == "unavailable" and errors[0].retryable
    # …and the stream stayed open: the next message was answered.
    assert kinds(events)[-1] == "turn_completed"
    assert events[-1].turn_completed.text == "رجع النظام، تفضّل بسؤالك."
    assert [m.text for m in thread.messages] == [
        "مرحبا", "أهلين، تفضّل.", "طيب هلق؟", "رجع النظام، تفضّل بسؤالك."]
    assert any(thread_id in w and "UNAVAILABLE" in w for w in _warnings(caplog))


async def test_unreachable_model_is_unavailable(
    run_service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="diwaniya")
    # Port 9 (discard) refuses connections: every attempt fails to connect.
    async with run_service(model_base_url="http://127.0.0.1:9/v1", model_timeout_s=1.0,
                           default_turn_timeout_s=30) as svc:
        seen, status = await _events_until_status(svc.client.send("هلا", user_id=USER))
        thread = await svc.client.get_thread(seen[0].thread_id, user_id=USER)
    assert status.code() == grpc.StatusCode.UNAVAILABLE
    assert "connection" in status.details()
    assert list(thread.messages) == []
    assert any(seen[0].turn_id in w and "connection" in w for w in _warnings(caplog))


async def test_offline_setting_answers_with_the_offline_responder(
    run_service, openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="diwaniya")
    _fail_every_attempt(openai_server)
    async with run_service(model_base_url=openai_server.base_url,
                           on_model_failure="offline") as svc:
        events = await collect(svc.client.send("السلام عليكم", user_id=USER, country="KW"))
        thread_id = events[-1].thread_id
        thread = await svc.client.get_thread(thread_id, user_id=USER)
    assert kinds(events)[-1] == "turn_completed"
    assert "error" not in kinds(events)
    usage = next(e.usage for e in events if e.HasField("usage"))
    assert usage.model == "offline" and usage.prompt_tokens == 0
    reply = events[-1].turn_completed.text
    assert reply.startswith("وعليكم السلام")
    assert [m.text for m in thread.messages] == ["السلام عليكم", reply]
    turn_id = events[0].turn_id
    lines = [w for w in _warnings(caplog) if thread_id in w and turn_id in w]
    assert len(lines) == 1 and "offline" in lines[0] and "500" in lines[0]


async def test_offline_setting_is_per_tenant(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    _fail_every_attempt(openai_server)
    _fail_every_attempt(openai_server)
    async with run_service(model_base_url=openai_server.base_url,
                           api_keys={"k-shop": "shop", "k-bank": "bank"},
                           tenants={"shop": {"on_model_failure": "offline"}}) as svc:
        from service import DiwaniyaClient

        async with DiwaniyaClient(svc.target, api_key="k-shop") as shop, \
                DiwaniyaClient(svc.target, api_key="k-bank") as bank:
            shop_events = await collect(shop.send("هلا", user_id=USER))
            _, status = await _events_until_status(bank.send("هلا", user_id=USER))
    assert next(e.usage for e in shop_events if e.HasField("usage")).model == "offline"
    assert status.code() == grpc.StatusCode.UNAVAILABLE
