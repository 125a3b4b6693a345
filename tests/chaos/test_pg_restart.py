"""PostgreSQL restarted mid-turn while a second turn is attempted on the same thread.

Before fencing, the restart dropped the first turn's advisory lock, the second
turn ran and committed, then the first committed too: two checkpoints with one
parent, and the first client heard "completed" then "not saved". Now exactly
one history survives and each client hears what happened to its own turn.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc
import psycopg

from service import DiwaniyaClient
from tests.chaos.conftest import PrivatePostgres, ServeProcess, serve_env
from tests.fakes import ScriptedOpenAIServer, ScriptedReply

# What a client may hear about a turn it did not see complete: the thread was
# taken (ABORTED) or the database was away (UNAVAILABLE). Never INTERNAL/UNKNOWN.
TRUTHFUL_FAILURES = {grpc.StatusCode.ABORTED, grpc.StatusCode.UNAVAILABLE}
RETRY_FOR_S = 20.0


async def _turn(client: DiwaniyaClient, **send: Any) -> tuple[list[Any], grpc.StatusCode | None]:
    events: list[Any] = []
    try:
        async for event in client.send(**send):
            events.append(event)
    except grpc.aio.AioRpcError as exc:
        return events, exc.code()
    return events, None


def _forks(dsn: str, thread_id: str) -> list[tuple[str | None, int]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT parent_checkpoint_id, count(*) FROM checkpoints WHERE thread_id = %s"
            " AND checkpoint_ns = '' GROUP BY 1 HAVING count(*) > 1", (thread_id,)).fetchall()


async def test_pg_restart_mid_turn_with_a_second_turn_no_fork_truthful_statuses(
    private_pg: PrivatePostgres, tmp_path: Path, openai_server: ScriptedOpenAIServer,
    serve_processes: list[ServeProcess],
) -> None:
    proc = ServeProcess(serve_env(tmp_path, dsn=private_pg.dsn,
                                  model_base_url=openai_server.base_url),
                        tmp_path / "serve.log")
    serve_processes.append(proc)
    openai_server.push(ScriptedReply.text("هلا والله"),
                       ScriptedReply.text(" ".join(["أبشر"] * 40), event_delay_s=0.15),
                       *[ScriptedReply.text("حاضرين، تفضل") for _ in range(6)])
    async with DiwaniyaClient(proc.start(), timeout_s=90) as client:
        opening, status = await _turn(client, text="السلام عليكم", user_id="u1")
        assert status is None
        thread_id = opening[-1].thread_id
        restarted = asyncio.Event()
        slow_events: list[Any] = []

        async def slow() -> grpc.StatusCode | None:
            try:
                async for event in client.send("وين طلبي؟", user_id="u1", thread_id=thread_id,
                                               request_id="slow"):
                    slow_events.append(event)
                    if event.HasField("text_delta") and not restarted.is_set():
                        await asyncio.to_thread(private_pg.restart)
                        restarted.set()
            except grpc.aio.AioRpcError as exc:
                return exc.code()
            return None

        async def second() -> tuple[list[Any], grpc.StatusCode | None]:
            await restarted.wait()
            # A client retrying on UNAVAILABLE while the service reconnects.
            deadline = time.monotonic() + RETRY_FOR_S
            while True:
                events, code = await _turn(client, text="ابي اكلم موظف", user_id="u1",
                                           thread_id=thread_id, request_id="second")
                if code != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    return events, code
                await asyncio.sleep(0.3)

        slow_status, (second_events, second_status) = await asyncio.gather(slow(), second())
        thread = await client.get_thread(thread_id, user_id="u1")
        listed = await client.list_threads(user_id="u1")
    outcomes = {"وين طلبي؟": (slow_events, slow_status),
                "ابي اكلم موظف": (second_events, second_status)}
    users = [m.text for m in thread.messages if m.role == "user"]
    for text, (events, code) in outcomes.items():
        completed = any(e.HasField("turn_completed") for e in events)
        if completed:
            assert code is None, (text, code)
            assert users.count(text) == 1, (text, users)  # said completed → kept, once
        else:
            assert code in TRUTHFUL_FAILURES, (text, code)
            assert text not in users, (text, users)  # said not saved → not there
    assert any(code is None for _, code in outcomes.values()), outcomes
    assert users[0] == "السلام عليكم"
    assert listed.threads[0].turn_count == len(users)
    assert _forks(private_pg.dsn, thread_id) == []
