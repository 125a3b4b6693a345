"""A turn whose write is blocked by HTTP/2 flow control still ends with a clean status.

The client reads ``turn_started`` and then stops reading; its stream window is
small (1 kB lookahead, no BDP probe) and every ``text_delta`` is ~60 kB, so the
server's write of the second delta blocks. While it is blocked the turn's
deadline passes (a server-side turn timeout, or the client's deadline), or the
client cancels. Before the fix the deadline's cancellation was delivered to
grpc's own write instead of the turn, grpc took it for a peer cancel and sent
no status at all (the client waited for its own deadline), and the abandoned
generator chain (interceptors → servicer → engine → graph) was later closed
by the garbage collector, in another context: "Failed to detach context"
(GeneratorExit) from OpenTelemetry, "aclose(): asynchronous generator is
already running" from ``majlis.turn_guard._metered``, "Task exception was
never retrieved", and refused unfenced graph writes — the session-9 CI
rehearsal's log. Each test asserts the status, that nothing was
checkpointed, that the thread takes a new turn at once, and that none of
those lines were logged.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import grpc
import pytest

from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect

# One word of 30 000 letters is one ~60 kB text_delta; 30 of them, 0.1 s apart,
# keep the model streaming for 3 s, well past the 1 s deadlines below.
BIG_WORD = "ب" * 30_000
BIG_SLOW = ScriptedReply.text(" ".join([BIG_WORD] * 30), event_delay_s=0.1)
# A client whose stream window stays tiny: the server's writes block at once.
TIGHT = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)]
# What the rehearsal's log showed, and what a finaliser-closed chain logs; and
# grpc's ERROR for a write that lost the race with the cancel (service.closing
# makes it an INFO line: the expected end of a cancelled RPC).
BAD_LINES = ("already running", "never retrieved", "Failed to detach context",
             "unfenced", "GeneratorExit", "ExecuteBatchError")


async def _first_turn(svc: Any, user: str) -> str:
    first = await collect(svc.client.send("السلام عليكم", user_id=user))
    assert first[-1].HasField("turn_completed")
    return str(first[-1].thread_id)


async def _checkpoints(svc: Any, thread_id: str) -> int:
    saver = svc.app.persistence.checkpointer
    return len([c async for c in saver.alist({"configurable": {"thread_id": thread_id}})])


async def _next_turn(svc: Any, user: str, thread_id: str) -> list[Any]:
    """The thread's next turn, sent again while it is truthfully ABORTED "busy".

    The failed turn's lease is released by the server as the turn ends, which
    can land just after the client heard its status; 5 s of retries is "at
    once" next to the 30 s lease and the minutes a finaliser-held one lasted.
    """
    for _ in range(100):
        try:
            return await collect(svc.client.send("شكرا", user_id=user, thread_id=thread_id))
        except grpc.aio.AioRpcError as busy:
            assert busy.code() == grpc.StatusCode.ABORTED, busy
            await asyncio.sleep(0.05)
    pytest.fail("the thread stayed busy for 5 s after its failed turn ended")


async def _settled_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every WARNING+ line, after the collector and the loop's finalisers have run."""
    for _ in range(3):
        gc.collect()
        await asyncio.sleep(0.1)
    return [f"{r.name}: {r.getMessage()} {r.exc_text or ''}" for r in caplog.records
            if r.levelno >= logging.WARNING]


def _rpc_codes(caplog: pytest.LogCaptureFixture, method: str) -> list[str]:
    """The codes of the server's own log line for each ``method`` RPC (service.observe)."""
    return [r.diwaniya["rpc.code"] for r in caplog.records
            if r.name == "diwaniya.rpc" and r.getMessage() == "rpc"
            and r.diwaniya.get("rpc.method") == method]


