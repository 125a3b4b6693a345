"""Every call of the light clients, async and sync, against a real server (SQLite, offline)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from diwaniya import errors
from diwaniya.client import AsyncClient, Client
from diwaniya.v1 import conversations_pb2 as pb
from majlis.culture import FixedClock
from service import Settings, build_app
from tests.service.conftest import DEFAULT_TIME


@pytest.fixture
async def target(tmp_path: Path) -> AsyncIterator[str]:
    app = await build_app(Settings(data_dir=tmp_path / "data", listen="127.0.0.1:0",
                                   drain_grace_s=1.0), clock=FixedClock(DEFAULT_TIME))
    server = app.server()
    await server.start()
    try:
        yield f"127.0.0.1:{server.port}"
    finally:
        await server.drain(0, delay=0)
        await app.close()


async def test_async_converse_list_release_delete(target: str) -> None:
    user = f"calls-{uuid.uuid4().hex[:8]}"
    async with AsyncClient(target, timeout_s=60) as client:
        first = await client.send("السلام عليكم", user_id=user).collect()
        thread_id = first[-1].thread_id

        async def messages() -> AsyncIterator[pb.ClientMessage]:
            for i, text in enumerate(("كيف الحال؟", "مع السلامة")):
                yield pb.ClientMessage(message=client.message(
                    text, user_id=user, thread_id=thread_id, request_id=f"conv-{user}-{i}"))

        events = [e async for e in client.converse(messages())]
        page = await client.list_threads(user_id=user)
        released = await client.release_handoff(thread_id, user_id=user)
        gone = await client.delete_thread(thread_id, user_id=user)
        with pytest.raises(errors.NotFound):
            await client.get_thread(thread_id, user_id=user)
    completed = [e for e in events if e.HasField("turn_completed")]
    assert len(completed) == 2 and {e.thread_id for e in events} == {thread_id}
    assert [t.thread_id for t in page.threads] == [thread_id]
    assert released.thread_id == thread_id and not released.handed_off
    assert gone.deleted


async def test_sync_client_from_a_thread(target: str) -> None:
    """The blocking client, run off the event loop that serves."""
    user = f"sync-{uuid.uuid4().hex[:8]}"

    def use() -> tuple[list[pb.TurnEvent], pb.Thread, list[pb.TurnEvent], str]:
        with Client(target, timeout_s=60) as client:
            turn = client.send("مرحبا، عندي سؤال عن الشحن", user_id=user)
            events = turn.collect()
            thread = client.get_thread(turn.thread_id, user_id=user)
            more = list(client.converse([pb.ClientMessage(message=client.message(
                "شكراً", user_id=user, thread_id=turn.thread_id))]))
            try:
                client.get_thread(turn.thread_id, user_id="someone-else")
                other = "visible"
            except errors.NotFound as exc:
                other = exc.rpc_status.code if exc.rpc_status else "?"
            return events, thread, more, other

    events, thread, more, other = await asyncio.to_thread(use)
    assert events[-1].HasField("turn_completed")
    assert thread.messages[0].text == "مرحبا، عندي سؤال عن الشحن"
    assert more[-1].HasField("turn_completed") and len(thread.messages) == 2
    assert other == "NOT_FOUND"


async def test_cancel_ends_the_turn_typed(target: str) -> None:
    async with AsyncClient(target, timeout_s=60) as client:
        turn = client.send("السلام عليكم", user_id=f"cancel-{uuid.uuid4().hex[:8]}")
        events = aiter(turn)
        first = await anext(events)
        turn.cancel()
        with pytest.raises(errors.Cancelled):
            while True:
                await anext(events)
    assert first.seq == 1 and turn.attempts == 1
