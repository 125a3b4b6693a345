"""service.priority: the start of an RPC runs ahead of other turns' mid-turn work.

Order, not time: every assertion counts callbacks, never milliseconds.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import socket
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from diwaniya.v1 import conversations_pb2 as pb
from majlis.culture import FixedClock
from service import DiwaniyaClient, build_app, priority
from tests.service.conftest import DEFAULT_TIME

BUSY_TASKS = 20
BUSY_STEPS = 40
FRONT_STEPS = 5


async def _race(log: list[str]) -> None:
    """BUSY_TASKS back-lane tasks spinning, then a front-lane task of FRONT_STEPS steps."""

    async def busy() -> None:
        for _ in range(BUSY_STEPS):
            log.append("b")
            await asyncio.sleep(0)

    async def first() -> None:
        for _ in range(FRONT_STEPS):
            log.append("f")
            await asyncio.sleep(0)

    workers = [asyncio.create_task(busy()) for _ in range(BUSY_TASKS)]
    await asyncio.sleep(0)  # every busy task is in the ready queue now
    token = priority.front()
    waited = asyncio.create_task(first())  # inherits the front lane
    priority.FIRST_RESPONSE.reset(token)
    await asyncio.gather(waited, *workers)


def _back_steps_during_front(loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> int:
    log: list[str] = []
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(_race(log))
    first, last = log.index("f"), len(log) - 1 - log[::-1].index("f")
    return log[first:last].count("b")


def test_a_front_task_passes_the_ready_queue_and_the_stock_loop_does_not() -> None:
    # Stock asyncio: each of the front task's steps waits behind every busy task.
    assert _back_steps_during_front(asyncio.SelectorEventLoop) >= (FRONT_STEPS - 1) * BUSY_TASKS
    # FrontLaneLoop: behind at most one pass's slice of back-lane callbacks per step.
    assert _back_steps_during_front(priority.FrontLaneLoop) <= (
        FRONT_STEPS - 1) * priority.BACK_SLICE


def test_the_back_lane_still_moves_under_a_flood_of_front_work() -> None:
    log: list[str] = []

    async def flood() -> None:
        async def back() -> None:
            for _ in range(3):
                log.append("b")
                await asyncio.sleep(0)

        async def front() -> None:
            for _ in range(200):
                log.append("f")
                await asyncio.sleep(0)

        slow = asyncio.create_task(back())
        token = priority.front()
        fronts = [asyncio.create_task(front()) for _ in range(4)]
        priority.FIRST_RESPONSE.reset(token)
        await asyncio.gather(slow, *fronts)

    with asyncio.Runner(loop_factory=priority.FrontLaneLoop) as runner:
        runner.run(flood())
    # Never starved: every back step ran with front work still pending.
    assert log.count("b") == 3
    assert len(log) - 1 - log[::-1].index("b") < len(log) - 1 - log[::-1].index("f")
    gaps = [i for i, x in enumerate(log) if x == "b"]
    assert all(b - a <= priority.FRONT_BURST + 1 for a, b in itertools.pairwise(gaps))


def test_io_and_thread_handoffs_are_front_lane_and_task_steps_follow_their_context() -> None:
    loop = priority.FrontLaneLoop()
    try:
        lanes: Any = loop._ready
        back = contextvars.copy_context()  # FIRST_RESPONSE unset: back lane
        front = contextvars.copy_context()
        front.run(priority.front)
        loop.call_soon(lambda: None, context=back)
        loop.call_soon(lambda: None, context=front)
        assert (len(lanes._front), len(lanes._back)) == (1, 1)
        # I/O readiness, registered from a back-lane context, still lands in front.
        r, w = socket.socketpair()
        try:
            back.run(loop.add_reader, r.fileno(), lambda: None)
            w.send(b"x")
            loop._process_events(loop._selector.select(1))  # type: ignore[attr-defined]
            assert (len(lanes._front), len(lanes._back)) == (2, 1)
            loop.remove_reader(r.fileno())
        finally:
            r.close()
            w.close()
        thread = threading.Thread(target=loop.call_soon_threadsafe, args=(lambda: None,))
        thread.start()
        thread.join()
        assert (len(lanes._front), len(lanes._back)) == (3, 1)
    finally:
        loop.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_turn_writes_its_first_event_from_the_front_lane_and_the_rest_from_the_back(
        settings_for: Callable[..., Any], backend: str) -> None:
    """A real gRPC server on a FrontLaneLoop (as ``diwaniya serve`` runs): the RPC's
    task is front-lane until turn_started has left, then ordinary — for SendMessage,
    and for every turn of a Converse stream."""
    seen: list[tuple[str, bool]] = []

    async def scenario() -> tuple[list[pb.TurnEvent], list[pb.TurnEvent]]:
        app = await build_app(settings_for(), clock=FixedClock(DEFAULT_TIME))
        run_turn = app.engine.run_turn

        async def spying(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            # Runs in the RPC's own task: the lane its next writes are scheduled in.
            async for envelope in run_turn(*args, **kwargs):
                seen.append((type(envelope.event).__name__, priority.FIRST_RESPONSE.get()))
                yield envelope

        app.engine.run_turn = spying  # type: ignore[method-assign]
        server = app.server()
        await server.start()
        client = DiwaniyaClient(f"127.0.0.1:{server.port}")
        try:
            sent = [e async for e in client.send("السلام عليكم", user_id="u1")]

            async def two() -> AsyncIterator[pb.ClientMessage]:
                for text in ("وين طلبي؟", "شكراً"):
                    yield pb.ClientMessage(message=pb.SendMessageRequest(
                        user_id="u1", thread_id=sent[0].thread_id, text=text))

            conversed: list[pb.TurnEvent] = []
            async for event in client.converse(two()):
                conversed.append(event)
                if sum(e.HasField("turn_completed") for e in conversed) == 2:
                    break
            return sent, conversed
        finally:
            await client.close()
            await server.drain(0, delay=0)
            await app.close()

    sent, conversed = priority.run(scenario())
    assert sent[0].HasField("turn_started") and sent[-1].HasField("turn_completed")
    assert [e.WhichOneof("event") for e in conversed].count("turn_completed") == 2
    turns: list[list[tuple[str, bool]]] = []
    for name, lane in seen:
        if name == "TurnStarted":
            turns.append([])
        turns[-1].append((name, lane))
    assert len(turns) == 3  # SendMessage, then the two Converse turns
    for turn in turns:
        # The engine is still iterated by the front-lane task when turn_started
        # comes out; the servicer settles once it has been written.
        assert turn[0] == ("TurnStarted", True)
        assert turn[-1][0] == "TurnCompleted"
        assert all(not lane for _, lane in turn[1:]), turn


def test_run_falls_back_to_the_stock_loop_when_told_or_unchecked(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def loop_kind() -> type:
        return type(asyncio.get_running_loop())

    assert priority.run(loop_kind()) is priority.FrontLaneLoop
    assert priority.run(loop_kind(), lanes=False) is not priority.FrontLaneLoop
    # An interpreter the lanes were not read against (its private ready queue may differ).
    monkeypatch.setattr(priority, "CHECKED_RELEASES", ())
    assert priority.run(loop_kind()) is not priority.FrontLaneLoop
    assert "stock loop" in caplog.text
