"""diwaniya.client against a real server: a refused turn is retried after the server's RetryInfo.

The thread accepts one waiting turn (``enqueue_max_waiters=1``). With one turn
running and one waiting, a third is refused RESOURCE_EXHAUSTED with RetryInfo
(1 s). The client waits that long (not its own 0.2 s backoff), sends the same
request_id again, and the turn completes once the queue has room.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from diwaniya.client import AsyncClient, RetryPolicy
from diwaniya.client._aio import AsyncTurnStream
from diwaniya.errors import ResourceExhausted, Unavailable
from diwaniya.v1 import conversations_pb2 as pb
from majlis.culture import FixedClock
from service import Settings, build_app
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import DEFAULT_TIME

LONG = " ".join(["تمام،"] + ["خلني أراجع لك تفاصيل الطلب"] * 8)


async def test_a_refused_turn_waits_for_retry_info_then_completes(
    tmp_path: Path, openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.push(ScriptedReply.text(LONG, event_delay_s=0.15),
                       ScriptedReply.text("هذا الرد الثاني"),
                       ScriptedReply.text("وهذا الثالث"))
    settings = Settings(data_dir=tmp_path / "data", listen="127.0.0.1:0", drain_grace_s=1.0,
                        model_base_url=openai_server.base_url, concurrency_policy="enqueue",
                        enqueue_max_waiters=1, enqueue_wait_s=60)
    app = await build_app(settings, clock=FixedClock(DEFAULT_TIME))
    server = app.server()
    await server.start()
    target = f"127.0.0.1:{server.port}"
    patient = RetryPolicy(max_attempts=30, initial_backoff_s=0.2, max_backoff_s=2.0)
    try:
        async with AsyncClient(target, timeout_s=120) as client, \
                AsyncClient(target, timeout_s=120, retry=patient) as retrying, \
                AsyncClient(target, timeout_s=120, retry=RetryPolicy(max_attempts=1)) as once:
            first = client.send("السلام عليكم", user_id="u-retry")
            first_events = aiter(first)
            await anext(first_events)                       # running
            second = client.send("وش صار على طلبي؟", user_id="u-retry",
                                 thread_id=first.thread_id)
            second_events = aiter(second)
            assert (await anext(second_events)).HasField("queued")  # waiting: the queue is full

            refused = once.send("شكراً", user_id="u-retry", thread_id=first.thread_id)
            try:
                await refused.collect()
                raise AssertionError("a third turn was accepted with the queue full")
            except ResourceExhausted as exc:
                refusal = exc
            third = retrying.send("شكراً", user_id="u-retry", thread_id=first.thread_id)
            third_events = await third.collect()               # retried until there is room
            rest_first = [e async for e in first_events]
            rest_second = [e async for e in second_events]
    finally:
        await server.drain(0, delay=0)
        await app.close()
    assert refusal.rpc_status is not None and refusal.rpc_status.code == "RESOURCE_EXHAUSTED"
    assert refusal.retry_after_s == 1.0 and refused.attempts == 1
    assert third.attempts >= 2
    assert third.retry_delays[0] == 1.0  # the server's RetryInfo, not the 0.2 s backoff
    assert third_events[-1].HasField("turn_completed")
    assert rest_first[-1].HasField("turn_completed") and rest_second[-1].HasField("turn_completed")


class _Call:
    """A fake grpc.aio stream call: its events, then optionally a status."""

    def __init__(self, events: list[pb.TurnEvent], code: grpc.StatusCode | None = None) -> None:
        self._events = events
        self._code = code

    def __aiter__(self) -> _Call:
        return self

    async def __anext__(self) -> pb.TurnEvent:
        if self._events:
            return self._events.pop(0)
        if self._code is None:
            raise StopAsyncIteration
        raise grpc.aio.AioRpcError(self._code, grpc.aio.Metadata(), grpc.aio.Metadata(),
                                   details="the database is not answering")

    def cancel(self) -> bool:
        return True


def _queued() -> pb.TurnEvent:
    return pb.TurnEvent(thread_id="t1", seq=0, queued=pb.Queued(reason="starting", position=3))


def _turn() -> list[pb.TurnEvent]:
    return [pb.TurnEvent(thread_id="t1", turn_id="x", seq=1, turn_started=pb.TurnStarted()),
            pb.TurnEvent(thread_id="t1", turn_id="x", seq=2,
                         turn_completed=pb.TurnCompleted(text="وعليكم السلام"))]


async def test_a_queued_notice_does_not_make_a_turn_unretryable() -> None:
    # «وين طلبي؟» on t1: queued, then UNAVAILABLE before the turn started — safe to send again.
    calls = iter([_Call([_queued()], grpc.StatusCode.UNAVAILABLE), _Call([_queued(), *_turn()])])
    stream = AsyncTurnStream(lambda: next(calls), request_id="r1", thread_id="t1",
                             retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.0))
    kinds = [e.WhichOneof("event") for e in await stream.collect()]
    assert stream.attempts == 2
    assert kinds == ["queued", "queued", "turn_started", "turn_completed"]


async def test_a_turn_that_started_is_not_sent_again() -> None:
    calls = iter([_Call([_queued(), _turn()[0]], grpc.StatusCode.UNAVAILABLE)])
    stream = AsyncTurnStream(lambda: next(calls), request_id="r1", thread_id="t1",
                             retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.0))
    with pytest.raises(Unavailable):
        await stream.collect()
    assert stream.attempts == 1
