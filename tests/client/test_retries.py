"""diwaniya.client against a real server: a refused turn is retried after the server's RetryInfo.

The thread accepts one waiting turn (``enqueue_max_waiters=1``). With one turn
running and one waiting, a third is refused RESOURCE_EXHAUSTED with RetryInfo
(1 s). The client waits that long (not its own 0.2 s backoff), sends the same
request_id again, and the turn completes once the queue has room.
"""

from __future__ import annotations

from pathlib import Path

from diwaniya.client import AsyncClient, RetryPolicy
from diwaniya.errors import ResourceExhausted
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
