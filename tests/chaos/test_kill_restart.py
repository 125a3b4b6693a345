"""SIGKILL a `diwaniya serve` mid-turn, start it again: nothing lost, nothing doubled.

A client sends a new conversation's first message with a request_id; the
process dies while the (scripted, slow) model is streaming. After a restart,
the client retries the same request_id with the same empty thread_id, as a
client that never saw turn_completed must.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from service import DiwaniyaClient
from tests.chaos.conftest import ServeProcess, serve_env
from tests.fakes import ScriptedOpenAIServer, ScriptedReply

SLOW = ScriptedReply.text(" ".join(["يا هلا"] * 40), event_delay_s=0.2)
# PostgreSQL drops the dead session's lock at once; SQLite's startup clears the
# leases of a holder process that is provably gone (majlis.threads_sqlite), so
# on both stores the restarted service takes the thread's next turn at once.
NEW_TURN_WITHIN_S = 2.0


async def _events(call: Any) -> list[Any]:
    return [e async for e in call]


async def _until_not_busy(client: DiwaniyaClient, bound_s: float, **send: Any
                          ) -> tuple[list[Any], float]:
    """Send until the thread is free (ABORTED busy), bounded; any other failure raises.

    Returns the events and when the first one (turn_started: the thread took
    the turn) arrived.
    """
    deadline = time.monotonic() + bound_s
    while True:
        events: list[Any] = []
        started = 0.0
        try:
            async for event in client.send(**send):
                started = started or time.monotonic()
                events.append(event)
            return events, started
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.ABORTED or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.25)


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
async def test_sigkill_mid_turn_then_restart_retry_runs_once(
    store: str, request: pytest.FixtureRequest, tmp_path: Path,
    openai_server: ScriptedOpenAIServer, serve_processes: list[ServeProcess],
) -> None:
    dsn = request.getfixturevalue("pg_dsn") if store == "postgres" else None
    env = serve_env(tmp_path, dsn=dsn, model_base_url=openai_server.base_url)
    user = f"kill-{store}-{time.time_ns()}"
    first = ServeProcess(env, tmp_path / "serve-1.log")
    serve_processes.append(first)
    openai_server.push(SLOW)
    async with DiwaniyaClient(first.start(), timeout_s=60) as client:
        seen: list[Any] = []
        with pytest.raises(grpc.aio.AioRpcError) as died:
            async for event in client.send("السلام عليكم، عندي طلب متأخر", user_id=user,
                                           request_id="first-msg"):
                seen.append(event)
                if event.HasField("text_delta"):
                    first.kill()
    assert died.value.code() == grpc.StatusCode.UNAVAILABLE
    thread_id = seen[0].thread_id
    assert seen[0].HasField("turn_started") and thread_id

    second = ServeProcess(env, tmp_path / "serve-2.log")
    serve_processes.append(second)
    openai_server.push(ScriptedReply.text("هلا والله، عطني رقم الطلب"),
                       ScriptedReply.text("تم، طلبك في الطريق"))
    target = second.start()
    restarted = time.monotonic()
    async with DiwaniyaClient(target, timeout_s=60) as client:
        retry, took = await _until_not_busy(
            client, NEW_TURN_WITHIN_S, text="السلام عليكم، عندي طلب متأخر", user_id=user,
            request_id="first-msg")
        retried_after = took - restarted
        again = await _events(client.send("السلام عليكم، عندي طلب متأخر", user_id=user,
                                          request_id="first-msg"))
        nxt = await _events(client.send("رقم الطلب ٤٤١١", user_id=user, thread_id=thread_id,
                                        request_id="second-msg"))
        thread = await client.get_thread(thread_id, user_id=user)
        listed = await client.list_threads(user_id=user)
    # The retry of the first message went to the same thread, ran once and was kept.
    assert retry[-1].thread_id == thread_id and retry[-1].HasField("turn_completed")
    assert not retry[-1].turn_completed.replayed
    assert again[-1].turn_completed.replayed and again[-1].turn_id == retry[-1].turn_id
    assert nxt[-1].HasField("turn_completed")
    assert retried_after <= NEW_TURN_WITHIN_S
    assert [(m.role, m.text) for m in thread.messages] == [
        ("user", "السلام عليكم، عندي طلب متأخر"), ("assistant", "هلا والله، عطني رقم الطلب"),
        ("user", "رقم الطلب ٤٤١١"), ("assistant", "تم، طلبك في الطريق")]
    assert [t.thread_id for t in listed.threads] == [thread_id]
    assert listed.threads[0].turn_count == 2
    assert len(openai_server.requests) == 3  # killed turn, its retry, the next turn
