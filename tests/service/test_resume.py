"""ResumeTurn over real gRPC on both stores (issue #14 item 3).

A resumable turn keeps running when its client's connection drops; the
events are logged in the database (majlis.turn_log), so a NEW channel — to a
second app on the same database — gets exactly the events after its last seq.
"""

from __future__ import annotations

import contextlib
import uuid

import grpc
import pytest

from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc
from tests.fakes import ScriptedOpenAIServer, ScriptedReply

WORDS = ["كلمة"] * 12


def _uid() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


async def _resume(target: str, request: pb.ResumeTurnRequest) -> list[pb.TurnEvent]:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.ConversationsStub(channel)
        return [event async for event in stub.ResumeTurn(request, timeout=60)]


async def test_resume_after_a_forced_disconnect_on_another_app(
        run_service, backend: str, openai_server: ScriptedOpenAIServer) -> None:
    openai_server.push(ScriptedReply.text(" ".join(WORDS), event_delay_s=0.2))
    user = _uid()
    async with contextlib.AsyncExitStack() as stack:
        first = await stack.enter_async_context(
            run_service(model_base_url=openai_server.base_url))
        # PostgreSQL: a second app (replica) on the same database answers the
        # resume. SQLite is the one-process embedded store: a new channel to it.
        second = (await stack.enter_async_context(
            run_service(model_base_url=openai_server.base_url))
            if backend == "postgres" else first)
        channel = grpc.aio.insecure_channel(first.target)
        stub = pb_grpc.ConversationsStub(channel)
        call = stub.SendMessage(pb.SendMessageRequest(
            user_id=user, text="اشرح لي سياسة الاسترجاع", resumable=True), timeout=60)
        before: list[pb.TurnEvent] = []
        async for event in call:
            before.append(event)
            if sum(e.HasField("text_delta") for e in before) == 3:
                break
        # The connection is lost mid-turn: the channel closes under the stream.
        await channel.close()
        last = before[-1]
        after = await _resume(second.target, pb.ResumeTurnRequest(
            thread_id=last.thread_id, turn_id=last.turn_id, after_seq=last.seq, user_id=user))
        # A finished turn replays from any seq, on either app.
        replay = await _resume(first.target, pb.ResumeTurnRequest(
            thread_id=last.thread_id, turn_id=last.turn_id, after_seq=0, user_id=user))
        thread = await second.client.get_thread(last.thread_id, user_id=user)
    seqs = [e.seq for e in before + after]
    # No gap, no duplicate: 1, 2, … across the break, ending in turn_completed.
    assert seqs == list(range(1, len(seqs) + 1))
    assert after[-1].HasField("turn_completed") and after[0].seq == last.seq + 1
    assert {e.turn_id for e in after} == {last.turn_id}
    text = "".join(e.text_delta.text for e in before + after if e.HasField("text_delta"))
    assert text.split() == WORDS
    assert [e.SerializeToString() for e in replay] == [
        e.SerializeToString() for e in before + after]
    # The turn went on without its client and was saved.
    assert [m.role for m in thread.messages] == ["user", "assistant"]


async def test_resume_of_a_finished_turn_replays_from_the_seq(run_service) -> None:
    user = _uid()
    async with run_service() as svc:
        events = [e async for e in svc.client.send("السلام عليكم", user_id=user)]
        done = events[-1]
        assert done.HasField("turn_completed")
        tail = await _resume(svc.target, pb.ResumeTurnRequest(
            thread_id=done.thread_id, turn_id=done.turn_id, after_seq=2, user_id=user))
        nothing = await _resume(svc.target, pb.ResumeTurnRequest(
            thread_id=done.thread_id, turn_id=done.turn_id, after_seq=done.seq, user_id=user))
    assert [e.SerializeToString() for e in tail] == [e.SerializeToString() for e in events[2:]]
    # Resuming at or past the end gets nothing but still ends (no hang).
    assert nothing == []


@pytest.mark.parametrize("who", ["other-user", "unknown-turn", "unknown-thread"])
async def test_resume_not_found(run_service, who: str) -> None:
    user = _uid()
    async with run_service() as svc:
        events = [e async for e in svc.client.send("هلا", user_id=user)]
        done = events[-1]
        request = pb.ResumeTurnRequest(thread_id=done.thread_id, turn_id=done.turn_id,
                                       after_seq=0, user_id=user)
        if who == "other-user":
            request.user_id = _uid()
        elif who == "unknown-turn":
            request.turn_id = uuid.uuid4().hex
        else:
            request.thread_id = uuid.uuid4().hex
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _resume(svc.target, request)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert "not" in (caught.value.details() or "")


async def test_light_client_resumes_by_itself_after_a_dropped_connection(
        run_service, openai_server: ScriptedOpenAIServer) -> None:
    from diwaniya.client import AsyncClient
    from tests.chaos._pg import DroppingProxy

    openai_server.push(ScriptedReply.text(" ".join(WORDS), event_delay_s=0.2))
    user = _uid()
    async with run_service(model_base_url=openai_server.base_url) as svc:
        proxy = await DroppingProxy(svc.server.port).start()
        try:
            async with AsyncClient(f"127.0.0.1:{proxy.port}", timeout_s=60) as client:
                stream = client.send("اشرح لي سياسة الاسترجاع", user_id=user, resumable=True)
                events = []
                async for event in stream:
                    events.append(event)
                    if sum(e.HasField("text_delta") for e in events) == 3 and not stream.resumes:
                        proxy.drop()  # every connection cut mid-turn
                        proxy.restore()
        finally:
            await proxy.close()
    assert stream.resumes >= 1
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].HasField("turn_completed")
    text = "".join(e.text_delta.text for e in events if e.HasField("text_delta"))
    assert text.split() == WORDS
