"""A turn that arrives behind turns still starting says ``queued`` (starting) first.

One turn is held before its first event (inside its claim, where a burst of
new streams keeps turns waiting for the process and the database); a turn
sent meanwhile must say ``queued`` with reason ``starting`` before anything
else — before its own claim and lock round trips — and then run as usual,
or end with the status it would have had. Real gRPC server, both stores; no
timing: the held turn is released by the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from diwaniya.v1 import conversations_pb2 as pb
from majlis.turns import TurnOrder, TurnRunner
from tests.service.conftest import collect, kinds

HELD = "السلام عليكم، عندي مشكلة في الطلب"


class _Hold:
    """Holds user u1's turn inside its claim until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        claim = TurnRunner._claim

        async def held(runner: TurnRunner, order: TurnOrder) -> Any:
            if order.input.user_id == "u1":
                self.entered.set()
                await self.release.wait()
            return await claim(runner, order)

        monkeypatch.setattr(TurnRunner, "_claim", held)


async def test_a_turn_behind_a_starting_one_says_queued_first(
    run_service: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold = _Hold(monkeypatch)
    async with run_service() as svc:
        opened = await collect(svc.client.send("مرحبا", user_id="u2"))
        held = asyncio.ensure_future(collect(svc.client.send(HELD, user_id="u1")))
        await hold.entered.wait()
        # A new conversation (its thread id made by its own claim) and a continuing one.
        fresh = await collect(svc.client.send("شلونك؟ وين وصل طلبي؟", user_id="u3"))
        going = await collect(svc.client.send("طيب، متى يوصل؟", user_id="u2",
                                              thread_id=opened[0].thread_id))
        hold.release.set()
        first = await held
        # Nobody is ahead any more: no queued.
        alone = await collect(svc.client.send("شكراً", user_id="u2",
                                              thread_id=opened[0].thread_id))
    for events in (fresh, going):
        head = events[0]
        assert head.HasField("queued"), kinds(events)
        assert (head.queued.reason, head.queued.position) == ("starting", 1)
        assert (head.seq, head.turn_id) == (0, "")
        assert head.thread_id == events[1].thread_id != ""
        assert kinds(events)[1] == "turn_started" and events[1].seq == 1
        assert kinds(events)[-1] == "turn_completed"
    assert going[0].thread_id == opened[0].thread_id
    # The held turn arrived first: it had nobody ahead and says nothing of the kind.
    assert kinds(first)[0] == "turn_started" and kinds(first)[-1] == "turn_completed"
    assert "queued" not in kinds(alone)


async def test_a_turn_refused_after_its_queued_still_ends_with_its_status(
    run_service: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold = _Hold(monkeypatch)
    async with run_service() as svc:
        opened = await collect(svc.client.send("مرحبا", user_id="u2"))
        held = asyncio.ensure_future(collect(svc.client.send(HELD, user_id="u1")))
        await hold.entered.wait()
        # Another user's thread: NOT_FOUND, as without the queued event before it.
        call = svc.client.send("وين طلبي؟", user_id="intruder", thread_id=opened[0].thread_id)
        seen: list[pb.TurnEvent] = []
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for event in call:
                seen.append(event)

        async def messages() -> AsyncIterator[pb.ClientMessage]:
            for text in ("وين طلبي؟", "شكراً"):
                yield pb.ClientMessage(message=pb.SendMessageRequest(
                    text=text, user_id="intruder", thread_id=opened[0].thread_id))
            yield pb.ClientMessage(message=pb.SendMessageRequest(text="هلا", user_id="u9"))

        conversed = await collect(svc.client.converse(messages()))
        hold.release.set()
        await held
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    assert kinds(seen) == ["queued"] and seen[0].queued.reason == "starting"
    # Converse: each refused turn is its queued then its error; the stream goes on.
    assert kinds(conversed)[:4] == ["queued", "error", "queued", "error"]
    assert {e.error.reason for e in conversed if e.HasField("error")} == {"THREAD_NOT_FOUND"}
    assert kinds(conversed)[-1] == "turn_completed"


async def test_the_signal_can_be_turned_off(
    run_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold = _Hold(monkeypatch)
    async with run_service(queued_while_starting=False) as svc:
        held = asyncio.ensure_future(collect(svc.client.send(HELD, user_id="u1")))
        await hold.entered.wait()
        events = await collect(svc.client.send("هلا", user_id="u3"))
        hold.release.set()
        await held
    assert kinds(events)[0] == "turn_started"
