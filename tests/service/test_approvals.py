"""Tools that act for the user wait for the caller's approval — then run exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from diwaniya.v1 import conversations_pb2 as pb
from tests.fakes import WebhookReply, WebhookServer
from tests.service.conftest import collect, kinds
from tests.service.test_server import _messages


@pytest.fixture
def cancel_tool(webhook_server: WebhookServer, tmp_path: Path) -> Path:
    url = webhook_server.route("/orders/cancel", WebhookReply(
        json_body={"order_id": "4411", "status": "ملغي"}))
    tools = [{
        "name": "cancel_order", "description_ar": "إلغاء طلب",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]},
        "url": url, "requires_approval": True,
        "examples": ["الغي طلبي", "ابي الغي الطلب"],
        "parameter_patterns": {"order_id": r"\d{4,}"},
    }]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools, ensure_ascii=False), encoding="utf-8")
    return path


async def _held_call(svc) -> tuple[str, str]:
    events = await collect(svc.client.send("ابي الغي طلبي رقم 4411", user_id="u1"))
    assert "approval_required" in kinds(events)
    assert "tool_result" not in kinds(events)
    held = next(e.approval_required for e in events if e.HasField("approval_required"))
    assert held.name == "cancel_order" and json.loads(held.arguments_json) == {"order_id": "4411"}
    return events[-1].thread_id, held.call_id


async def test_approved_call_runs_once_and_replays(run_service, cancel_tool: Path,
                                                   webhook_server: WebhookServer) -> None:
    async with run_service(tools_file=cancel_tool) as svc:
        thread_id, call_id = await _held_call(svc)
        assert webhook_server.requests == []  # nothing ran before approval
        approve = dict(thread_id=thread_id, user_id="u1", request_id="ok-1")
        first = await collect(svc.client.approve(call_id, **approve))
        again = await collect(svc.client.approve(call_id, **approve))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await collect(svc.client.approve(call_id, thread_id=thread_id, user_id="u1"))
        thread = await svc.client.get_thread(thread_id, user_id="u1")
    result = next(e.tool_result for e in first if e.HasField("tool_result"))
    assert result.ok and "ملغي" in result.content_json
    assert "ملغي" in first[-1].turn_completed.text
    assert again[-1].turn_completed.replayed and again[-1].turn_id == first[-1].turn_id
    assert len(webhook_server.requests) == 1  # ran exactly once
    assert err.value.code() == grpc.StatusCode.NOT_FOUND  # settled already
    assert thread.messages[-1].text == first[-1].turn_completed.text


async def test_declined_call_never_runs(run_service, cancel_tool: Path,
                                        webhook_server: WebhookServer) -> None:
    async with run_service(tools_file=cancel_tool) as svc:
        thread_id, call_id = await _held_call(svc)
        declined = await collect(svc.client.approve(call_id, thread_id=thread_id, user_id="u1",
                                                    approved=False))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await collect(svc.client.approve(call_id, thread_id=thread_id, user_id="intruder"))
    assert "tool_result" not in kinds(declined)
    said = declined[-1].turn_completed.text
    assert "لغينا" in said or "ألغينا" in said  # the team cancelled it
    assert webhook_server.requests == []
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_converse_carries_the_approval(run_service, cancel_tool: Path,
                                             webhook_server: WebhookServer) -> None:
    async with run_service(tools_file=cancel_tool) as svc:
        thread_id, call_id = await _held_call(svc)
        events = await collect(svc.client.converse(_messages(pb.ClientMessage(
            approval=pb.Approval(thread_id=thread_id, user_id="u1", call_id=call_id,
                                 approved=True)))))
    assert kinds(events)[-1] == "turn_completed"
    assert "tool_result" in kinds(events)
    assert len(webhook_server.requests) == 1


async def test_an_approval_keeps_the_turn_deadline(run_service, webhook_server: WebhookServer,
                                                   tmp_path: Path) -> None:
    """An approval is a turn like any other: the backend is given only what is left of
    the turn's deadline (2 s here), not its own 30 s, and a late answer is never reported."""
    url = webhook_server.route("/orders/cancel", WebhookReply(
        json_body={"order_id": "4411", "status": "ملغي"}, delay_s=6.0))
    path = tmp_path / "slow_tools.json"
    path.write_text(json.dumps([{
        "name": "cancel_order", "description_ar": "إلغاء طلب",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]},
        "url": url, "requires_approval": True, "timeout_s": 30,
        "examples": ["الغي طلبي", "ابي الغي الطلب"],
        "parameter_patterns": {"order_id": r"\d{4,}"},
    }], ensure_ascii=False), encoding="utf-8")
    async with run_service(tools_file=path, default_turn_timeout_s=2.0) as svc:
        thread_id, call_id = await _held_call(svc)
        code, events = grpc.StatusCode.OK, []
        try:
            events = await collect(svc.client.approve(call_id, thread_id=thread_id,
                                                      user_id="u1"))
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
    # Either the turn's deadline ended it (nothing saved), or the tool was cut at the
    # deadline and the turn said so; never the backend's late «ملغي».
    assert code in (grpc.StatusCode.OK, grpc.StatusCode.DEADLINE_EXCEEDED)
    if code == grpc.StatusCode.OK:
        result = next(e.tool_result for e in events if e.HasField("tool_result"))
        assert not result.ok and "ملغي" not in events[-1].turn_completed.text