def _watch(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    # CANCELLED RPC lines are INFO.
    caplog.set_level(logging.INFO, logger="diwaniya.rpc")


def _bad(lines: list[str]) -> list[str]:
    return [line for line in lines if any(bad in line for bad in BAD_LINES)
            or line.startswith(("asyncio:", "opentelemetry"))]


async def _blocked_turn(svc: Any, thread_id: str, user: str, *, deadline_s: float
                        ) -> tuple[grpc.aio.Channel, Any]:
    """A turn whose client read ``turn_started`` and then stopped reading."""
    channel = grpc.aio.insecure_channel(svc.target, options=TIGHT)
    stub = pb_grpc.ConversationsStub(channel)
    call = stub.SendMessage(pb.SendMessageRequest(text="وين طلبي؟", user_id=user,
                                                  thread_id=thread_id), timeout=deadline_s)
    first = await call.read()
    assert first.HasField("turn_started")
    return channel, call


async def _drain(call: Any) -> list[str]:
    kinds: list[str] = []
    with pytest.raises(grpc.aio.AioRpcError):
        while (event := await call.read()) is not grpc.aio.EOF:
            kinds.append(event.WhichOneof("event"))
    return kinds


async def test_a_turn_deadline_that_passes_during_a_blocked_write_is_deadline_exceeded(
    run_service, openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The server's turn timeout (1 s) passes while its write waits for the client."""
    _watch(caplog)
    openai_server.push(ScriptedReply.text("هلا والله"), BIG_SLOW, ScriptedReply.text("أبشر"))
    user = "blocked-deadline"
    async with run_service(model_base_url=openai_server.base_url,
                           default_turn_timeout_s=1.0) as svc:
        thread_id = await _first_turn(svc, user)
        # The client's own deadline is far away: only the server's can end the turn.
        channel, call = await _blocked_turn(svc, thread_id, user, deadline_s=20.0)
        # Not a timing assertion: the turn's 1 s deadline passes while nothing is read.
        await asyncio.sleep(2.5)
        after = await _checkpoints(svc, thread_id)
        # The turn ended at its deadline, so the thread is free while the
        # blocked client still has not read a thing.
        third = await _next_turn(svc, user, thread_id)
        await _drain(call)
        code, details = await call.code(), await call.details()
        await channel.close()
        logged = await _settled_logs(caplog)
    # The server's own status, not the client's deadline 20 s later.
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED, (code, details)
    assert sorted(_rpc_codes(caplog, "SendMessage")) == ["DEADLINE_EXCEEDED", "OK", "OK"]
    assert "did not finish within its 1s deadline" in details, details
    assert after == 1
    assert third[-1].HasField("turn_completed")
    assert _bad(logged) == [], logged


@pytest.mark.parametrize(("ending", "expected"), [
    ("client-deadline", grpc.StatusCode.DEADLINE_EXCEEDED),
    ("cancel", grpc.StatusCode.CANCELLED),
])
async def test_a_client_ending_a_blocked_write_frees_the_thread(
    ending: str, expected: grpc.StatusCode,
    run_service, openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The client's 1 s deadline passes, or the client cancels, while the server's
    write waits for it."""
    _watch(caplog)
    openai_server.push(ScriptedReply.text("هلا والله"), BIG_SLOW, ScriptedReply.text("أبشر"))
    user = f"blocked-{ending}"
    async with run_service(model_base_url=openai_server.base_url) as svc:
        thread_id = await _first_turn(svc, user)
        deadline_s = 1.0 if ending == "client-deadline" else 20.0
        channel, call = await _blocked_turn(svc, thread_id, user, deadline_s=deadline_s)
        if ending == "client-deadline":
            await asyncio.sleep(2.0)
            await _drain(call)
        else:
            # Long enough for the model to stream a few 60 kB deltas into the blocked write.
            await asyncio.sleep(1.0)
            call.cancel()
        code = await call.code()
        after = await _checkpoints(svc, thread_id)
        third = await _next_turn(svc, user, thread_id)
        await channel.close()
        logged = await _settled_logs(caplog)
    assert code == expected
    # The server's line for the RPC says so too (it said UNKNOWN, as in the rehearsal).
    assert sorted(_rpc_codes(caplog, "SendMessage")) == sorted([expected.name, "OK", "OK"])
    assert after == 1
    assert third[-1].HasField("turn_completed")
    assert _bad(logged) == [], logged


async def test_a_converse_stream_cancelled_during_a_blocked_write_frees_the_thread(
    run_service, openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The same cancel on a ``Converse`` stream, whose session runs a TaskGroup across yields."""
    _watch(caplog)
    openai_server.push(ScriptedReply.text("هلا والله"), BIG_SLOW, ScriptedReply.text("أبشر"))
    user = "blocked-converse"
    async with run_service(model_base_url=openai_server.base_url) as svc:
        thread_id = await _first_turn(svc, user)
        channel = grpc.aio.insecure_channel(svc.target, options=TIGHT)
        stub = pb_grpc.ConversationsStub(channel)
        hold_open = asyncio.Event()

        async def messages() -> Any:
            yield pb.ClientMessage(message=pb.SendMessageRequest(
                text="وين طلبي؟", user_id=user, thread_id=thread_id))
            await hold_open.wait()

        call = stub.Converse(messages(), timeout=20.0)
        first = await call.read()
        assert first.HasField("turn_started")
        await asyncio.sleep(1.0)
        call.cancel()
        code = await call.code()
        hold_open.set()
        after = await _checkpoints(svc, thread_id)
        third = await _next_turn(svc, user, thread_id)
        await channel.close()
        logged = await _settled_logs(caplog)
    assert code == grpc.StatusCode.CANCELLED
    assert _rpc_codes(caplog, "Converse") == ["CANCELLED"]
    assert after == 1
    assert third[-1].HasField("turn_completed")
    assert _bad(logged) == [], logged
