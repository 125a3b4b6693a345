"""Converse streams, health, reflection, and graceful drain on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from diwaniya.v1 import conversations_pb2 as pb
from service import DiwaniyaClient
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect, kinds


async def _messages(*items: pb.ClientMessage, gap: float = 0.0,
                    hold: asyncio.Event | None = None) -> AsyncIterator[pb.ClientMessage]:
    for item in items:
        yield item
        await asyncio.sleep(gap)
    if hold is not None:
        await hold.wait()


def _msg(text: str, **kw: str) -> pb.ClientMessage:
    return pb.ClientMessage(message=pb.SendMessageRequest(text=text, user_id="u1", **kw))


async def test_converse_carries_many_turns_on_one_stream(run_service) -> None:
    async with run_service() as svc:
        first = await collect(svc.client.send("هلا", user_id="u1"))
        thread_id = first[-1].thread_id
        events = await collect(svc.client.converse(_messages(
            _msg("السلام عليكم", thread_id=thread_id),
            _msg("عندي مشكلة في الفاتورة", thread_id=thread_id),
        )))
        thread = await svc.client.get_thread(thread_id, user_id="u1")
    completed = [e for e in events if e.HasField("turn_completed")]
    assert len(completed) == 2
    assert len({e.turn_id for e in completed}) == 2
    assert len(thread.messages) == 6


async def test_converse_reports_a_bad_turn_and_stays_open(run_service) -> None:
    async with run_service() as svc:
        events = await collect(svc.client.converse(_messages(_msg(""), _msg("هلا"))))
    assert kinds(events)[0] == "error"
    assert events[0].error.code == "invalid_argument"
    assert kinds(events)[-1] == "turn_completed"


async def test_converse_cancel_stops_the_running_turn(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(ScriptedReply.text(" ".join(["كلمة"] * 40), event_delay_s=0.25))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        hold = asyncio.Event()
        stream = svc.client.converse(_messages(
            _msg("اشرح لي سياسة الاسترجاع"), pb.ClientMessage(cancel=pb.Cancel()),
            gap=1.0, hold=hold))
        seen = []
        async for event in stream:
            seen.append(event)
            if event.HasField("error"):
                hold.set()
                break
        thread_id = seen[0].thread_id
        thread = await svc.client.get_thread(thread_id, user_id="u1")
    assert seen[-1].error.code == "cancelled"
    assert "turn_completed" not in kinds(seen)
    assert list(thread.messages) == []


async def test_health_and_reflection(run_service) -> None:
    # Reflection is off by default (test_security); an operator turns it on.
    async with run_service(reflection=True) as svc:
        assert await svc.client.health() == "SERVING"
        assert await svc.client.health("diwaniya.v1.Conversations") == "SERVING"
        async with grpc.aio.insecure_channel(svc.target) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)

            async def ask() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
                yield reflection_pb2.ServerReflectionRequest(list_services="")

            names = []
            async for reply in stub.ServerReflectionInfo(ask()):
                names = [s.name for s in reply.list_services_response.service]
    assert "diwaniya.v1.Conversations" in names and "grpc.health.v1.Health" in names


async def test_drain_finishes_open_streams_and_refuses_new_ones(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    # The reply is held in flight (not timed to outlast the delay) until the
    # server has stopped taking new RPCs: the turn is then an open stream the
    # drain must finish. The grace is generous: drain() returns once it ends.
    held = threading.Event()
    openai_server.push(replace(ScriptedReply.text("جاري التحقق من طلبك الآن", event_delay_s=0.3),
                               hold=held))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        call = svc.client.send("وين طلبي؟", user_id="u1")
        first = await call.read()
        # A lock connection late on a starved CPU is said first (queued), truthfully.
        while first.HasField("queued"):
            first = await call.read()
        assert first.HasField("turn_started")
        # Both health checks must land inside the delay, while new RPCs are still
        # taken: 0.5 s was not enough on a starved CPU (the liveness check came
        # after the stop and was CANCELLED).
        drain = asyncio.create_task(svc.server.drain(30.0, delay=2.0))
        try:
            await asyncio.sleep(0.1)
            status = await svc.client.health("diwaniya.v1.Conversations")
            live = await svc.client.health()
            # The delay is over once a new RPC is refused (stop() has begun); on
            # the way there a check may also be cut off (CANCELLED) by the stop.
            refused: grpc.StatusCode | None = None
            for _ in range(200):
                try:
                    await svc.client.health()
                except grpc.aio.AioRpcError as exc:
                    if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
                        refused = exc.code()
                        break
                await asyncio.sleep(0.05)
        finally:
            held.set()
        rest = []
        while (event := await call.read()) is not grpc.aio.EOF:
            rest.append(event)
        await drain
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await collect(svc.client.send("هلا", user_id="u1"))
    assert status == "NOT_SERVING"
    assert live == "SERVING"  # draining is readiness, not liveness
    assert refused is not None  # new RPCs were refused while the turn was still held
    assert rest[-1].HasField("turn_completed")
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


# Generous: the machine is shared and a loaded `serve` can take seconds to shut
# down; the turn takes about 2 s of it (five words, 0.3 s apart).
GRACE_S = 60


def test_sigterm_drains_the_real_process(tmp_path: Path, openai_server: ScriptedOpenAIServer
                                         ) -> None:
    openai_server.push(ScriptedReply.text("لحظة من فضلك أتحقق من الطلب", event_delay_s=0.3))
    env = {**os.environ, "DIWANIYA_DATA_DIR": str(tmp_path), "DIWANIYA_LISTEN": "127.0.0.1:0",
           "DIWANIYA_MODEL_BASE_URL": openai_server.base_url,
           "DIWANIYA_DRAIN_GRACE_S": str(GRACE_S), "DIWANIYA_DRAIN_DELAY_S": "0.2",
           # The serving process itself (a supervisor's drain: test_workers.py);
           # serve's default, a worker per CPU, would start three processes.
           "DIWANIYA_WORKERS": "1"}
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "service", "serve"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "listening on" in line, proc.stderr.read() if proc.stderr else line
        target = line.strip().rsplit(" ", 1)[-1]

        async def scenario() -> tuple[list[pb.TurnEvent], float]:
            async with DiwaniyaClient(target) as client:
                call = client.send("وين طلبي؟", user_id="u1")
                events = [await call.read()]
                proc.send_signal(signal.SIGTERM)
                started = time.monotonic()
                while (event := await call.read()) is not grpc.aio.EOF:
                    events.append(event)
                return events, started

        events, started = asyncio.run(scenario())
        code = proc.wait(timeout=GRACE_S + 30)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    assert events[-1].HasField("turn_completed")
    assert code == 0
    assert elapsed < GRACE_S  # the turn finished and the process exited within its grace



async def test_drain_ends_an_idle_converse_stream_promptly(run_service) -> None:
    async with run_service() as svc:
        hold = asyncio.Event()
        stream = svc.client.converse(_messages(_msg("هلا"), hold=hold))
        events = []
        async for event in stream:
            events.append(event)
            if event.HasField("turn_completed"):
                break
        started = time.monotonic()
        drain = asyncio.create_task(svc.server.drain(10.0, delay=0))
        rest = [e async for e in stream]  # the server closes the idle stream
        elapsed = time.monotonic() - started
        await drain
        hold.set()
    assert rest == []
    assert elapsed < 5.0  # well inside the 10 s grace
